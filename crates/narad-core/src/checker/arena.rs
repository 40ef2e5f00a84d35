//! Records keyed by id, packed into one byte string: the form a session's
//! closed history takes ([`super::closed`]).
//!
//! An arena record is `[alive][varint id length][id][varint length][payload]`.
//! Up to [`LINEAR`] records are found by a scan; past that through an index
//! from the id's hash to the record's offset.

use super::seen::{id_hash, Pass};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Records found by a linear scan (no index allocated).
const LINEAR: u32 = 16;

type Index = HashMap<u64, u32, BuildHasherDefault<Pass>>;

pub(super) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub(super) fn varint(b: &[u8], at: &mut usize) -> Option<usize> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let x = *b.get(*at)?;
        *at += 1;
        n |= u64::from(x & 0x7f) << shift;
        if x < 0x80 {
            return usize::try_from(n).ok();
        }
    }
    None
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn take<'a>(b: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let n = varint(b, at)?;
    let s = b.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(s)
}

pub(super) fn take_str<'a>(b: &'a [u8], at: &mut usize) -> Option<&'a str> {
    std::str::from_utf8(take(b, at)?).ok()
}

/// id hash -> record offset.
#[derive(Clone, Default)]
struct Indexed {
    map: Index,
    /// Two ids share a hash: a miss in the index then falls back to a scan.
    collided: bool,
}

/// Records keyed by id in one byte string.
#[derive(Clone, Default)]
pub(super) struct Arena {
    bytes: Vec<u8>,
    live: u32,
    dead_bytes: u32,
    index: Option<Box<Indexed>>,
}

/// One record: its offset, id and payload.
struct Entry<'a> {
    at: usize,
    id: &'a str,
    payload: &'a [u8],
    alive: bool,
    end: usize,
}

impl Arena {
    fn entry(&self, at: usize) -> Option<Entry<'_>> {
        let b = &self.bytes;
        let alive = *b.get(at)? == 1;
        let mut p = at + 1;
        let id = take_str(b, &mut p)?;
        let n = varint(b, &mut p)?;
        let payload = b.get(p..p.checked_add(n)?)?;
        Some(Entry {
            at,
            id,
            payload,
            alive,
            end: p + n,
        })
    }

    fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            let e = self.entry(at)?;
            at = e.end;
            Some(e)
        })
        .filter(|e| e.alive)
    }

    fn find(&self, id: &str) -> Option<Entry<'_>> {
        if let Some(index) = &self.index {
            if let Some(e) = index
                .map
                .get(&id_hash(id))
                .and_then(|&at| self.entry(at as usize))
                .filter(|e| e.alive && e.id == id)
            {
                return Some(e);
            }
            if !index.collided {
                return None;
            }
        }
        self.entries().find(|e| e.id == id)
    }

    pub fn get(&self, id: &str) -> Option<&[u8]> {
        self.find(id).map(|e| e.payload)
    }

    /// The record of `id` as stored: its id (borrowed from the arena) and
    /// payload.
    pub fn get_keyed(&self, id: &str) -> Option<(&str, &[u8])> {
        self.find(id).map(|e| (e.id, e.payload))
    }

    /// Adds a record for an id not present.
    pub fn insert(&mut self, id: &str, payload: &[u8]) {
        let at = self.bytes.len();
        self.bytes.push(1);
        put_str(&mut self.bytes, id);
        put_varint(&mut self.bytes, payload.len() as u64);
        self.bytes.extend_from_slice(payload);
        self.live += 1;
        self.index_one(id, at);
    }

    fn index_one(&mut self, id: &str, at: usize) {
        if let Some(index) = &mut self.index {
            let slot = index.map.entry(id_hash(id)).or_insert(at as u32);
            if *slot != at as u32 {
                index.collided = true;
            }
        } else if self.live > LINEAR {
            self.reindex();
        }
    }

    fn reindex(&mut self) {
        let all: Vec<(u64, u32)> = self
            .entries()
            .map(|e| (id_hash(e.id), e.at as u32))
            .collect();
        self.index_all(all);
    }

    /// Replaces the index with one of `all` (id hash, offset) pairs, one per
    /// live record in arena order.
    fn index_all(&mut self, all: Vec<(u64, u32)>) {
        if all.len() <= LINEAR as usize {
            self.index = None;
            return;
        }
        let mut index = Indexed {
            // Sized once: growing rehashed every entry again.
            map: Index::with_capacity_and_hasher(all.len(), Default::default()),
            collided: false,
        };
        // In the order of the table's buckets (the low bits of the hash
        // pick one): the inserts then walk the table instead of missing
        // the cache each. Only speed depends on it.
        let mask = (index.map.capacity() / 7 * 8).next_power_of_two() as u64 - 1;
        for (h, at) in by_bucket(all, mask) {
            let slot = index.map.entry(h).or_insert(at);
            index.collided |= *slot != at;
        }
        self.index = Some(Box::new(index));
    }

    /// Removes the record of `id`, returning its payload.
    pub fn remove(&mut self, id: &str) -> Option<Vec<u8>> {
        let (at, payload, size) = {
            let e = self.find(id)?;
            (e.at, e.payload.to_vec(), e.end - e.at)
        };
        if let Some(b) = self.bytes.get_mut(at) {
            *b = 0;
        }
        self.live -= 1;
        self.dead_bytes = self.dead_bytes.saturating_add(size as u32);
        if let Some(index) = &mut self.index {
            if index.map.get(&id_hash(id)) == Some(&(at as u32)) {
                index.map.remove(&id_hash(id));
            }
        }
        if self.dead_bytes as usize * 2 > self.bytes.len() {
            self.compact();
        }
        Some(payload)
    }

    /// Replaces the payload of `id` (present).
    pub fn replace(&mut self, id: &str, payload: &[u8]) {
        if self.remove(id).is_some() {
            self.insert(id, payload);
        }
    }

    fn compact(&mut self) {
        let mut out = Vec::with_capacity(self.bytes.len().saturating_sub(self.dead_bytes as usize));
        for e in self.entries() {
            out.extend_from_slice(self.bytes.get(e.at..e.end).unwrap_or_default());
        }
        self.bytes = out;
        self.dead_bytes = 0;
        self.reindex();
    }

    /// Returns spare capacity (the session is idle) once it exceeds the
    /// records: below that it is what the vector's doubling left, and
    /// trimming it after every run made the next run's first insert grow
    /// the arena again (a realloc, a page-table move for a large one).
    pub fn shrink(&mut self) {
        if self.bytes.capacity() / 2 > self.bytes.len() {
            self.bytes.shrink_to_fit();
        }
    }

    /// Whether any live record is held.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Appends the live records as they are laid out, dead ones dropped:
    /// the snapshot form, read back by [`Arena::from_live`].
    pub fn write_live(&self, out: &mut Vec<u8>) {
        if self.dead_bytes == 0 {
            out.extend_from_slice(&self.bytes);
            return;
        }
        for e in self.entries() {
            out.extend_from_slice(self.bytes.get(e.at..e.end).unwrap_or_default());
        }
    }

    /// The arena [`Arena::write_live`] wrote, its index rebuilt. `None`
    /// unless every byte belongs to a live record whose id and payload
    /// `valid` accepts, so a corrupt snapshot is refused, not read.
    pub fn from_live(bytes: &[u8], valid: impl Fn(&str, &[u8]) -> bool) -> Option<Self> {
        // Offsets are held as u32.
        if u32::try_from(bytes.len()).is_err() {
            return None;
        }
        let mut a = Self {
            bytes: bytes.to_vec(),
            ..Self::default()
        };
        // One walk checks every record and gathers what the index needs.
        let mut all = Vec::new();
        let mut at = 0;
        while at < a.bytes.len() {
            let e = a.entry(at)?;
            if !e.alive || !valid(e.id, e.payload) {
                return None;
            }
            all.push((id_hash(e.id), at as u32));
            at = e.end;
        }
        a.live = u32::try_from(all.len()).ok()?;
        a.index_all(all);
        Some(a)
    }

    /// Every live record, in id order.
    pub fn sorted(&self) -> Vec<(&str, &[u8])> {
        let mut v: Vec<(&str, &[u8])> = self.entries().map(|e| (e.id, e.payload)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

/// `all` in the order of the buckets `hash & mask` picks, up to runs of
/// about 32 buckets: a counting sort on the bucket number's top bits, two
/// passes instead of a comparison sort (which was a seventh of a cold
/// hydrate), and near enough to walk the table a cache line at a time.
pub(super) fn by_bucket(all: Vec<(u64, u32)>, mask: u64) -> Vec<(u64, u32)> {
    let bits = mask.count_ones();
    let part_bits = bits.saturating_sub(5).min(16);
    let shift = bits - part_bits;
    let part = |h: u64| ((h & mask) >> shift) as usize;
    // Counts per run, then each run's first place in `out`.
    let mut starts = vec![0usize; 1 << part_bits];
    for &(h, _) in &all {
        if let Some(n) = starts.get_mut(part(h)) {
            *n += 1;
        }
    }
    let mut placed = 0;
    for n in &mut starts {
        (*n, placed) = (placed, placed + *n);
    }
    let mut out = vec![(0, 0); all.len()];
    for (h, at) in all {
        if let Some(next) = starts.get_mut(part(h)) {
            if let Some(slot) = out.get_mut(*next) {
                *slot = (h, at);
            }
            *next += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_bucket_reorders_by_bucket_runs_and_keeps_every_pair() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let all: Vec<(u64, u32)> = (0..5000u32)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (if i % 7 == 0 { 42 } else { x }, i)
            })
            .collect();
        for mask in [0u64, 7, 1023, (1 << 13) - 1] {
            let out = by_bucket(all.clone(), mask);
            let run = |h: u64| (h & mask) >> mask.count_ones().min(5);
            assert!(out.windows(2).all(|w| run(w[0].0) <= run(w[1].0)), "{mask}");
            let (mut a, mut b) = (all.clone(), out);
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn an_arena_finds_replaces_and_removes_past_its_index_threshold() {
        let mut a = Arena::default();
        for i in 0..100u32 {
            a.insert(&format!("id-{i}"), &i.to_le_bytes());
            assert_eq!(a.index.is_some(), i >= LINEAR);
        }
        for i in 0..100u32 {
            assert_eq!(a.get(&format!("id-{i}")), Some(&i.to_le_bytes()[..]));
        }
        assert_eq!(a.get("id-100"), None);
        for i in (0..100u32).step_by(2) {
            assert!(a.remove(&format!("id-{i}")).is_some());
        }
        for i in (1..100u32).step_by(2) {
            a.replace(&format!("id-{i}"), b"x");
        }
        for i in 0..100u32 {
            let want: Option<&[u8]> = (i % 2 == 1).then_some(b"x");
            assert_eq!(a.get(&format!("id-{i}")), want);
        }
        let sorted = a.sorted();
        assert_eq!(sorted.len(), 50);
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        // Dead records were compacted away.
        assert!(a.bytes.len() < 50 * 12);
    }
}
