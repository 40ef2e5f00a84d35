//! A string-keyed map for the many small maps a checker keeps per session.
//!
//! It behaves like a `BTreeMap<String, V>`: iteration in key order, and
//! the same `Debug` and serde forms, so reduced state, snapshots and their
//! renderings are byte-identical. While it holds at most [`SMALL`] entries
//! it is one sorted vector sized exactly to its entries; a B-tree allocates
//! a node of eleven slots for the first entry, which made a finished
//! one-run session cost kilobytes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::{btree_map, BTreeMap};
use std::fmt;

/// Entries kept in the sorted vector; past this the map is a B-tree.
const SMALL: usize = 32;

#[derive(Clone)]
pub(crate) enum SmallMap<V> {
    Small(Vec<(String, V)>),
    /// Boxed: the enum is then one vector wide (the vector's niche tags it).
    #[allow(clippy::box_collection)]
    Large(Box<BTreeMap<String, V>>),
}

impl<V> Default for SmallMap<V> {
    fn default() -> Self {
        Self::Small(Vec::new())
    }
}

impl<V> SmallMap<V> {
    fn find(v: &[(String, V)], k: &str) -> Result<usize, usize> {
        v.binary_search_by(|(key, _)| key.as_str().cmp(k))
    }

    pub fn get(&self, k: &str) -> Option<&V> {
        match self {
            Self::Small(v) => Self::find(v, k).ok().and_then(|i| v.get(i)).map(|e| &e.1),
            Self::Large(m) => m.get(k),
        }
    }

    pub fn get_mut(&mut self, k: &str) -> Option<&mut V> {
        match self {
            Self::Small(v) => match Self::find(v, k) {
                Ok(i) => v.get_mut(i).map(|e| &mut e.1),
                Err(_) => None,
            },
            Self::Large(m) => m.get_mut(k),
        }
    }

    pub fn contains_key(&self, k: &str) -> bool {
        self.get(k).is_some()
    }

    pub fn insert(&mut self, k: String, value: V) -> Option<V> {
        match self {
            Self::Small(v) => match Self::find(v, &k) {
                Ok(i) => v.get_mut(i).map(|e| std::mem::replace(&mut e.1, value)),
                Err(i) if v.len() < SMALL => {
                    // Exact growth: a small map never holds spare slots.
                    v.reserve_exact(1);
                    v.insert(i, (k, value));
                    None
                }
                Err(_) => {
                    let mut m: BTreeMap<String, V> = std::mem::take(v).into_iter().collect();
                    m.insert(k, value);
                    *self = Self::Large(Box::new(m));
                    None
                }
            },
            Self::Large(m) => m.insert(k, value),
        }
    }

    /// The value at `k`, inserting `make()` first when absent.
    pub fn get_or_insert_with(&mut self, k: &str, make: impl FnOnce() -> V) -> &mut V {
        if let Self::Small(v) = self {
            if v.len() >= SMALL && Self::find(v, k).is_err() {
                *self = Self::Large(Box::new(std::mem::take(v).into_iter().collect()));
            }
        }
        match self {
            Self::Small(v) => {
                let i = match Self::find(v, k) {
                    Ok(i) => i,
                    Err(i) => {
                        v.reserve_exact(1);
                        v.insert(i, (k.to_owned(), make()));
                        i
                    }
                };
                &mut v[i].1
            }
            Self::Large(m) => m.entry(k.to_owned()).or_insert_with(make),
        }
    }

    pub fn get_or_default(&mut self, k: &str) -> &mut V
    where
        V: Default,
    {
        self.get_or_insert_with(k, V::default)
    }

    pub fn remove(&mut self, k: &str) -> Option<V> {
        match self {
            Self::Small(v) => {
                let i = Self::find(v, k).ok()?;
                let (_, value) = v.remove(i);
                if v.is_empty() {
                    *v = Vec::new();
                }
                Some(value)
            }
            Self::Large(m) => m.remove(k),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Small(v) => v.len(),
            Self::Large(m) => m.len(),
        }
    }

    /// Every value, mutably, in key order.
    pub fn values_mut(&mut self) -> Box<dyn Iterator<Item = (&String, &mut V)> + '_> {
        match self {
            Self::Small(v) => Box::new(v.iter_mut().map(|(k, v)| (&*k, v))),
            Self::Large(m) => Box::new(m.iter_mut()),
        }
    }

    pub fn iter(&self) -> Iter<'_, V> {
        match self {
            Self::Small(v) => Iter::Small(v.iter()),
            Self::Large(m) => Iter::Large(m.iter()),
        }
    }
}

/// Iterator over a [`SmallMap`] in key order.
pub(crate) enum Iter<'a, V> {
    Small(std::slice::Iter<'a, (String, V)>),
    Large(btree_map::Iter<'a, String, V>),
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a String, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Small(i) => i.next().map(|(k, v)| (k, v)),
            Self::Large(i) => i.next(),
        }
    }
}

impl<'a, V> IntoIterator for &'a SmallMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

impl<V> FromIterator<(String, V)> for SmallMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let m: BTreeMap<String, V> = iter.into_iter().collect();
        if m.len() <= SMALL {
            let mut v = Vec::with_capacity(m.len());
            v.extend(m);
            Self::Small(v)
        } else {
            Self::Large(Box::new(m))
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for SmallMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: PartialEq> PartialEq for SmallMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<V: Eq> Eq for SmallMap<V> {}

impl<V: Serialize> Serialize for SmallMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for SmallMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::<String, V>::deserialize(d).map(|m| m.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_btree_map_across_the_switch() {
        let mut ours = SmallMap::default();
        let mut reference = BTreeMap::new();
        for (i, k) in ["m", "c", "x", "a", "q", "b", "z", "d", "e", "f", "c", "y"]
            .iter()
            .enumerate()
        {
            assert_eq!(
                ours.insert((*k).into(), i),
                reference.insert((*k).into(), i)
            );
            assert_eq!(format!("{ours:?}"), format!("{reference:?}"));
        }
        assert_eq!(ours.remove("c"), reference.remove("c"));
        assert_eq!(ours.remove("nope"), None);
        *ours.get_or_default("new") += 7;
        *reference.entry("new".to_owned()).or_default() += 7;
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&reference).unwrap()
        );
        let back: SmallMap<usize> =
            serde_json::from_str(&serde_json::to_string(&ours).unwrap()).unwrap();
        assert_eq!(back, ours);
        assert_eq!(ours.len(), reference.len());
    }

    #[test]
    fn a_small_map_holds_no_spare_slots() {
        let mut m = SmallMap::default();
        m.insert("a".into(), 1u64);
        m.insert("b".into(), 2);
        let SmallMap::Small(v) = &m else { panic!() };
        assert_eq!(v.capacity(), 2);
        m.remove("a");
        m.remove("b");
        let SmallMap::Small(v) = &m else { panic!() };
        assert_eq!(v.capacity(), 0);
    }
}
