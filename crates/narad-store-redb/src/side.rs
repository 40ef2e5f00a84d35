//! Side records. A value under [`LARGE`] bytes is one row of `side`. A
//! larger one (a long session's reducer snapshot: tens of MiB) is cut into
//! rows of `side_chunks`, under a `side_large` row that holds its length.
//!
//! redb keeps a value larger than a page in one region of a power-of-two
//! size, and reads that region whole: a 34 MiB snapshot cost a 64 MiB read,
//! 37 ms of an 80 ms hydrate. Its chunks of just under 1 MiB each fit a
//! 1 MiB region and read, joined, in 9 ms. A key is in `side` or in
//! `side_large`, never both; layout 2 files hold only `side` rows, which
//! read as before.

use bytes::Bytes;
use narad_store::{Damage, StoreError};
use redb::{ReadTransaction, ReadableTable, Table, TableDefinition, WriteTransaction};

use crate::rerr;

/// `(space, key)` → value, for values under [`LARGE`] bytes.
pub(crate) const SIDE: TableDefinition<(u8, &str), &[u8]> = TableDefinition::new("side");
/// `(space, key)` → length, for values of [`LARGE`] bytes or more.
pub(crate) const SIDE_LARGE: TableDefinition<(u8, &str), u64> = TableDefinition::new("side_large");
/// `(space, key, n)` → the `n`-th chunk of a large value.
pub(crate) const SIDE_CHUNKS: TableDefinition<(u8, &str, u32), &[u8]> =
    TableDefinition::new("side_chunks");

/// Values from this size on are chunked.
pub(crate) const LARGE: usize = 1 << 20;

/// A chunk's size: with its key and the page header it fits a 1 MiB
/// region (a full 1 MiB would round up to 2 MiB).
const CHUNK: usize = (1 << 20) - (4 << 10);

type ChunkTable = (u8, &'static str, u32);

/// A large value whose chunks do not add up to its length.
fn damaged() -> StoreError {
    StoreError::corrupt(Damage::MissingRows, None, None)
}

/// The value of length `len` stored as chunks of `key`, joined.
fn join(
    chunks: &impl ReadableTable<ChunkTable, &'static [u8]>,
    (space, key): (u8, &str),
    len: u64,
) -> Result<Vec<u8>, StoreError> {
    let len = usize::try_from(len).map_err(|_| damaged())?;
    let mut out = Vec::new();
    // The length is storage contents: a damaged one is refused, not
    // allocated (`try_reserve` fails instead of aborting).
    out.try_reserve_exact(len).map_err(|_| damaged())?;
    for (n, item) in chunks
        .range((space, key, 0)..=(space, key, u32::MAX))
        .map_err(rerr)?
        .enumerate()
    {
        let (k, v) = item.map_err(rerr)?;
        let v = v.value();
        if k.value().2 as usize != n || out.len() + v.len() > len {
            return Err(damaged());
        }
        out.extend_from_slice(v);
    }
    if out.len() != len {
        return Err(damaged());
    }
    Ok(out)
}

/// One value read in a read transaction.
pub(crate) fn read(tx: &ReadTransaction, key: (u8, &str)) -> Result<Option<Bytes>, StoreError> {
    let side = tx.open_table(SIDE).map_err(rerr)?;
    if let Some(v) = side.get_owned(key).map_err(rerr)? {
        return Ok(Some(crate::side_bytes(v)));
    }
    let large = tx.open_table(SIDE_LARGE).map_err(rerr)?;
    let Some(len) = large.get(key).map_err(rerr)? else {
        return Ok(None);
    };
    let chunks = tx.open_table(SIDE_CHUNKS).map_err(rerr)?;
    Ok(Some(join(&chunks, key, len.value())?.into()))
}

/// The values of `space` whose keys sort after `after`, at most `limit`,
/// in key order, read in one read transaction: the rows of both tables,
/// merged.
pub(crate) fn list(
    tx: &ReadTransaction,
    space: u8,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<(String, Bytes)>, StoreError> {
    let from = match after {
        Some(a) => std::ops::Bound::Excluded((space, a)),
        None => std::ops::Bound::Included((space, "")),
    };
    let to = match space.checked_add(1) {
        Some(next) => std::ops::Bound::Excluded((next, "")),
        None => std::ops::Bound::Unbounded,
    };
    let side = tx.open_table(SIDE).map_err(rerr)?;
    let large = tx.open_table(SIDE_LARGE).map_err(rerr)?;
    let chunks = tx.open_table(SIDE_CHUNKS).map_err(rerr)?;
    let mut small = side
        .range::<(u8, &str)>((from, to))
        .map_err(rerr)?
        .peekable();
    let mut big = large
        .range::<(u8, &str)>((from, to))
        .map_err(rerr)?
        .peekable();
    let mut out = Vec::new();
    while out.len() < limit {
        // Keys compare as they sort in the tables: by bytes.
        let take_small = match (small.peek(), big.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(Ok((a, _))), Some(Ok((b, _)))) => a.value().1.as_bytes() < b.value().1.as_bytes(),
            // Either is an error: take it, so it is reported.
            (Some(Err(_)), _) => true,
            (_, Some(Err(_))) => false,
        };
        if take_small {
            if let Some(item) = small.next() {
                let (k, v) = item.map_err(rerr)?;
                out.push((k.value().1.to_owned(), Bytes::copy_from_slice(v.value())));
            }
        } else if let Some(item) = big.next() {
            let (k, len) = item.map_err(rerr)?;
            let key = k.value();
            let value = join(&chunks, key, len.value())?;
            out.push((key.1.to_owned(), value.into()));
        }
    }
    Ok(out)
}

/// The side tables of one write transaction.
pub(crate) struct SideTables<'t> {
    side: Table<'t, (u8, &'static str), &'static [u8]>,
    large: Table<'t, (u8, &'static str), u64>,
    chunks: Table<'t, ChunkTable, &'static [u8]>,
}

impl<'t> SideTables<'t> {
    pub(crate) fn open(tx: &'t WriteTransaction) -> Result<Self, StoreError> {
        Ok(Self {
            side: tx.open_table(SIDE).map_err(rerr)?,
            large: tx.open_table(SIDE_LARGE).map_err(rerr)?,
            chunks: tx.open_table(SIDE_CHUNKS).map_err(rerr)?,
        })
    }

    /// The current value of `key` (a batch's condition compares it).
    pub(crate) fn get(&self, key: (u8, &str)) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(v) = self.side.get(key).map_err(rerr)? {
            return Ok(Some(v.value().to_vec()));
        }
        let Some(len) = self.large.get(key).map_err(rerr)?.map(|l| l.value()) else {
            return Ok(None);
        };
        join(&self.chunks, key, len).map(Some)
    }

    /// Writes `value` as `key`'s, or deletes it (`None`), whichever table
    /// held it before.
    pub(crate) fn put(&mut self, key: (u8, &str), value: Option<&[u8]>) -> Result<(), StoreError> {
        let was_large = self.large.remove(key).map_err(rerr)?.is_some();
        if was_large {
            let (space, k) = key;
            self.chunks
                .retain_in((space, k, 0)..=(space, k, u32::MAX), |_, _| false)
                .map_err(rerr)?;
        }
        match value {
            Some(v) if v.len() >= LARGE => {
                self.side.remove(key).map_err(rerr)?;
                let (space, k) = key;
                for (n, chunk) in v.chunks(CHUNK).enumerate() {
                    let n = u32::try_from(n)
                        .map_err(|_| StoreError::Backend("side value too large".into()))?;
                    self.chunks.insert((space, k, n), chunk).map_err(rerr)?;
                }
                self.large.insert(key, v.len() as u64).map_err(rerr)?;
            }
            Some(v) => {
                self.side.insert(key, v).map_err(rerr)?;
            }
            None => {
                self.side.remove(key).map_err(rerr)?;
            }
        }
        Ok(())
    }
}
