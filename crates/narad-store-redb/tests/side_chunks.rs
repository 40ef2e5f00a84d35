//! Side values of 1 MiB or more are stored in chunks (layout 3): a layout 2
//! file's single row still reads and is replaced cleanly, and chunks that
//! do not add up to their recorded length are damage, never a short value.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use bytes::Bytes;
use narad_store::suite::batch;
use narad_store::{Damage, Expect, SideSpace, SideWrite, Store, StoreError};
use narad_store_redb::RedbStore;
use redb::{ReadableDatabase, TableDefinition};

const SIDE: TableDefinition<(u8, &str), &[u8]> = TableDefinition::new("side");
const SIDE_LARGE: TableDefinition<(u8, &str), u64> = TableDefinition::new("side_large");
const SIDE_CHUNKS: TableDefinition<(u8, &str, u32), &[u8]> = TableDefinition::new("side_chunks");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

fn value(seed: u8, n: usize) -> Bytes {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

fn put(expect: Expect, v: Bytes) -> narad_store::Batch {
    let mut b = batch("s", 0, Vec::new());
    b.side.push(SideWrite {
        space: SideSpace::Snapshot,
        key: "s".into(),
        expect,
        value: Some(v),
    });
    b
}

/// The rows each table holds for key "s" of the snapshot space.
fn rows(path: &std::path::Path) -> (bool, Option<u64>, usize) {
    let db = redb::Database::create(path).unwrap();
    let tx = db.begin_read().unwrap();
    let id = SideSpace::Snapshot.id();
    let side = tx
        .open_table(SIDE)
        .unwrap()
        .get((id, "s"))
        .unwrap()
        .is_some();
    let large = tx
        .open_table(SIDE_LARGE)
        .unwrap()
        .get((id, "s"))
        .unwrap()
        .map(|v| v.value());
    let chunks = tx
        .open_table(SIDE_CHUNKS)
        .unwrap()
        .range((id, "s", 0)..=(id, "s", u32::MAX))
        .unwrap()
        .count();
    (side, large, chunks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_2_snapshot_row_reads_after_migration_and_gives_way_to_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.redb");
    drop(RedbStore::open(&path).await.unwrap());
    // What a layout 2 build wrote: the whole value in one `side` row, and
    // no chunk tables.
    let old = value(1, 3 << 20);
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(SIDE)
            .unwrap()
            .insert((SideSpace::Snapshot.id(), "s"), old.as_ref())
            .unwrap();
        assert!(tx.delete_table(SIDE_LARGE).unwrap());
        assert!(tx.delete_table(SIDE_CHUNKS).unwrap());
        tx.open_table(META)
            .unwrap()
            .insert("schema_version", 2)
            .unwrap();
        tx.commit().unwrap();
    }
    let s = RedbStore::open(&path).await.unwrap();
    assert_eq!(
        s.side(SideSpace::Snapshot, "s").await.unwrap(),
        Some(old.clone())
    );
    // The condition reads the old row; the new value goes to chunks and
    // the old row goes.
    let new = value(2, 2 << 20);
    s.append(put(Expect::Equals(old), new.clone()))
        .await
        .unwrap();
    assert_eq!(
        s.side(SideSpace::Snapshot, "s").await.unwrap(),
        Some(new.clone())
    );
    s.close().await.unwrap();
    drop(s);
    assert_eq!(rows(&path), (false, Some(new.len() as u64), 3));

    // A small value replaces the chunks and leaves none behind.
    let s = RedbStore::open(&path).await.unwrap();
    s.append(put(Expect::Equals(new), value(3, 10)))
        .await
        .unwrap();
    s.close().await.unwrap();
    drop(s);
    assert_eq!(rows(&path), (true, None, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_that_do_not_add_up_are_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.redb");
    let v = value(4, (5 << 20) + 7);
    let s = RedbStore::open(&path).await.unwrap();
    s.append(put(Expect::Absent, v.clone())).await.unwrap();
    s.close().await.unwrap();
    drop(s);
    assert_eq!(rows(&path), (false, Some(v.len() as u64), 6));

    let id = SideSpace::Snapshot.id();
    type Edit = fn(&redb::WriteTransaction, u8);
    let edits: [(&str, Edit); 4] = [
        ("a missing chunk", |tx, id| {
            tx.open_table(SIDE_CHUNKS)
                .unwrap()
                .remove((id, "s", 2))
                .unwrap();
        }),
        ("a chunk past the length", |tx, id| {
            tx.open_table(SIDE_CHUNKS)
                .unwrap()
                .insert((id, "s", 6), b"x".as_slice())
                .unwrap();
        }),
        ("a length past the chunks", |tx, id| {
            tx.open_table(SIDE_LARGE)
                .unwrap()
                .insert((id, "s"), (6 << 20) as u64)
                .unwrap();
        }),
        ("a length no memory holds", |tx, id| {
            tx.open_table(SIDE_LARGE)
                .unwrap()
                .insert((id, "s"), u64::MAX)
                .unwrap();
        }),
    ];
    for (what, edit) in edits {
        let copy = dir.path().join("copy.redb");
        std::fs::copy(&path, &copy).unwrap();
        {
            let db = redb::Database::create(&copy).unwrap();
            let tx = db.begin_write().unwrap();
            edit(&tx, id);
            tx.commit().unwrap();
        }
        let s = RedbStore::open(&copy).await.unwrap();
        // On failure, name the length read, not the bytes.
        let read = s.side(SideSpace::Snapshot, "s").await;
        assert!(
            matches!(
                read,
                Err(StoreError::Corrupt {
                    damage: Damage::MissingRows,
                    ..
                })
            ),
            "{what}: {:?}",
            read.map(|v| v.map(|b| b.len()))
        );
        let listed = s.list_side(SideSpace::Snapshot, None, 10).await;
        assert!(
            matches!(listed, Err(StoreError::Corrupt { .. })),
            "{what}: {:?}",
            listed.map(|l| l.iter().map(|(_, b)| b.len()).collect::<Vec<_>>())
        );
        // A conditional write reads the value too: refused, nothing written.
        let write = s.append(put(Expect::Equals(v.clone()), value(5, 10))).await;
        assert!(
            matches!(write, Err(StoreError::Corrupt { .. })),
            "{what}: {write:?}"
        );
        s.close().await.unwrap();
    }
}
