//! The commit listener reconnects after its connection is killed: the
//! reconnect is counted (`narad_postgres_listen_reconnects_total`) and a
//! commit after it is still announced. One test per file: the metrics
//! recorder is process-global.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use narad_store::{Commit, Notice, Store};
use narad_store_postgres::PostgresStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_listener_reconnects_is_counted_and_still_announces() {
    if !common::ready() {
        return;
    }
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();
    let url = common::url().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = common::schema_for(dir.path());
    let store = PostgresStore::open(&url, &schema).await.unwrap();

    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let killed: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1",
            &[&format!("LISTEN narad_{schema}")],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 1, "the listener's connection was not found");

    let reconnects = || {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(k, ..)| k.key().name() == "narad_postgres_listen_reconnects_total")
            .map(|(.., v)| match v {
                DebugValue::Counter(c) => c,
                _ => 0,
            })
            .sum::<u64>()
    };
    let mut counted = 0;
    for _ in 0..100 {
        counted = reconnects();
        if counted > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(counted >= 1, "no reconnect was counted");

    // Commits after the reconnect are heard again (allow its backoff).
    let mut commits = store.subscribe();
    use narad_store::suite::{batch, event};
    let mut heard = false;
    for seq in 1..=20u64 {
        store
            .append(batch("s", seq - 1, vec![event("s", seq, "a")]))
            .await
            .unwrap();
        if let Ok(Some(Notice::Commit(Commit::Session { head, .. }))) =
            tokio::time::timeout(Duration::from_millis(500), commits.recv()).await
        {
            heard = head >= 1;
            break;
        }
    }
    assert!(heard, "no commit announced after the reconnect");
    store.close().await.unwrap();
}
