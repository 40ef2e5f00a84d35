//! The eventIds a journal has taken (§4.1), kept compact: per event a
//! 64-bit hash of its eventId and a 32-bit fingerprint of its content
//! (the 64-bit content fingerprint folded), 12 bytes, instead of the id
//! itself. The fingerprint only tells an identical redelivery from a
//! conflicting one of an id already taken: a conflicting redelivery passes
//! for identical about once in 2^32 tries.
//!
//! A journal holds every event it ever accepted, so this set grows with
//! history; it is the one per-event cost of a finished session.
//!
//! Two distinct eventIds of one journal that hash alike would be taken for
//! one (a redelivery or a conflict). The hash is SipHash-1-3 under fixed
//! keys, so the verdict stays deterministic; by chance this happens about
//! once in 2^64 / n pairs, and a producer who crafts such a pair on purpose
//! can only get its own event refused in its own journal.

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use siphasher::sip::SipHasher13;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// Entries kept in a sorted vector grown by an eighth at a time (12 KiB
/// at most, so an insert's shift stays cheap); past this the set is a hash
/// map, whose table is up to twice its entries.
const SMALL: usize = 1024;

/// The stored fingerprint: the content fingerprint folded to 32 bits.
pub(crate) fn fold(fp: u64) -> u32 {
    (fp ^ (fp >> 32)) as u32
}

/// One entry of the small form: the id hash in two halves (so an entry is
/// 12 bytes, not 16) and the folded fingerprint.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    hi: u32,
    lo: u32,
    fp: u32,
}

impl Entry {
    fn key(&self) -> u64 {
        (u64::from(self.hi) << 32) | u64::from(self.lo)
    }

    fn new(key: u64, fp: u32) -> Self {
        Self {
            hi: (key >> 32) as u32,
            lo: key as u32,
            fp,
        }
    }
}

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

/// eventId hash -> folded content fingerprint.
#[derive(Clone)]
pub(crate) enum Seen {
    Small(Vec<Entry>),
    /// Boxed, so the set is one vector wide.
    #[allow(clippy::box_collection)]
    Large(Box<HashMap<u64, u32, BuildHasherDefault<Pass>>>),
}

impl Default for Seen {
    fn default() -> Self {
        Self::Small(Vec::new())
    }
}

impl Seen {
    /// The folded fingerprint recorded for `event_id`.
    pub fn get(&self, event_id: &str) -> Option<u32> {
        self.get_hash(id_hash(event_id))
    }

    fn get_hash(&self, key: u64) -> Option<u32> {
        match self {
            Self::Small(v) => v
                .binary_search_by_key(&key, Entry::key)
                .ok()
                .and_then(|i| v.get(i))
                .map(|e| e.fp),
            Self::Large(m) => m.get(&key).copied(),
        }
    }

    /// Records `event_id` with content fingerprint `fp` (folded).
    pub fn insert(&mut self, event_id: &str, fp: u64) {
        self.insert_hash(id_hash(event_id), fold(fp));
    }

    fn insert_hash(&mut self, key: u64, fp: u32) {
        match self {
            Self::Small(v) => match v.binary_search_by_key(&key, Entry::key) {
                Ok(i) => {
                    if let Some(e) = v.get_mut(i) {
                        e.fp = fp;
                    }
                }
                Err(i) if v.len() < SMALL => {
                    if v.len() == v.capacity() {
                        v.reserve_exact(1 + v.len() / 8);
                    }
                    v.insert(i, Entry::new(key, fp));
                }
                Err(_) => {
                    let mut m: HashMap<u64, u32, BuildHasherDefault<Pass>> =
                        v.iter().map(|e| (e.key(), e.fp)).collect();
                    *v = Vec::new();
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

    fn sorted(&self) -> Vec<(u64, u32)> {
        match self {
            Self::Small(v) => v.iter().map(|e| (e.key(), e.fp)).collect(),
            Self::Large(m) => {
                let mut v: Vec<(u64, u32)> = m.iter().map(|(k, f)| (*k, *f)).collect();
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

/// Reads the pairs (snapshot format 5; older snapshots are not restored).
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
                while let Some((k, fp)) = a.next_element::<(u64, u32)>()? {
                    s.insert_hash(k, fp);
                }
                Ok(s)
            }
        }
        d.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_agree_and_round_trip() {
        let mut s = Seen::default();
        let n = SMALL as u64 + 300;
        for i in 0..n {
            s.insert(&format!("e{i}"), i * 7);
            assert!(matches!(s, Seen::Small(_)) == (i < SMALL as u64));
        }
        for i in 0..n {
            assert_eq!(s.get(&format!("e{i}")), Some(fold(i * 7)));
        }
        assert_eq!(s.get(&format!("e{n}")), None);
        let bytes = serde_json::to_vec(&s).unwrap_or_default();
        let back: Seen = serde_json::from_slice(&bytes).unwrap_or_default();
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
    }
}
