//! The shared store suite on PostgreSQL (a real server), plus the checks
//! specific to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

narad_store::store_suite!(common::open, unless common::ready());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_from_a_newer_layout_is_refused_and_an_older_one_migrates() {
    if !common::ready() {
        return;
    }
    use narad_store::suite::{batch, event};
    use narad_store::Store;
    let url = common::url().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = common::schema_for(dir.path());
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    let evs: Vec<_> = (1..=3).map(|i| event("m", i, "a")).collect();
    s.append(batch("m", 0, evs.clone())).await.unwrap();
    s.close().await.unwrap();
    let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    // Exactly what a layout-1 build wrote: no watch tables.
    c.batch_execute(&format!(
        "DROP TABLE {schema}.watch, {schema}.watch_heads;
         UPDATE {schema}.meta SET value = 1 WHERE name = 'schema_version'"
    ))
    .await
    .unwrap();
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    assert_eq!(s.read_session("m", 0, 10).await.unwrap().events, evs);
    assert!(s.read_watch("ws", 0, 10).await.unwrap().events.is_empty());
    s.close().await.unwrap();
    c.batch_execute(&format!(
        "UPDATE {schema}.meta SET value = 99 WHERE name = 'schema_version'"
    ))
    .await
    .unwrap();
    let err = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        narad_store::StoreError::NewerSchema {
            found: 99,
            supported: narad_store_postgres::SCHEMA_VERSION as u32
        }
    );
}
