//! The SQLite backend runs the shared store suite on real database files,
//! plus the checks specific to its file format.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_store::StoreError;
use narad_store_sqlite::SqliteStore;

narad_store::store_suite!(SqliteStore::open);

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
            supported: 1
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
