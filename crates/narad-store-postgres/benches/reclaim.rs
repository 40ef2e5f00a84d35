//! Space after deleting 90% of 10k sessions on PostgreSQL (1k with
//! `NARAD_BENCH_QUICK=1`): the schema's total relation size when full,
//! after the deletes (plain `DELETE`s, as the store does them) and after a
//! plain `VACUUM` (no `FULL`: the space is reusable, the files keep their
//! size). Needs `NARAD_TEST_POSTGRES_URL`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::path::PathBuf;

use narad_store::bench_reclaim;
use narad_store_postgres::PostgresStore;

async fn client(url: &str) -> tokio_postgres::Client {
    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    c
}

fn main() {
    let Ok(url) = std::env::var("NARAD_TEST_POSTGRES_URL") else {
        println!("SKIPPED: NARAD_TEST_POSTGRES_URL is not set");
        return;
    };
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let schema = format!("reclaim_{}", std::process::id());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(async {
        let (u1, u2, u3) = (url.clone(), url.clone(), url.clone());
        let s1 = schema.clone();
        let s2 = schema.clone();
        let s3 = schema.clone();
        bench_reclaim::reclaim_measured(
            &PathBuf::from(&schema),
            move |_| {
                let (u, s) = (u1.clone(), s1.clone());
                async move { PostgresStore::open(&u, &s).await }
            },
            move |_| {
                let (u, s) = (u2.clone(), s2.clone());
                async move {
                    let c = client(&u).await;
                    for t in ["events", "heads", "side"] {
                        c.batch_execute(&format!("VACUUM {s}.{t}")).await.unwrap();
                    }
                    Ok(())
                }
            },
            move |_| {
                let (u, s) = (u3.clone(), s3.clone());
                async move {
                    let c = client(&u).await;
                    let row = c
                        .query_one(
                            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::BIGINT
                             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                             WHERE n.nspname = $1 AND c.relkind = 'r'",
                            &[&s],
                        )
                        .await
                        .unwrap();
                    u64::try_from(row.get::<_, i64>(0)).unwrap()
                }
            },
            if quick { 1_000 } else { 10_000 },
            20,
        )
        .await
    });
    bench_reclaim::print("postgres (VACUUM, not FULL)", &r);
    rt.block_on(async {
        client(&url)
            .await
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    });
}
