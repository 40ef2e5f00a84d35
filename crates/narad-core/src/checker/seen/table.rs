//! The large form of [`super::Seen`]: an open-addressing table of
//! 12-byte entries, placed by the top bits of the id hash with linear
//! probing.

use super::Entry;

/// An open-addressing map from id hash to folded fingerprint: slot
/// `hash >> shift`, then the next slots in turn. A slot whose key is 0 is
/// empty; the key 0 itself is kept in `zero`.
#[derive(Clone)]
pub(crate) struct Table {
    slots: Vec<Entry>,
    shift: u32,
    pub(super) len: usize,
    zero: Option<u32>,
}

/// The fewest slots of a table (a table holds more than [`super::SMALL`] entries).
const MIN_SLOTS: usize = 2048;

impl Table {
    pub(super) fn with_slots(n: usize) -> Self {
        Self {
            slots: vec![Entry::new(0, 0); n],
            shift: 64 - n.trailing_zeros(),
            len: 0,
            zero: None,
        }
    }

    /// The slot count that keeps `len` entries at most 3/4 full.
    pub(super) fn slots_for(len: usize) -> usize {
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

    pub(super) fn get(&self, key: u64) -> Option<u32> {
        if key == 0 {
            return self.zero;
        }
        self.slots
            .get(self.probe(key))
            .filter(|e| e.key() == key)
            .map(|e| e.fp)
    }

    pub(super) fn insert(&mut self, key: u64, fp: u32) {
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
    pub(super) fn resize(&mut self, n: usize) {
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

    /// Slots held.
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.zero.map(|fp| (0, fp)).into_iter().chain(
            self.slots
                .iter()
                .filter(|e| e.key() != 0)
                .map(|e| (e.key(), e.fp)),
        )
    }

    /// Every entry in key order. The slots hold them nearly so: each sits
    /// at its home slot (the key's top bits) or a few past it. An insertion
    /// sort then moves each entry back past a few others, where a full sort
    /// of a million entries was half the cost of writing a snapshot; if
    /// the entries are far from their homes (keys crafted to share one),
    /// it gives up and sorts them in full.
    pub(super) fn sorted(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = self.iter().collect();
        let budget = v.len().saturating_mul(8);
        let mut moves = 0usize;
        for i in 1..v.len() {
            let mut j = i;
            while j > 0 && v[j - 1].0 > v[j].0 {
                v.swap(j - 1, j);
                j -= 1;
            }
            moves += i - j;
            if moves > budget {
                v.sort_unstable();
                break;
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_by_both_paths(keys: impl Iterator<Item = u64>) {
        let mut t = Table::with_slots(MIN_SLOTS);
        let mut reference = std::collections::BTreeMap::new();
        for (i, k) in (0u32..).zip(keys) {
            t.insert(k, i);
            reference.insert(k, i);
        }
        let want: Vec<(u64, u32)> = reference.into_iter().collect();
        assert_eq!(t.sorted(), want);
    }

    #[test]
    fn sorted_gives_key_order_near_home_and_far_from_it() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Random keys: each near its home slot (the insertion sort).
        sorted_by_both_paths((0..20_000).map(|_| random()));
        // Small keys all share the first home slot (the full sort), and 0
        // is kept apart from the slots.
        sorted_by_both_paths((0..5_000u64).rev().chain((0..20_000).map(|_| random())));
    }
}
