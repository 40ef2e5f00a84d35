//! The shared read-only case on a real redb file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use narad_store_redb::RedbStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_opened_read_only_reads_and_refuses_every_write() {
    let dir = tempfile::tempdir().unwrap();
    narad_store::suite_read_only::a_store_opened_read_only_reads_and_refuses_every_write(
        dir.path(),
        RedbStore::open,
        RedbStore::open_read_only,
    )
    .await;
}
