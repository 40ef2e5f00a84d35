//! Retention on a real redb file: by age and by count per workspace,
//! dry run, open work kept unless forced, and applied by the timer driver.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use narad_engine::{
    AllowAll, Engine, EngineConfig, ManualClock, NewSession, Principal, RetentionPolicy,
    SequentialIds, StartRun,
};
use narad_store::Store;

fn me() -> Principal {
    Principal::new("tester")
}

async fn create(e: &Engine<narad_store_redb::RedbStore>, sid: &str, ws: &str) {
    let new = NewSession {
        session_id: Some(sid.into()),
        workspace_id: Some(ws.into()),
        ..NewSession::default()
    };
    e.create_session(&me(), new).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_by_age_and_count_and_keeps_open_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    let e = Engine::with_host(
        store,
        clock.clone(),
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        EngineConfig::default(),
    );
    // Day 0: an idle session and a busy one; day 10: three in workspace b.
    create(&e, "old-idle", "a").await;
    create(&e, "old-busy", "a").await;
    e.start_run(&me(), "old-busy", StartRun::default())
        .await
        .unwrap();
    clock.advance(Duration::from_secs(10 * 86_400));
    for sid in ["b-1", "b-2", "b-3"] {
        create(&e, sid, "b").await;
        clock.advance(Duration::from_secs(60));
    }
    e.message(&me(), "b-1", "newest activity").await.unwrap();

    let by_age = RetentionPolicy {
        max_idle: Some(Duration::from_secs(7 * 86_400)),
        ..RetentionPolicy::default()
    };
    let dry = e.prune(&me(), &by_age, true).await.unwrap();
    assert_eq!(dry.deleted, ["old-idle"]);
    assert_eq!(
        dry.kept,
        [("old-busy".to_owned(), "status running".to_owned())]
    );
    assert!(
        e.index_entry("old-idle").await.unwrap().is_some(),
        "dry run deleted"
    );

    let by_count = RetentionPolicy {
        max_sessions_per_workspace: Some(2),
        ..RetentionPolicy::default()
    };
    // b-2 is the least recently active of workspace b (b-1 had a message).
    let done = e.prune(&me(), &by_count, false).await.unwrap();
    assert_eq!(done.deleted, ["b-2"]);
    assert!(done.kept.is_empty());
    let tomb = e
        .store()
        .side(narad_store::SideSpace::Tombstone, "b-2")
        .await;
    assert!(tomb.unwrap().is_some());

    // The timer driver applies the policy on its pass.
    e.set_retention(Some(by_age.clone()));
    e.fire_due_timers().await.unwrap();
    assert!(e.index_entry("old-idle").await.unwrap().is_none());
    assert!(e.index_entry("old-busy").await.unwrap().is_some());
    // Forced, open work goes too.
    e.set_retention(Some(RetentionPolicy {
        force: true,
        ..by_age
    }));
    e.fire_due_timers().await.unwrap();
    assert!(e.index_entry("old-busy").await.unwrap().is_none());
    let left: Vec<String> = e.store().list_sessions(None, 10).await.unwrap();
    assert_eq!(left, ["b-1"]);
    assert!(e.index_entry("b-3").await.unwrap().is_some());
}
