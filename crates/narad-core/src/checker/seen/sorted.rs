//! The frozen form of [`super::Seen`]: entries in strictly increasing
//! id-hash order, held as the snapshot stores them (12 bytes each: the
//! hash, then the folded fingerprint, little-endian).
//!
//! Restoring a long session used to fill a hash table from these bytes:
//! 16 to 32 bytes of fresh, zeroed memory an entry, written in a second
//! pass. A run keeps the bytes as they are and adds only a directory: for
//! each bucket of hashes (their top bits; about four entries a bucket) the
//! index of its first entry. A lookup reads the bucket's two directory
//! words and its entries, one or two cache lines, as a table's probe does.

use bytes::Bytes;

/// Bytes per entry: the id hash, then the folded fingerprint, little-endian.
pub(super) const ENTRY_BYTES: usize = 12;

/// Entries per directory bucket, on average.
const PER_BUCKET: usize = 4;

/// Entries in strictly increasing hash order, with their directory.
#[derive(Clone)]
pub(super) struct Sorted {
    bytes: Bytes,
    /// `dir[b]`: the index of the first entry whose bucket is `b` or
    /// later; one word more than there are buckets.
    dir: Vec<u32>,
    /// A hash's bucket is `hash >> shift` (64: one bucket).
    shift: u32,
}

/// The entry at the start of `c`.
fn decode(c: &[u8]) -> Option<(u64, u32)> {
    let (k, rest) = c.split_first_chunk::<8>()?;
    let fp = rest.first_chunk::<4>()?;
    Some((u64::from_le_bytes(*k), u32::from_le_bytes(*fp)))
}

/// Appends one entry in the stored form.
pub(super) fn put(out: &mut Vec<u8>, key: u64, fp: u32) {
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&fp.to_le_bytes());
}

impl Sorted {
    /// The run of `bytes`: `None` unless they are whole entries in strictly
    /// increasing hash order. The order is checked in the pass that builds
    /// the directory.
    pub fn from_bytes(bytes: Bytes) -> Option<Self> {
        if bytes.len() % ENTRY_BYTES != 0 {
            return None;
        }
        let n = bytes.len() / ENTRY_BYTES;
        let count = u32::try_from(n).ok()?;
        let buckets = (n / PER_BUCKET).max(1).next_power_of_two();
        let shift = 64 - buckets.trailing_zeros();
        let mut dir = Vec::with_capacity(buckets + 1);
        let mut last = None;
        for (i, c) in (0u32..).zip(bytes.chunks_exact(ENTRY_BYTES)) {
            let (key, _) = decode(c)?;
            if last.is_some_and(|l| l >= key) {
                return None;
            }
            last = Some(key);
            let b = bucket(key, shift);
            while dir.len() <= b {
                dir.push(i);
            }
        }
        dir.resize(buckets + 1, count);
        Some(Self { bytes, dir, shift })
    }

    /// The fingerprint of `key`.
    pub fn get(&self, key: u64) -> Option<u32> {
        let b = bucket(key, self.shift);
        let (from, to) = (*self.dir.get(b)? as usize, *self.dir.get(b + 1)? as usize);
        let run = self
            .bytes
            .get(from * ENTRY_BYTES..to.checked_mul(ENTRY_BYTES)?)?;
        for c in run.chunks_exact(ENTRY_BYTES) {
            let (k, fp) = decode(c)?;
            if k >= key {
                return (k == key).then_some(fp);
            }
        }
        None
    }

    pub fn len(&self) -> usize {
        self.bytes.len() / ENTRY_BYTES
    }

    /// The entries in hash order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.bytes.chunks_exact(ENTRY_BYTES).filter_map(decode)
    }

    /// The entries in their stored form.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

fn bucket(key: u64, shift: u32) -> usize {
    key.checked_shr(shift).unwrap_or(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(keys: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            put(&mut out, *k, i as u32);
        }
        out
    }

    #[test]
    fn finds_every_entry_and_nothing_else_at_every_size() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in [0usize, 1, 2, 3, 4, 5, 17, 1000, 4099] {
            let mut keys: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                })
                .collect();
            // The ends of the hash space, and a crowd in one bucket.
            keys.extend([0, 1, u64::MAX, u64::MAX - 1, 1 << 40, (1 << 40) + 1]);
            keys.sort_unstable();
            keys.dedup();
            let s = Sorted::from_bytes(run(&keys).into()).unwrap_or_else(|| panic!("{n}"));
            assert_eq!(s.len(), keys.len());
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(s.get(*k), Some(i as u32), "{n} {k}");
                for miss in [k.wrapping_add(2), k.wrapping_sub(2)] {
                    if keys.binary_search(&miss).is_err() {
                        assert_eq!(s.get(miss), None);
                    }
                }
            }
            assert_eq!(s.iter().map(|(k, _)| k).collect::<Vec<_>>(), keys);
        }
    }

    #[test]
    fn refuses_what_it_never_writes() {
        let good = run(&[1, 5, 9]);
        assert!(Sorted::from_bytes(good.clone().into()).is_some());
        // Cut mid-entry, out of order, and a repeated hash.
        assert!(Sorted::from_bytes(Bytes::copy_from_slice(&good[..good.len() - 1])).is_none());
        assert!(Sorted::from_bytes(run(&[1, 9, 5]).into()).is_none());
        assert!(Sorted::from_bytes(run(&[1, 5, 5]).into()).is_none());
    }
}
