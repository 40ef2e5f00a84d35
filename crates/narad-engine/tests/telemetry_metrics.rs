//! Metrics move: with a recorder installed for this test process, known
//! commands move the command counter by outcome code, the append latency
//! histogram, the store's group size, the session cache's hits, misses and
//! evictions, the hydrate time and the stored snapshots a hydrate refused,
//! by reason. (One test per file: the recorder is process-global.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use narad_store::Store;

use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use narad_engine::{
    AllowAll, Engine, EngineConfig, ManualClock, NewSession, SequentialIds, StartRun,
};
use narad_store_redb::RedbStore;

/// Every series of `name` whose labels include `labels`: (counter total,
/// histogram samples).
fn series(
    snapshot: &[(metrics_util::CompositeKey, DebugValue)],
    name: &str,
    labels: &[(&str, &str)],
) -> (u64, usize) {
    let mut out = (0, 0);
    for (key, value) in snapshot {
        let k = key.key();
        let has = labels
            .iter()
            .all(|(n, v)| k.labels().any(|l| l.key() == *n && l.value() == *v));
        if k.name() != name || !has {
            continue;
        }
        match value {
            DebugValue::Counter(c) => out.0 += c,
            DebugValue::Histogram(h) => out.1 += h.len(),
            DebugValue::Gauge(_) => {}
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_commands_move_the_metrics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("m.redb")).await.unwrap();
    // One cached session: switching sessions evicts and rehydrates.
    let config = EngineConfig {
        cached_sessions: 1,
        snapshot_every: 5,
        ..EngineConfig::default()
    };
    let e = Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        config,
    );
    let me = common::me();
    let a = e.create_session(&me, NewSession::default()).await.unwrap();
    let b = e.create_session(&me, NewSession::default()).await.unwrap();
    e.start_run(&me, &a, StartRun::default()).await.unwrap();
    e.start_run(&me, &a, StartRun::default()).await.unwrap_err();
    e.start_run(&me, &b, StartRun::default()).await.unwrap();
    for i in 0..5 {
        e.message(&me, &a, serde_json::json!(format!("m{i}")))
            .await
            .unwrap();
    }
    e.store().close().await.unwrap();

    // `a`'s stored snapshot, as an earlier build's layout and then cut:
    // each reopened engine replays `a` and counts why under its reason.
    let store = RedbStore::open(dir.path().join("m.redb")).await.unwrap();
    let good = common::snapshot_of(&store, &a).await;
    store.close().await.unwrap();
    for bad in [
        common::earlier_layout(&good),
        good[..good.len() / 2].to_vec(),
    ] {
        let store = RedbStore::open(dir.path().join("m.redb")).await.unwrap();
        common::put_snapshot(&store, &a, bad).await;
        let e = Engine::with_host(
            store,
            Arc::new(ManualClock::at_unix(1_780_000_000)),
            Arc::new(SequentialIds::default()),
            Arc::new(AllowAll),
            EngineConfig::default(),
        );
        e.state_json(&me, &a).await.unwrap();
        e.store().close().await.unwrap();
    }

    let snapshot: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k, v))
        .collect();
    let ok = series(
        &snapshot,
        "narad_commands_total",
        &[("command", "start_run"), ("outcome", "ok")],
    );
    assert_eq!(ok.0, 2);
    let refused = series(
        &snapshot,
        "narad_commands_total",
        &[("command", "start_run")],
    )
    .0 - ok.0;
    assert_eq!(refused, 1, "the refused start is counted under its code");
    assert_eq!(series(&snapshot, "narad_retries_total", &[]).0, 0);
    assert!(series(&snapshot, "narad_append_seconds", &[]).1 >= 4);
    assert!(series(&snapshot, "narad_store_group_size", &[]).1 >= 4);
    assert!(series(&snapshot, "narad_store_commit_seconds", &[]).1 >= 4);
    assert!(series(&snapshot, "narad_session_cache_hits_total", &[]).0 >= 1);
    assert!(series(&snapshot, "narad_session_cache_misses_total", &[]).0 >= 2);
    assert!(series(&snapshot, "narad_session_cache_evictions_total", &[]).0 >= 1);
    assert!(series(&snapshot, "narad_hydrate_seconds", &[("from", "full")]).1 >= 2);
    let refused = |reason| {
        series(
            &snapshot,
            "narad_snapshots_refused_total",
            &[("reason", reason)],
        )
        .0
    };
    assert_eq!(refused("earlier_layout"), 1);
    assert_eq!(refused("checksum"), 1, "the cut record");
    assert_eq!(series(&snapshot, "narad_snapshots_refused_total", &[]).0, 2);
}
