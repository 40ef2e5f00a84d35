//! The SQLite backend runs the shared store suite on real database files,
//! plus the checks specific to its file format.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_store::suite::{batch, event};
use narad_store::Store;
use narad_store::StoreError;
use narad_store_sqlite::{SqliteStore, SCHEMA_VERSION};

narad_store::store_suite!(SqliteStore::open);
narad_store::file_store_suite!(SqliteStore::open, SqliteStore::open_read_only);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_from_a_newer_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.sqlite");
    drop(SqliteStore::open(&path).await.unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE meta SET value = 99 WHERE name = 'schema_version'",
            [],
        )
        .unwrap();
    let err = SqliteStore::open(&path).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::NewerSchema {
            found: 99,
            supported: SCHEMA_VERSION as u32
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_is_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.sqlite");
    drop(SqliteStore::open(&path).await.unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layout_1_file_migrates_forward_with_history_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("narad.sqlite");
    let evs: Vec<_> = (1..=4).map(|i| event("m", i, "a")).collect();
    let s = SqliteStore::open(&path).await.unwrap();
    s.append(batch("m", 0, evs.clone())).await.unwrap();
    s.close().await.unwrap();
    drop(s);
    // Make it exactly what a layout-1 build wrote: no watch table.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "DROP TABLE watch; UPDATE meta SET value = 1 WHERE name = 'schema_version';",
        )
        .unwrap();
    }
    let s = SqliteStore::open(&path).await.unwrap();
    assert_eq!(s.read_session("m", 0, 10).await.unwrap().events, evs);
    assert!(s.read_watch("ws", 0, 10).await.unwrap().events.is_empty());
    s.append(batch("m", 4, vec![event("m", 5, "a")]))
        .await
        .unwrap();
    s.close().await.unwrap();
    drop(s);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        let v: i64 = c
            .query_row(
                "SELECT value FROM meta WHERE name = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(v, 2);
    }
}

/// Damage written straight into the SQLite file, bypassing the store.
struct SqliteTamper;

impl narad_store::damage::Tamper for SqliteTamper {
    fn put_row(&self, path: &std::path::Path, session: &str, seq: u64, bytes: &[u8]) {
        let c = rusqlite::Connection::open(path).unwrap();
        let n = c
            .execute(
                "UPDATE events SET bytes = ?3 WHERE session = ?1 AND seq = ?2",
                rusqlite::params![session, seq as i64, bytes],
            )
            .unwrap();
        assert_eq!(n, 1);
    }
}

narad_store::damage_suite!(SqliteStore::open, SqliteTamper);

/// Another application's database is no store: every open refuses it
/// before any pragma or table could change it (a read command used to add
/// this layout's tables and switch the file to WAL).
#[tokio::test]
async fn another_applications_database_is_refused_and_left_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("crm.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO customers (name) VALUES ('alice');",
        )
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let refused = Some(StoreError::NotAStore {
        path: path.display().to_string(),
    });
    assert_eq!(SqliteStore::open(&path).await.err(), refused);
    assert_eq!(SqliteStore::open_existing(&path).await.err(), refused);
    assert_eq!(SqliteStore::open_read_only(&path).await.err(), refused);
    assert_eq!(refused.map(|e| e.code()), Some("not_a_store"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["crm.db"], "no WAL or shared-memory file either");
}
