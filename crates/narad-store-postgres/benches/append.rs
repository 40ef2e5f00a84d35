//! Durable appends through the `Store` trait on PostgreSQL (the server at
//! `NARAD_TEST_POSTGRES_URL`, e.g. one started by `.ci/postgres start DIR`),
//! beside this disk's raw write + fdatasync loop and raw PostgreSQL
//! inserting the same bytes without the trait (one autocommit insert per
//! event). `NARAD_BENCH_QUICK=1` shortens it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::sync::Arc;
use std::time::Instant;

use narad_store::bench;
use narad_store_postgres::PostgresStore;

fn main() {
    let Ok(url) = std::env::var("NARAD_TEST_POSTGRES_URL") else {
        println!("SKIPPED postgres bench: NARAD_TEST_POSTGRES_URL is not set");
        return;
    };
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let dir = tempfile::tempdir().unwrap();
    let raw_sync = bench::raw_fdatasync(dir.path(), 1024, if quick { 100 } else { 500 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let schema = format!("bench_{}", std::process::id());
        let raw_pg = {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(conn);
            c.batch_execute(&format!(
                "CREATE SCHEMA {schema}_raw; CREATE TABLE {schema}_raw.raw (seq BIGINT PRIMARY KEY, bytes BYTEA NOT NULL)"
            ))
            .await
            .unwrap();
            let insert = c
                .prepare(&format!("INSERT INTO {schema}_raw.raw VALUES ($1, $2)"))
                .await
                .unwrap();
            let evs = bench::events("raw", if quick { 100 } else { 500 });
            let t = Instant::now();
            for (i, e) in evs.iter().enumerate() {
                c.execute(&insert, &[&(i as i64), &e.bytes.as_ref()]).await.unwrap();
            }
            evs.len() as f64 / t.elapsed().as_secs_f64()
        };
        println!("raw write+fdatasync (1 KiB): {raw_sync:.0}/s; raw postgres (1 insert per txn): {raw_pg:.0}/s");
        let store = Arc::new(PostgresStore::open(&url, &schema).await.unwrap());
        bench::run_all("postgres", store, quick, raw_sync, raw_pg, |_| None).await;
    });
}
