//! The eventIds a journal has taken (§4.1), kept compact: per event a
//! 64-bit hash of its eventId and a 32-bit fingerprint of its content
//! (the 64-bit content fingerprint folded), 12 bytes, instead of the id
//! itself. The fingerprint only tells an identical redelivery from a
//! conflicting one of an id already taken: a conflicting redelivery passes
//! for identical about once in 2^32 tries.
//!
//! A journal holds every event it ever accepted, so this set grows with
//! history; it is the one per-event cost of a finished session. Past
//! [`SMALL`] entries it is an open-addressing table of the same 12-byte
//! entries, placed by the top bits of the id hash with linear probing:
//! an insert finds its slot in the cache lines the lookup just read, and
//! growing walks the old table in order and fills the new one nearly in
//! order, so neither the lookup's neighbour nor a resize costs a random
//! memory access per entry (a `HashMap` resize did, and made the cost per
//! event rise with history) ([`table`]). A set restored from a snapshot
//! keeps the snapshot's entries as a frozen run in hash order
//! ([`sorted`]) and takes new ones beside it, so a restore copies the
//! entries once instead of filling a table twice their size.
//!
//! Two distinct eventIds of one journal that hash alike would be taken for
//! one (a redelivery or a conflict). The hash is the word-at-a-time
//! multiply-fold hash of [`crate::fingerprint`] under a fixed seed (it was
//! SipHash-1-3, several times the cost for a short id), so the verdict
//! stays deterministic; by chance this happens about once in 2^64 / n
//! pairs, and a producer who crafts such a pair on purpose can only get
//! its own event refused in its own journal.

mod sorted;
mod table;

use bytes::Bytes;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sorted::{Sorted, ENTRY_BYTES};
use std::fmt;
use std::hash::Hasher;
use table::Table;

/// Entries kept in a sorted vector grown by an eighth at a time (12 KiB
/// at most, so an insert's shift stays cheap); past this the set is a
/// [`Table`], whose slots are up to 8/3 of its entries.
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

/// The eventId hash (a fixed seed: verdicts never depend on the process).
pub(crate) fn id_hash(event_id: &str) -> u64 {
    crate::fingerprint::of_id(event_id)
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
    Large(Box<Table>),
    /// A set restored from a snapshot: its entries as a frozen run, and
    /// those added since.
    Frozen(Box<Frozen>),
}

/// A restored set ([`Seen::Frozen`]).
#[derive(Clone)]
pub(crate) struct Frozen {
    base: Sorted,
    /// Small or large, never frozen; looked up first, so an entry added
    /// again replaces the base's.
    added: Seen,
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
            Self::Large(t) => t.get(key),
            Self::Frozen(f) => f.added.get_hash(key).or_else(|| f.base.get(key)),
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
                    let mut t = Table::with_slots(Table::slots_for(v.len() + 1));
                    for e in v.iter() {
                        t.insert(e.key(), e.fp);
                    }
                    t.insert(key, fp);
                    *self = Self::Large(Box::new(t));
                }
            },
            Self::Large(t) => t.insert(key, fp),
            Self::Frozen(f) => {
                f.added.insert_hash(key, fp);
                // Past an eighth of the base, the added entries join it:
                // one merge per eighth of growth, so a lookup's miss in
                // `added` stays cheap and memory stays 12 bytes an entry.
                if f.added.len() > SMALL.max(f.base.len() / 8) {
                    let mut all = Vec::new();
                    self.write_bytes(&mut all);
                    // `write_bytes` gives strictly increasing keys, so this
                    // reads; were it not to, the set stays as it is.
                    if let Some(base) = Sorted::from_bytes(all.into()) {
                        *self = Self::Frozen(Box::new(Frozen {
                            base,
                            added: Self::default(),
                        }));
                    }
                }
            }
        }
    }

    /// Returns spare capacity (the session is idle).
    pub fn shrink(&mut self) {
        match self {
            Self::Small(v) => v.shrink_to_fit(),
            Self::Large(t) => {
                let n = Table::slots_for(t.len);
                if n < t.slots() {
                    t.resize(n);
                }
            }
            Self::Frozen(f) => f.added.shrink(),
        }
    }

    /// Every entry in hash order, once (an added entry over the base's).
    fn sorted(&self) -> Vec<(u64, u32)> {
        match self {
            Self::Small(v) => v.iter().map(|e| (e.key(), e.fp)).collect(),
            Self::Large(t) => t.sorted(),
            Self::Frozen(f) => {
                let added = f.added.sorted();
                let mut out = Vec::with_capacity(f.base.len() + added.len());
                let mut base = f.base.iter().peekable();
                for (k, fp) in added {
                    while let Some(b) = base.next_if(|b| b.0 < k) {
                        out.push(b);
                    }
                    base.next_if(|b| b.0 == k);
                    out.push((k, fp));
                }
                out.extend(base);
                out
            }
        }
    }
}

impl Seen {
    /// Appends the snapshot form: every entry in hash order, 12 bytes each.
    pub fn write_bytes(&self, out: &mut Vec<u8>) {
        if let Self::Frozen(f) = self {
            if f.added.len() == 0 {
                out.extend_from_slice(f.base.bytes());
                return;
            }
        }
        let all = self.sorted();
        out.reserve(all.len() * ENTRY_BYTES);
        for (k, fp) in all {
            sorted::put(out, k, fp);
        }
    }

    /// The set [`Seen::write_bytes`] wrote. `None` unless the bytes are
    /// whole entries in strictly increasing hash order. Past [`SMALL`]
    /// entries the bytes are kept as they are, a frozen run
    /// ([`sorted`]), checked in the pass that indexes them.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        // One check of the order for both forms: a small set is a few
        // KiB, so the run it is read through costs nothing worth saving.
        let run = Sorted::from_bytes(Bytes::copy_from_slice(b))?;
        Some(if run.len() > SMALL {
            Self::Frozen(Box::new(Frozen {
                base: run,
                added: Self::default(),
            }))
        } else {
            let mut v = Vec::with_capacity(run.len());
            v.extend(run.iter().map(|(k, fp)| Entry::new(k, fp)));
            Self::Small(v)
        })
    }

    /// Entries held (an entry both added and in the base counts twice).
    fn len(&self) -> usize {
        match self {
            Self::Small(v) => v.len(),
            Self::Large(t) => t.len,
            Self::Frozen(f) => f.base.len() + f.added.len(),
        }
    }
}

impl fmt::Debug for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.sorted()).finish()
    }
}

/// Serialized as `[[idHash, fingerprint], …]` in hash order (a workspace's
/// set in the checker snapshot's JSON; a session's set is written in the
/// binary form of [`Seen::write_bytes`]).
impl Serialize for Seen {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.sorted().serialize(s)
    }
}

/// Reads the pairs.
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

    #[test]
    fn the_table_maps_like_a_map_through_growth_and_shrinking() {
        let mut s = Seen::default();
        let mut reference = std::collections::BTreeMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..50_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Small keys collide in their top bits (long probe runs), 0 is
            // the empty marker, and every fifth key is written again.
            let key = match i % 5 {
                0 => u64::from(i % 97),
                1 => reference
                    .keys()
                    .nth(i as usize % reference.len().max(1))
                    .copied()
                    .unwrap_or(x),
                _ => x,
            };
            s.insert_hash(key, i);
            reference.insert(key, i);
        }
        assert!(matches!(s, Seen::Large(_)));
        let check = |s: &Seen| {
            for (k, fp) in &reference {
                assert_eq!(s.get_hash(*k), Some(*fp));
            }
            assert_eq!(s.get_hash(u64::MAX - 1), None);
            let all: Vec<(u64, u32)> = reference.iter().map(|(k, f)| (*k, *f)).collect();
            assert_eq!(s.sorted(), all);
        };
        check(&s);
        s.shrink();
        check(&s);
        let bytes = serde_json::to_vec(&s).unwrap_or_default();
        let back: Seen = serde_json::from_slice(&bytes).unwrap_or_default();
        check(&back);
        let mut bytes = Vec::new();
        s.write_bytes(&mut bytes);
        check(&Seen::from_bytes(&bytes).unwrap_or_default());
    }

    #[test]
    fn a_restored_set_takes_new_entries_and_merges_them_in() {
        let mut s = Seen::default();
        let mut reference = std::collections::BTreeMap::new();
        // The ends of the hash space too: 0 is a table's empty marker.
        for key in (0..SMALL as u64 + 500).map(|i| u64::MAX - i).chain([0, 1]) {
            s.insert_hash(key, key as u32);
            reference.insert(key, key as u32);
        }
        let mut bytes = Vec::new();
        s.write_bytes(&mut bytes);
        let mut back = Seen::from_bytes(&bytes).unwrap();
        assert!(matches!(back, Seen::Frozen(_)));
        let all = |r: &std::collections::BTreeMap<u64, u32>| {
            r.iter().map(|(k, f)| (*k, *f)).collect::<Vec<_>>()
        };
        assert_eq!(back.sorted(), all(&reference));
        // Unchanged, it writes the bytes it was given.
        let mut again = Vec::new();
        back.write_bytes(&mut again);
        assert_eq!(again, bytes);
        // New entries, and entries of the base written again with another
        // fingerprint, through more than one merge.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut merges = 0;
        for i in 0..6 * SMALL as u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = if i % 7 == 0 {
                u64::MAX - u64::from(i % 900)
            } else {
                x
            };
            back.insert_hash(key, i);
            reference.insert(key, i);
            merges += usize::from(matches!(&back, Seen::Frozen(f) if f.added.len() == 0));
            assert_eq!(back.get_hash(key), Some(i));
        }
        assert!(merges >= 2, "{merges}");
        assert!(matches!(back, Seen::Frozen(_)));
        for (k, fp) in &reference {
            assert_eq!(back.get_hash(*k), Some(*fp));
        }
        assert_eq!(back.get_hash(2), None);
        assert_eq!(back.sorted(), all(&reference));
        let mut bytes = Vec::new();
        back.write_bytes(&mut bytes);
        assert_eq!(Seen::from_bytes(&bytes).unwrap().sorted(), all(&reference));
    }

    #[test]
    fn the_snapshot_form_round_trips_and_refuses_what_it_never_writes() {
        for n in [0u64, 3, SMALL as u64, SMALL as u64 + 1, 5000] {
            let mut s = Seen::default();
            for i in 0..n {
                s.insert(&format!("e{i}"), i);
            }
            let mut bytes = Vec::new();
            s.write_bytes(&mut bytes);
            assert_eq!(bytes.len(), n as usize * ENTRY_BYTES);
            let back = Seen::from_bytes(&bytes).unwrap_or_default();
            assert_eq!(format!("{back:?}"), format!("{s:?}"));
            assert_eq!(matches!(back, Seen::Small(_)), n <= SMALL as u64);
            if n > 1 {
                // A partial entry, and entries out of order.
                assert!(Seen::from_bytes(&bytes[1..]).is_none());
                let mut swapped = bytes[ENTRY_BYTES..2 * ENTRY_BYTES].to_vec();
                swapped.extend_from_slice(&bytes[..ENTRY_BYTES]);
                assert!(Seen::from_bytes(&swapped).is_none());
            }
        }
    }
}
