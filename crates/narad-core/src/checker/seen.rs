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
//! event rise with history).
//!
//! Two distinct eventIds of one journal that hash alike would be taken for
//! one (a redelivery or a conflict). The hash is the word-at-a-time
//! multiply-fold hash of [`crate::fingerprint`] under a fixed seed (it was
//! SipHash-1-3, several times the cost for a short id), so the verdict
//! stays deterministic; by chance this happens about once in 2^64 / n
//! pairs, and a producer who crafts such a pair on purpose can only get
//! its own event refused in its own journal.

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::hash::Hasher;

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

/// An open-addressing map from id hash to folded fingerprint: slot
/// `hash >> shift`, then the next slots in turn. A slot whose key is 0 is
/// empty; the key 0 itself is kept in `zero`.
#[derive(Clone)]
pub(crate) struct Table {
    slots: Vec<Entry>,
    shift: u32,
    len: usize,
    zero: Option<u32>,
}

/// The fewest slots of a table (a table holds more than [`SMALL`] entries).
const MIN_SLOTS: usize = 2048;

impl Table {
    fn with_slots(n: usize) -> Self {
        Self {
            slots: vec![Entry::new(0, 0); n],
            shift: 64 - n.trailing_zeros(),
            len: 0,
            zero: None,
        }
    }

    /// The slot count that keeps `len` entries at most 3/4 full.
    fn slots_for(len: usize) -> usize {
        (len.saturating_mul(4) / 3 + 1)
            .next_power_of_two()
            .max(MIN_SLOTS)
    }

    /// The slot holding `key`, or the empty slot where it would go.
    fn probe(&self, key: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = ((key >> self.shift) as usize) & mask;
        while let Some(e) = self.slots.get(i) {
            let k = e.key();
            if k == key || k == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
        i
    }

    /// A table of `n` entries given in strictly increasing key order,
    /// filled in one pass: with linear probing each then lands at its
    /// home slot or just past the entry before it (every slot between is
    /// taken), so the slots are written in order. Entries that would run
    /// past the end wrap around through [`Table::insert`].
    fn from_sorted(n: usize, sorted: impl Iterator<Item = (u64, u32)>) -> Self {
        let size = Self::slots_for(n);
        let empty = Entry::new(0, 0);
        let mut t = Self {
            slots: Vec::with_capacity(size),
            shift: 64 - size.trailing_zeros(),
            len: 0,
            zero: None,
        };
        let mut wrapped = Vec::new();
        for (key, fp) in sorted {
            let home = (key >> t.shift) as usize;
            if key == 0 || t.slots.len() >= size {
                wrapped.push((key, fp));
                continue;
            }
            if t.slots.len() < home {
                t.slots.resize(home, empty);
            }
            t.slots.push(Entry::new(key, fp));
            t.len += 1;
        }
        t.slots.resize(size, empty);
        for (key, fp) in wrapped {
            t.insert(key, fp);
        }
        t
    }

    fn get(&self, key: u64) -> Option<u32> {
        if key == 0 {
            return self.zero;
        }
        self.slots
            .get(self.probe(key))
            .filter(|e| e.key() == key)
            .map(|e| e.fp)
    }

    fn insert(&mut self, key: u64, fp: u32) {
        if key == 0 {
            self.len += usize::from(self.zero.is_none());
            self.zero = Some(fp);
            return;
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.resize(self.slots.len() * 2);
        }
        let i = self.probe(key);
        if let Some(e) = self.slots.get_mut(i) {
            if e.key() == 0 {
                self.len += 1;
            }
            *e = Entry::new(key, fp);
        }
    }

    /// Moves every entry into a table of `n` slots. The old slots are read
    /// in order, which is nearly the order of the new ones.
    fn resize(&mut self, n: usize) {
        let mut t = Self::with_slots(n);
        t.len = self.len;
        t.zero = self.zero;
        for e in self.slots.iter().filter(|e| e.key() != 0) {
            let i = t.probe(e.key());
            if let Some(slot) = t.slots.get_mut(i) {
                *slot = *e;
            }
        }
        *self = t;
    }

    fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.zero.map(|fp| (0, fp)).into_iter().chain(
            self.slots
                .iter()
                .filter(|e| e.key() != 0)
                .map(|e| (e.key(), e.fp)),
        )
    }
}

/// eventId hash -> folded content fingerprint.
#[derive(Clone)]
pub(crate) enum Seen {
    Small(Vec<Entry>),
    /// Boxed, so the set is one vector wide.
    Large(Box<Table>),
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
        }
    }

    /// Returns spare capacity (the session is idle).
    pub fn shrink(&mut self) {
        match self {
            Self::Small(v) => v.shrink_to_fit(),
            Self::Large(t) => {
                let n = Table::slots_for(t.len);
                if n < t.slots.len() {
                    t.resize(n);
                }
            }
        }
    }

    fn sorted(&self) -> Vec<(u64, u32)> {
        match self {
            Self::Small(v) => v.iter().map(|e| (e.key(), e.fp)).collect(),
            Self::Large(t) => {
                let mut v: Vec<(u64, u32)> = t.iter().collect();
                v.sort_unstable();
                v
            }
        }
    }
}

/// Bytes per entry of the snapshot form: the id hash, then the folded
/// fingerprint, little-endian.
const ENTRY_BYTES: usize = 12;

impl Seen {
    /// Appends the snapshot form: every entry in hash order, 12 bytes each.
    pub fn write_bytes(&self, out: &mut Vec<u8>) {
        let all = self.sorted();
        out.reserve(all.len() * ENTRY_BYTES);
        for (k, fp) in all {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&fp.to_le_bytes());
        }
    }

    /// The set [`Seen::write_bytes`] wrote. `None` unless the bytes are
    /// whole entries in strictly increasing hash order. A table is sized
    /// for them once and filled in slot order (the hash order), in the
    /// same pass that checks the order.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() % ENTRY_BYTES != 0 {
            return None;
        }
        // An entry that does not read is dropped, and the count below
        // then refuses the set.
        let entries = b.chunks_exact(ENTRY_BYTES).filter_map(|c| {
            let (k, fp) = c.split_at_checked(8)?;
            Some((
                u64::from_le_bytes(k.try_into().ok()?),
                u32::from_le_bytes(fp.try_into().ok()?),
            ))
        });
        // One pass: the order is checked as the entries go in.
        let mut last = None;
        let ordered = entries.map_while(|(k, fp)| {
            let ok = last.is_none_or(|l| l < k);
            last = Some(k);
            ok.then_some((k, fp))
        });
        let n = b.len() / ENTRY_BYTES;
        let set = if n <= SMALL {
            Self::Small(ordered.map(|(k, fp)| Entry::new(k, fp)).collect())
        } else {
            Self::Large(Box::new(Table::from_sorted(n, ordered)))
        };
        (set.len() == n).then_some(set)
    }

    /// Entries held.
    fn len(&self) -> usize {
        match self {
            Self::Small(v) => v.len(),
            Self::Large(t) => t.len,
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
    fn a_table_filled_in_key_order_wraps_past_its_last_slot() {
        let mut s = Seen::default();
        // All at the last slot, and the key 0: most wrap to the start.
        for i in 0..SMALL as u64 + 500 {
            s.insert_hash(u64::MAX - i, i as u32);
        }
        s.insert_hash(0, 7);
        s.insert_hash(1, 8);
        let mut bytes = Vec::new();
        s.write_bytes(&mut bytes);
        let back = Seen::from_bytes(&bytes).unwrap_or_default();
        assert!(matches!(back, Seen::Large(_)));
        assert_eq!(back.sorted(), s.sorted());
        for (k, fp) in s.sorted() {
            assert_eq!(back.get_hash(k), Some(fp));
        }
        assert_eq!(back.get_hash(2), None);
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
