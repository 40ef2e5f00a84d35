//! Durable appends through the `Store` trait on redb, beside this disk's raw
//! write + fdatasync loop and raw redb writing the same bytes without the
//! trait (one transaction per event). `NARAD_BENCH_QUICK=1` shortens it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::sync::Arc;
use std::time::Instant;

use narad_store::bench;
use narad_store_redb::RedbStore;

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let dir = tempfile::tempdir().unwrap();
    let raw_sync = bench::raw_fdatasync(dir.path(), 1024, if quick { 100 } else { 500 });
    let raw_redb = {
        let db = redb::Database::create(dir.path().join("raw.redb")).unwrap();
        let table = redb::TableDefinition::<u64, &[u8]>::new("raw");
        let evs = bench::events("raw", if quick { 100 } else { 500 });
        let t = Instant::now();
        for (i, e) in evs.iter().enumerate() {
            let tx = db.begin_write().unwrap();
            tx.open_table(table)
                .unwrap()
                .insert(i as u64, e.bytes.as_ref())
                .unwrap();
            tx.commit().unwrap();
        }
        evs.len() as f64 / t.elapsed().as_secs_f64()
    };
    println!(
        "raw write+fdatasync (1 KiB): {raw_sync:.0}/s; raw redb (1 event per txn): {raw_redb:.0}/s"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(
            RedbStore::open(dir.path().join("bench.redb"))
                .await
                .unwrap(),
        );
        bench::run_all("redb", store, quick, raw_sync, raw_redb, |s: &RedbStore| {
            Some(s.commit_stats())
        })
        .await;
    });
}
