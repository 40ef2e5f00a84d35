//! A damaged store (issue 13, finding 6): rows 1024 and 1025 of a session
//! overwritten with row 1's bytes made `Journal::hydrate` re-read from a
//! cursor taken from those bytes, forever. Now every command on the
//! session fails with the typed `corrupt` error, and other sessions work.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{engine, me, session};
use narad_store::Store;
use serde_json::json;

const EVENTS: redb::TableDefinition<(&str, u64), &[u8]> = redb::TableDefinition::new("events");

/// Fails the test instead of hanging it (a guard, not a speed assertion).
async fn ends<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("the engine never answered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_1024_and_1025_holding_row_1_are_corrupt_not_a_spin() {
    let dir = tempfile::tempdir().unwrap();
    let (sid, other) = {
        let e = engine(dir.path()).await;
        let sid = session(&e).await;
        let other = session(&e).await;
        while e.store().head(&sid).await.unwrap() < 1030 {
            e.message(&me(), &sid, json!("hello")).await.unwrap();
        }
        e.store().close().await.unwrap();
        (sid, other)
    };
    {
        use redb::ReadableDatabase;
        let db = redb::Database::open(dir.path().join("engine.redb")).unwrap();
        let first = {
            let tx = db.begin_read().unwrap();
            let t = tx.open_table(EVENTS).unwrap();
            let v = t.get((sid.as_str(), 1)).unwrap().unwrap().value().to_vec();
            v
        };
        let tx = db.begin_write().unwrap();
        {
            let mut t = tx.open_table(EVENTS).unwrap();
            t.insert((sid.as_str(), 1024), first.as_slice()).unwrap();
            t.insert((sid.as_str(), 1025), first.as_slice()).unwrap();
        }
        tx.commit().unwrap();
    }
    let e = engine(dir.path()).await;
    let err = ends(e.message(&me(), &sid, json!("again")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "corrupt", "{err}");
    assert!(err.to_string().contains("position 1024"), "{err}");
    let err = ends(e.history(
        &me(),
        &sid,
        &narad_store::HistoryQuery::default().after_session_sequence(1000),
    ))
    .await
    .unwrap_err();
    assert_eq!(err.code(), "corrupt", "{err}");
    // The undamaged session is untouched.
    ends(e.message(&me(), &other, json!("fine"))).await.unwrap();
}
