//! Space reclaimed on sqlite: 10k sessions (1k with `NARAD_BENCH_QUICK=1`)
//! of 20 events, 90% deleted, then the backend's compaction; prints the
//! file size after each step.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use narad_store::bench_reclaim;
use narad_store_sqlite::SqliteStore;

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(bench_reclaim::reclaim(
        &dir.path().join("reclaim.sqlite"),
        SqliteStore::open,
        SqliteStore::compact,
        if quick { 1_000 } else { 10_000 },
        20,
    ));
    bench_reclaim::print("sqlite", &r);
}
