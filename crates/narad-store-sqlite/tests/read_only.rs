//! The shared read-only case on a real sqlite file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use narad_store_sqlite::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_opened_read_only_reads_and_refuses_every_write() {
    let dir = tempfile::tempdir().unwrap();
    narad_store::suite_read_only::a_store_opened_read_only_reads_and_refuses_every_write(
        dir.path(),
        SqliteStore::open,
        SqliteStore::open_read_only,
    )
    .await;
}

/// An older layout is migrated only by a writable open: read-only, it is
/// refused by name, and the file is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_layout_is_refused_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    SqliteStore::open(&path).await.unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute(
        "UPDATE meta SET value = 1 WHERE name = 'schema_version'",
        [],
    )
    .unwrap();
    drop(c);
    let err = SqliteStore::open_read_only(&path).await.err().unwrap();
    assert_eq!(err.code(), "older_schema");
    assert!(
        err.to_string()
            .starts_with("layout 1 of this store needs migrating to "),
        "{err}"
    );
}
