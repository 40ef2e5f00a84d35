//! Event identity (§4.1): a redelivery of the same fact is a no-op, the
//! same eventId with other data is refused. Content is compared by a
//! fingerprint of the parsed value, so a re-encoded redelivery matches.

use super::*;

/// `Some(Duplicate)` for an identical redelivery, an error for the same id
/// with different data, `None` for an id not seen yet. Records nothing: the
/// caller records the id once the event is accepted.
pub(super) fn dedup(seen: &Seen, event_id: &str, fp: u64) -> R<Option<Applied>> {
    match seen.get(event_id) {
        Some(prev) if prev == seen::fold(fp) => Ok(Some(Applied::Duplicate)),
        Some(_) => fail(
            "duplicate_event_conflict",
            "4.1",
            format!("eventId {event_id} was delivered before with different data"),
        ),
        None => Ok(None),
    }
}

/// A stable 64-bit FNV-1a fingerprint of a JSON object's content (keys in
/// `serde_json::Map` order, which is sorted), so a re-encoded redelivery of
/// the same fact matches while any changed field does not. Walks the parsed
/// value in place: no clone, no re-serialization.
pub(super) fn fingerprint(map: &serde_json::Map<String, serde_json::Value>) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.object(map);
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 = (self.0 ^ u64::from(*x)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn tagged(&mut self, tag: u8, b: &[u8]) {
        self.bytes(&[tag]);
        self.bytes(&(b.len() as u64).to_le_bytes());
        self.bytes(b);
    }

    fn object(&mut self, map: &serde_json::Map<String, serde_json::Value>) {
        self.tagged(b'{', &(map.len() as u64).to_le_bytes());
        for (k, v) in map {
            self.tagged(b'k', k.as_bytes());
            self.value(v);
        }
    }

    fn value(&mut self, v: &serde_json::Value) {
        use serde_json::Value as V;
        match v {
            V::Null => self.tagged(b'n', &[]),
            V::Bool(b) => self.tagged(b'b', &[u8::from(*b)]),
            V::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => self.tagged(b'u', &u.to_le_bytes()),
                (None, Some(i), _) => self.tagged(b'i', &i.to_le_bytes()),
                (None, None, f) => {
                    self.tagged(b'f', &f.unwrap_or(f64::NAN).to_bits().to_le_bytes())
                }
            },
            V::String(s) => self.tagged(b's', s.as_bytes()),
            V::Array(items) => {
                self.tagged(b'[', &(items.len() as u64).to_le_bytes());
                items.iter().for_each(|i| self.value(i));
            }
            V::Object(m) => self.object(m),
        }
    }
}
