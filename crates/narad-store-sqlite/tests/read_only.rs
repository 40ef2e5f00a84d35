//! A read-only open of an older SQLite layout (the shared read-only case
//! runs in `store.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use narad_store_sqlite::SqliteStore;

/// An older layout is migrated only by a writable open: read-only, it is
/// refused by name.
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
