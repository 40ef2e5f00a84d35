//! The redb backend runs the shared store suite on real files, plus the
//! checks specific to its file format.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_store::StoreError;
use narad_store_redb::RedbStore;

narad_store::store_suite!(RedbStore::open);

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
            supported: 1
        }
    );
    assert_eq!(err.code(), "newer_schema");
}
