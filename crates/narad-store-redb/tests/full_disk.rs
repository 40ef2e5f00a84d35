//! The shared full-disk case on a real redb file: a write that does not fit
//! is refused whole, and once there is room the same open store writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use narad_store::suite_full::{
    a_full_disk_refuses_a_write_and_room_lets_the_store_write_again, FULL_CHILD_ENV,
};
use narad_store_redb::RedbStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_a_write_and_room_lets_the_store_write_again_on_redb() {
    if std::env::var_os(FULL_CHILD_ENV).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    a_full_disk_refuses_a_write_and_room_lets_the_store_write_again(
        dir.path(),
        "full_disk_child_process",
    )
    .await;
}

/// Works only as the child of the case above, which starts it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_child_process() {
    if let Some(dir) = std::env::var_os(FULL_CHILD_ENV) {
        narad_store::suite_full::full_disk_child(dir.into(), RedbStore::open).await;
    }
}
