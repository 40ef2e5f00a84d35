//! The eventIds a journal has taken (§4.1), kept compact: per event a
//! 64-bit hash of its eventId and the 64-bit fingerprint of its content,
//! 16 bytes, instead of the id itself.
//!
//! A journal holds every event it ever accepted, so this set grows with
//! history; it is the one per-event cost of a finished session.
//!
//! Two distinct eventIds of one journal that hash alike would be taken for
//! one (a redelivery or a conflict). The hash is SipHash-1-3 under fixed
//! keys, so the verdict stays deterministic; by chance this happens about
//! once in 2^64 / n pairs, and a producer who crafts such a pair on purpose
//! can only get its own event refused in its own journal.

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use siphasher::sip::SipHasher13;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// Entries kept in a sorted vector grown by an eighth at a time (2 KiB at
/// most, so an insert's shift stays cheap); past this the set is a hash
/// map, whose table is up to twice its entries.
const SMALL: usize = 128;

/// The eventId hash (fixed keys: verdicts never depend on the process).
pub(crate) fn id_hash(event_id: &str) -> u64 {
    let mut h = SipHasher13::new_with_keys(0x6e61_7261_642d_6964, 0x7365_656e_2d76_3031);
    h.write(event_id.as_bytes());
    h.finish()
}

/// Passes a key that is already a hash through unchanged.
#[derive(Default)]
pub(crate) struct Pass(u64);

impl Hasher for Pass {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// eventId hash -> content fingerprint.
#[derive(Clone)]
pub(crate) enum Seen {
    Small(Vec<(u64, u64)>),
    /// Boxed, so the set is one vector wide.
    #[allow(clippy::box_collection)]
    Large(Box<HashMap<u64, u64, BuildHasherDefault<Pass>>>),
}

impl Default for Seen {
    fn default() -> Self {
        Self::Small(Vec::new())
    }
}

impl Seen {
    /// The fingerprint recorded for `event_id`.
    pub fn get(&self, event_id: &str) -> Option<u64> {
        self.get_hash(id_hash(event_id))
    }

    fn get_hash(&self, key: u64) -> Option<u64> {
        match self {
            Self::Small(v) => v
                .binary_search_by_key(&key, |e| e.0)
                .ok()
                .and_then(|i| v.get(i))
                .map(|e| e.1),
            Self::Large(m) => m.get(&key).copied(),
        }
    }

    /// Records `event_id` with fingerprint `fp`.
    pub fn insert(&mut self, event_id: &str, fp: u64) {
        self.insert_hash(id_hash(event_id), fp);
    }

    fn insert_hash(&mut self, key: u64, fp: u64) {
        match self {
            Self::Small(v) => match v.binary_search_by_key(&key, |e| e.0) {
                Ok(i) => {
                    if let Some(e) = v.get_mut(i) {
                        e.1 = fp;
                    }
                }
                Err(i) if v.len() < SMALL => {
                    if v.len() == v.capacity() {
                        v.reserve_exact(1 + v.len() / 8);
                    }
                    v.insert(i, (key, fp));
                }
                Err(_) => {
                    let mut m: HashMap<u64, u64, BuildHasherDefault<Pass>> =
                        std::mem::take(v).into_iter().collect();
                    m.insert(key, fp);
                    *self = Self::Large(Box::new(m));
                }
            },
            Self::Large(m) => {
                m.insert(key, fp);
            }
        }
    }

    /// Returns spare capacity (the session is idle).
    pub fn shrink(&mut self) {
        match self {
            Self::Small(v) => v.shrink_to_fit(),
            Self::Large(m) => m.shrink_to_fit(),
        }
    }

    fn sorted(&self) -> Vec<(u64, u64)> {
        match self {
            Self::Small(v) => v.clone(),
            Self::Large(m) => {
                let mut v: Vec<(u64, u64)> = m.iter().map(|(k, f)| (*k, *f)).collect();
                v.sort_unstable();
                v
            }
        }
    }
}

impl fmt::Debug for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.sorted()).finish()
    }
}

/// Serialized as `[[idHash, fingerprint], …]` in hash order.
impl Serialize for Seen {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.sorted().serialize(s)
    }
}

/// Reads the pairs, or (snapshot formats 1 and 2) a map of eventId to
/// fingerprint, whose ids it hashes.
impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Seen;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("eventId fingerprints")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Seen, A::Error> {
                let mut s = Seen::default();
                while let Some((k, fp)) = a.next_element::<(u64, u64)>()? {
                    s.insert_hash(k, fp);
                }
                Ok(s)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Seen, A::Error> {
                let mut s = Seen::default();
                while let Some((k, fp)) = a.next_entry::<String, u64>()? {
                    s.insert(&k, fp);
                }
                Ok(s)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_agree_and_round_trip() {
        let mut s = Seen::default();
        for i in 0..300u64 {
            s.insert(&format!("e{i}"), i * 7);
            assert!(matches!(s, Seen::Small(_)) == (i < SMALL as u64));
        }
        for i in 0..300u64 {
            assert_eq!(s.get(&format!("e{i}")), Some(i * 7));
        }
        assert_eq!(s.get("e300"), None);
        let bytes = serde_json::to_vec(&s).unwrap_or_default();
        let back: Seen = serde_json::from_slice(&bytes).unwrap_or_default();
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
        // Formats 1 and 2 stored the ids themselves.
        let old: Seen = serde_json::from_str(r#"{"e1":7,"e2":14}"#).unwrap_or_default();
        assert_eq!((old.get("e1"), old.get("e2")), (Some(7), Some(14)));
    }
}
