//! The content fingerprint of a record (§4.1 dedup): a stable 64-bit FNV-1a
//! walk of the JSON object, members in key order (`serde_json::Map` order,
//! which is sorted), so a re-encoded redelivery of the same fact matches
//! while any changed field does not. The fast parse path feeds the same
//! walk from its typed fields, without building the object.

use serde_json::{Map, Value};

/// The fingerprint of a parsed JSON object. Walks it in place: no clone,
/// no re-serialization.
pub(crate) fn of_map(map: &Map<String, Value>) -> u64 {
    let mut h = Fnv::new();
    h.object(map);
    h.0
}

/// One top-level member's value, as the fast path holds it.
pub(crate) enum Item<'a> {
    Str(&'a str),
    Uint(u64),
    Strs(&'a [String]),
    Json(&'a Value),
}

/// The fingerprint of an object given as members; equal to [`of_map`] of
/// the object they form. Sorts `members` by key.
pub(crate) fn of_members(members: &mut [(&str, Item<'_>)]) -> u64 {
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut h = Fnv::new();
    h.tagged(b'{', &(members.len() as u64).to_le_bytes());
    for (k, v) in members.iter() {
        h.tagged(b'k', k.as_bytes());
        match v {
            Item::Str(s) => h.tagged(b's', s.as_bytes()),
            Item::Uint(u) => h.tagged(b'u', &u.to_le_bytes()),
            Item::Strs(items) => {
                h.tagged(b'[', &(items.len() as u64).to_le_bytes());
                items.iter().for_each(|s| h.tagged(b's', s.as_bytes()));
            }
            Item::Json(v) => h.value(v),
        }
    }
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

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

    fn object(&mut self, map: &Map<String, Value>) {
        self.tagged(b'{', &(map.len() as u64).to_le_bytes());
        for (k, v) in map {
            self.tagged(b'k', k.as_bytes());
            self.value(v);
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.tagged(b'n', &[]),
            Value::Bool(b) => self.tagged(b'b', &[u8::from(*b)]),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => self.tagged(b'u', &u.to_le_bytes()),
                (None, Some(i), _) => self.tagged(b'i', &i.to_le_bytes()),
                (None, None, f) => {
                    self.tagged(b'f', &f.unwrap_or(f64::NAN).to_bits().to_le_bytes())
                }
            },
            Value::String(s) => self.tagged(b's', s.as_bytes()),
            Value::Array(items) => {
                self.tagged(b'[', &(items.len() as u64).to_le_bytes());
                items.iter().for_each(|i| self.value(i));
            }
            Value::Object(m) => self.object(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_hash_like_the_object_they_form() {
        let v = serde_json::json!({"b": "x", "a": 3, "c": ["p", "q"], "d": {"z": null, "y": 1.5}});
        let Value::Object(map) = &v else { panic!() };
        let strs = vec!["p".to_owned(), "q".to_owned()];
        let mut members = vec![
            ("d", Item::Json(&map["d"])),
            ("c", Item::Strs(&strs)),
            ("b", Item::Str("x")),
            ("a", Item::Uint(3)),
        ];
        assert_eq!(of_members(&mut members), of_map(map));
    }
}
