//! Durable appends through the `Store` trait on SQLite (WAL,
//! synchronous=FULL), beside this disk's raw write + fdatasync loop and raw
//! SQLite inserting the same bytes without the trait (one autocommit
//! insert per event, same pragmas). `NARAD_BENCH_QUICK=1` shortens it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::sync::Arc;
use std::time::Instant;

use narad_store::bench;
use narad_store_sqlite::SqliteStore;

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let dir = tempfile::tempdir().unwrap();
    let raw_sync = bench::raw_fdatasync(dir.path(), 1024, if quick { 100 } else { 500 });
    let raw_sqlite = {
        let c = rusqlite::Connection::open(dir.path().join("raw.sqlite")).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c.execute(
            "CREATE TABLE raw (seq INTEGER PRIMARY KEY, bytes BLOB NOT NULL)",
            [],
        )
        .unwrap();
        let evs = bench::events("raw", if quick { 100 } else { 500 });
        let t = Instant::now();
        for (i, e) in evs.iter().enumerate() {
            c.execute(
                "INSERT INTO raw VALUES (?1, ?2)",
                rusqlite::params![i as i64, e.bytes.as_ref()],
            )
            .unwrap();
        }
        evs.len() as f64 / t.elapsed().as_secs_f64()
    };
    println!("raw write+fdatasync (1 KiB): {raw_sync:.0}/s; raw sqlite (1 insert per txn): {raw_sqlite:.0}/s");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(
            SqliteStore::open(dir.path().join("bench.sqlite"))
                .await
                .unwrap(),
        );
        bench::run_all(
            "sqlite",
            store,
            quick,
            raw_sync,
            raw_sqlite,
            |s: &SqliteStore| Some(s.commit_stats()),
        )
        .await;
    });
}
