//! The redb backend runs the shared store suite on real files, plus the
//! checks specific to its file format.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_store::suite::{batch, event};
use narad_store::Store;
use narad_store::StoreError;
use narad_store_redb::{RedbStore, SCHEMA_VERSION};

narad_store::store_suite!(RedbStore::open);
narad_store::file_store_suite!(RedbStore::open, RedbStore::open_read_only);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_from_a_newer_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.redb");
    drop(RedbStore::open(&path).await.unwrap());
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .unwrap()
            .insert("schema_version", 99)
            .unwrap();
        tx.commit().unwrap();
    }
    let err = RedbStore::open(&path).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::NewerSchema {
            found: 99,
            supported: SCHEMA_VERSION as u32
        }
    );
    assert_eq!(err.code(), "newer_schema");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_1_file_migrates_forward_with_history_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.redb");
    let evs: Vec<_> = (1..=4).map(|i| event("m", i, "a")).collect();
    let s = RedbStore::open(&path).await.unwrap();
    s.append(batch("m", 0, evs.clone())).await.unwrap();
    s.close().await.unwrap();
    drop(s);
    // Make it exactly what a layout-1 build wrote: no watch tables.
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        for t in ["watch", "watch_ids"] {
            assert!(tx
                .delete_table(redb::TableDefinition::<(&str, u64), &[u8]>::new(t))
                .unwrap());
        }
        tx.open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .unwrap()
            .insert("schema_version", 1)
            .unwrap();
        tx.commit().unwrap();
    }
    let s = RedbStore::open(&path).await.unwrap();
    assert_eq!(s.read_session("m", 0, 10).await.unwrap().events, evs);
    assert!(s.read_watch("ws", 0, 10).await.unwrap().events.is_empty());
    s.append(batch("m", 4, vec![event("m", 5, "a")]))
        .await
        .unwrap();
    s.close().await.unwrap();
    drop(s);
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = redb::ReadableDatabase::begin_read(&db).unwrap();
        let meta = tx
            .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .unwrap();
        assert_eq!(
            meta.get("schema_version").unwrap().unwrap().value(),
            SCHEMA_VERSION
        );
    }
}

/// Damage written straight into the redb file with redb's own API and the
/// store's table definitions, bypassing the store.
struct RedbTamper;

const EVENTS: redb::TableDefinition<(&str, u64), &[u8]> = redb::TableDefinition::new("events");

impl narad_store::damage::Tamper for RedbTamper {
    fn put_row(&self, path: &std::path::Path, session: &str, seq: u64, bytes: &[u8]) {
        let db = redb::Database::open(path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(EVENTS)
            .unwrap()
            .insert((session, seq), bytes)
            .unwrap();
        tx.commit().unwrap();
    }
}

narad_store::damage_suite!(RedbStore::open, RedbTamper);

/// A side value of a MiB or more (a long session's reducer snapshot) reads
/// back exactly, stays intact while later batches rewrite it, and holding
/// it past `close` neither blocks the close nor a reopen of the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_side_value_reads_back_exactly_and_outlives_later_writes() {
    use narad_store::{Expect, SideSpace, SideWrite};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.redb");
    let s = RedbStore::open(&path).await.unwrap();
    let value = |seed: u8, n: usize| -> bytes::Bytes {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    };
    let write = |head: u64, v: bytes::Bytes| {
        let mut b = batch("s", head, vec![event("s", head + 1, &format!("e{head}"))]);
        b.side.push(SideWrite {
            space: SideSpace::Snapshot,
            key: "s".into(),
            expect: Expect::Any,
            value: Some(v),
        });
        b
    };
    let (small, large) = (value(1, 1000), value(2, 3 << 20));
    s.append(write(0, small.clone())).await.unwrap();
    assert_eq!(s.side(SideSpace::Snapshot, "s").await.unwrap(), Some(small));
    s.append(write(1, large.clone())).await.unwrap();
    let held = s.side(SideSpace::Snapshot, "s").await.unwrap().unwrap();
    assert_eq!(held, large);
    // Rewritten while the first read is held: each read sees its own.
    let newer = value(3, 2 << 20);
    s.append(write(2, newer.clone())).await.unwrap();
    assert_eq!(
        s.side(SideSpace::Snapshot, "s").await.unwrap(),
        Some(newer.clone())
    );
    assert_eq!(held, large);
    s.close().await.unwrap();
    drop(s);
    let again = RedbStore::open(&path).await.unwrap();
    assert_eq!(
        again.side(SideSpace::Snapshot, "s").await.unwrap(),
        Some(newer)
    );
    assert_eq!(held, large);
    drop(held);
    again.close().await.unwrap();
}

/// Another application's redb database is no store: every open refuses it
/// before a write transaction could add this layout's tables to it.
#[tokio::test]
async fn another_applications_database_is_refused_and_left_as_it_was() {
    use redb::{ReadableDatabase, TableDefinition, TableHandle};
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("crm.redb");
    let customers: TableDefinition<&str, u64> = TableDefinition::new("customers");
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(customers)
            .unwrap()
            .insert("alice", 1)
            .unwrap();
        tx.commit().unwrap();
    }
    let refused = Some(StoreError::NotAStore {
        path: path.display().to_string(),
    });
    assert_eq!(RedbStore::open(&path).await.err(), refused);
    assert_eq!(RedbStore::open_existing(&path).await.err(), refused);
    assert_eq!(RedbStore::open_read_only(&path).await.err(), refused);
    let db = redb::Database::open(&path).unwrap();
    let tx = db.begin_read().unwrap();
    let tables: Vec<String> = tx
        .list_tables()
        .unwrap()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(tables, ["customers"]);
}
