//! Positions in a vector by id, without a copy of the ids: the transcript's
//! message and reasoning indexes.
//!
//! An id is found by its hash, and the position's own id is compared, so a
//! lookup never trusts the hash alone. An id whose hash another id already
//! holds (the hash has a fixed seed, so such ids can be made on purpose)
//! goes to a small ordered map instead: a crafted journal costs a
//! logarithmic lookup, never a scan.

use super::arena::by_bucket;
use super::seen::{id_hash, Pass};
use std::collections::hash_map::Entry;
use std::collections::{btree_map, BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasherDefault;

/// id -> position, for ids owned by the vector it indexes.
#[derive(Clone, Default)]
pub(super) struct IdIndex {
    by_hash: HashMap<u64, usize, BuildHasherDefault<Pass>>,
    /// Ids whose hash an earlier id holds.
    clashes: BTreeMap<Box<str>, usize>,
}

impl IdIndex {
    /// The index of the ids whose hashes `hashes` took, in order (as a
    /// decoder gathers them while each id is in cache: reading them again
    /// from a long list misses the cache once per id); `None` if an id
    /// repeats or a position has none.
    pub fn from_hashes<'a>(
        hashes: Hashes,
        id_at: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<Self> {
        let mut index = Self::default();
        index.by_hash.reserve(hashes.0.len());
        // In the order of the table's buckets, so the inserts walk the
        // table instead of missing the cache each (`arena.rs` does the
        // same). Which of two ids that share a hash goes to `clashes`
        // then depends on that order; lookups do not. An id is read only
        // when its hash is taken.
        let mask = (index.by_hash.capacity() / 7 * 8).next_power_of_two() as u64 - 1;
        for (h, i) in by_bucket(hashes.0, mask) {
            let i = i as usize;
            if !index.insert_hashed(h, i, || id_at(i), &id_at)? {
                return None;
            }
        }
        Some(index)
    }

    /// The position of `id`, given the id at each position.
    pub fn get<'a>(&self, id: &str, id_at: impl Fn(usize) -> Option<&'a str>) -> Option<usize> {
        match self.by_hash.get(&id_hash(id)) {
            Some(&p) if id_at(p) == Some(id) => Some(p),
            Some(_) => self.clashes.get(id).copied(),
            None => None,
        }
    }

    /// Records `id` at `position`; `false` (and no change) if `id` is
    /// already indexed.
    pub fn insert<'a>(
        &mut self,
        id: &str,
        position: usize,
        id_at: impl Fn(usize) -> Option<&'a str>,
    ) -> bool {
        self.insert_hashed(id_hash(id), position, || Some(id), id_at)
            .unwrap_or(false)
    }

    /// [`IdIndex::insert`] of the id `id()` gives, whose hash is `hash`;
    /// the id is read only when an earlier id holds that hash. `None` if
    /// there is no id to read.
    fn insert_hashed<'a, 'b>(
        &mut self,
        hash: u64,
        position: usize,
        id: impl FnOnce() -> Option<&'b str>,
        id_at: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<bool> {
        let held = match self.by_hash.entry(hash) {
            Entry::Vacant(v) => {
                v.insert(position);
                return Some(true);
            }
            Entry::Occupied(o) => *o.get(),
        };
        let id = id()?;
        if id_at(held) == Some(id) {
            return Some(false);
        }
        Some(match self.clashes.entry(id.into()) {
            btree_map::Entry::Vacant(v) => {
                v.insert(position);
                true
            }
            btree_map::Entry::Occupied(_) => false,
        })
    }
}

/// The id hashes of positions `0, 1, ...`, in order, for
/// [`IdIndex::from_hashes`].
#[derive(Default)]
pub(super) struct Hashes(Vec<(u64, u32)>);

impl Hashes {
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Takes the hash of the next position's id; `None` past `u32::MAX`
    /// positions.
    pub fn push(&mut self, id: &str) -> Option<()> {
        let at = u32::try_from(self.0.len()).ok()?;
        self.0.push((id_hash(id), at));
        Some(())
    }
}

/// Derived from the vector it indexes, which its owner compares: two
/// indexes of equal vectors may differ in which of two ids that share a
/// hash went to `clashes`, and are equal all the same.
impl PartialEq for IdIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Derived from the vector it indexes: rendered by size only, so a
/// restored index and a built one print alike.
impl fmt::Debug for IdIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdIndex({})", self.by_hash.len() + self.clashes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(ids: &'a [String]) -> impl Fn(usize) -> Option<&'a str> + Copy + 'a {
        move |p| ids.get(p).map(String::as_str)
    }

    fn hashes_of(ids: &[String]) -> Hashes {
        let mut hashes = Hashes::default();
        for id in ids {
            hashes.push(id).unwrap();
        }
        hashes
    }

    fn build(ids: &[String]) -> Option<IdIndex> {
        IdIndex::from_hashes(hashes_of(ids), at(ids))
    }

    #[test]
    fn finds_every_id_and_refuses_a_repeat() {
        let ids: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        let index = build(&ids).unwrap();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(index.get(id, at(&ids)), Some(i));
        }
        assert_eq!(index.get("m1000", at(&ids)), None);
        let mut twice = ids.clone();
        twice.push("m7".into());
        assert!(build(&twice).is_none());
    }

    /// Two ids under one hash: the second goes to the ordered map and both
    /// are found; a third id under that hash, never inserted, is not.
    #[test]
    fn ids_that_share_a_hash_are_told_apart() {
        let ids: Vec<String> = vec!["a".into(), "b".into()];
        let mut index = IdIndex::default();
        // Put "b" under "a"'s hash by hand, as a crafted clash would.
        assert!(index.insert("a", 0, at(&ids)));
        index.by_hash.insert(id_hash("b"), 0);
        assert!(index.insert("b", 1, at(&ids)));
        assert_eq!(index.clashes.len(), 1);
        assert_eq!(index.get("a", at(&ids)), Some(0));
        assert_eq!(index.get("b", at(&ids)), Some(1));
        assert!(!index.insert("b", 1, at(&ids)), "a repeat is refused");
        index.by_hash.insert(id_hash("c"), 0);
        assert_eq!(index.get("c", at(&ids)), None);
    }

    /// Hashes a decoder took: ids under one hash are both found (one
    /// through the ordered map), and a repeated id is refused.
    #[test]
    fn an_index_from_hashes_tells_shared_hashes_apart() {
        let ids: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
        let mut hashes = hashes_of(&ids);
        // A crafted clash: m3 taken under m7's hash, so m7 finds its
        // hash held by another id (m3 itself is then under no hash of its
        // own, which real hashes cannot do).
        hashes.0[3].0 = id_hash("m7");
        let index = IdIndex::from_hashes(hashes, at(&ids)).unwrap();
        assert_eq!(index.clashes.len(), 1);
        for (i, id) in ids.iter().enumerate().filter(|(i, _)| *i != 3) {
            assert_eq!(index.get(id, at(&ids)), Some(i), "{id}");
        }
        let mut twice = ids.clone();
        twice.push("m42".into());
        assert!(build(&twice).is_none());
    }
}
