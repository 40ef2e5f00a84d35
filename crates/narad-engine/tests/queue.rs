//! The durable queue of top-level starts: it survives a restart and a
//! reset of the session cache, keeps its order, starts each entry exactly
//! once, and is started by whichever engine frees the slot — on real redb
//! and SQLite files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{assert_valid, engine, me, session, types};
use narad_engine::{
    AllowAll, Engine, EngineConfig, ManualClock, RandomIds, StartRun, Started, Terminal,
};
use narad_store::{SideSpace, Store};
use narad_store_sqlite::SqliteStore;
use serde_json::json;

fn finished() -> Terminal {
    Terminal::Finished {
        usage: Some(json!({"totalTokens": 1})),
        artifact_ids: vec![],
    }
}

fn queued() -> StartRun {
    StartRun {
        queue_if_busy: true,
        ..StartRun::default()
    }
}

async fn run<S: Store + 'static>(e: &Engine<S>, sid: &str, start: StartRun) -> Started {
    e.start_run(&me(), sid, start).await.unwrap()
}

fn running(s: Started) -> String {
    match s {
        Started::Running(r) => r,
        other => panic!("{other:?}"),
    }
}

fn waiting(s: Started) -> String {
    match s {
        Started::Queued(r) => r,
        other => panic!("{other:?}"),
    }
}

async fn queue_records<S: Store>(store: &S) -> usize {
    store
        .list_side(SideSpace::Queue, None, usize::MAX)
        .await
        .unwrap()
        .len()
}

/// `run.started` events of `run` in the session.
async fn starts_of<S: Store + 'static>(e: &Engine<S>, sid: &str, run: &str) -> usize {
    common::journal(e, sid)
        .await
        .iter()
        .filter(|b| {
            let v: serde_json::Value = serde_json::from_slice(b).unwrap();
            v["type"] == "run.started" && v["runId"] == run
        })
        .count()
}

async fn sqlite_engine(path: &std::path::Path) -> Engine<SqliteStore> {
    Engine::with_host(
        SqliteStore::open(path).await.unwrap(),
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig::default(),
    )
}

#[tokio::test]
async fn a_queued_start_survives_a_restart_and_starts_once_when_the_slot_frees() {
    let dir = tempfile::tempdir().unwrap();
    let (sid, first, next) = {
        let e = engine(dir.path()).await;
        let sid = session(&e).await;
        let first = running(run(&e, &sid, StartRun::default()).await);
        let next = waiting(run(&e, &sid, queued()).await);
        e.store().close().await.unwrap();
        (sid, first, next)
    };
    // A new engine on the same file that never saw the queue.
    let store = narad_store_redb::RedbStore::open(dir.path().join("engine.redb"))
        .await
        .unwrap();
    let e = Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_100)),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig::default(),
    );
    assert_eq!(queue_records(e.store()).await, 1);
    e.end_run(&me(), &sid, &first, finished()).await.unwrap();
    assert_eq!(
        types(&e, &sid).await,
        ["run.started", "run.finished", "run.started"]
    );
    assert!(assert_valid(&e, &sid).await.run(&sid, &next).is_some());
    assert_eq!(queue_records(e.store()).await, 0);
    // A later pass finds nothing left to start.
    e.drain_queue(&me(), &sid).await.unwrap();
    assert_eq!(starts_of(&e, &sid, &next).await, 1);
}

#[tokio::test]
async fn a_queued_start_survives_another_writer_resetting_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let a = sqlite_engine(&path).await;
    let b = sqlite_engine(&path).await;
    let sid = session(&a).await;
    let first = running(run(&a, &sid, StartRun::default()).await);
    let next = waiting(run(&a, &sid, queued()).await);
    // Another engine moves the head: `a`'s cached journal is stale, and its
    // next command resets it (the old in-memory queue was dropped here).
    let tool = b
        .start_tool_call(&me(), &sid, &first, "t", json!({}))
        .await
        .unwrap();
    b.finish_tool_call(
        &me(),
        &sid,
        &tool,
        narad_engine::ToolOutcome::success(json!(1)),
    )
    .await
    .unwrap();
    a.end_run(&me(), &sid, &first, finished()).await.unwrap();
    assert_eq!(starts_of(&a, &sid, &next).await, 1);
    assert!(assert_valid(&a, &sid).await.run(&sid, &next).is_some());
    assert_eq!(queue_records(a.store()).await, 0);
}

#[tokio::test]
async fn a_queued_start_survives_eviction_from_the_bounded_cache() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::with_host(
        narad_store_redb::RedbStore::open(dir.path().join("engine.redb"))
            .await
            .unwrap(),
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            cached_sessions: 1,
            ..EngineConfig::default()
        },
    );
    let sid = session(&e).await;
    let first = running(run(&e, &sid, StartRun::default()).await);
    let next = waiting(run(&e, &sid, queued()).await);
    // Other sessions push this one out of the one-entry cache.
    for _ in 0..3 {
        let other = session(&e).await;
        run(&e, &other, StartRun::default()).await;
    }
    let before = e.stats().hydrations;
    e.end_run(&me(), &sid, &first, finished()).await.unwrap();
    assert!(e.stats().hydrations > before, "the session was evicted");
    assert_eq!(starts_of(&e, &sid, &next).await, 1);
}

#[tokio::test]
async fn two_queued_starts_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let first = running(run(&e, &sid, StartRun::default()).await);
    let second = waiting(run(&e, &sid, queued()).await);
    let third = waiting(run(&e, &sid, queued()).await);
    e.end_run(&me(), &sid, &first, finished()).await.unwrap();
    assert_eq!(starts_of(&e, &sid, &second).await, 1);
    assert_eq!(starts_of(&e, &sid, &third).await, 0);
    e.stop(&me(), &sid, narad_engine::StopTarget::ActiveRoot)
        .await
        .unwrap();
    assert_eq!(starts_of(&e, &sid, &third).await, 1);
    let c = assert_valid(&e, &sid).await;
    assert!(c.run(&sid, &third).is_some());
    assert_eq!(queue_records(e.store()).await, 0);
}

#[tokio::test]
async fn another_engine_on_the_same_sqlite_file_frees_the_slot_and_starts_the_queued_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let a = sqlite_engine(&path).await;
    let b = sqlite_engine(&path).await;
    let sid = session(&a).await;
    let first = running(run(&a, &sid, StartRun::default()).await);
    let next = waiting(run(&a, &sid, queued()).await);
    b.end_run(&me(), &sid, &first, finished()).await.unwrap();
    assert_eq!(starts_of(&b, &sid, &next).await, 1);
    // `a` ends the run `b` started: the queue stays empty, nothing restarts.
    a.end_run(&me(), &sid, &next, finished()).await.unwrap();
    assert_eq!(starts_of(&a, &sid, &next).await, 1);
    assert_valid(&a, &sid).await;
    assert_eq!(queue_records(a.store()).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_queued_while_another_engine_frees_the_slot_is_never_stranded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.sqlite");
    let a = Arc::new(sqlite_engine(&path).await);
    let b = Arc::new(sqlite_engine(&path).await);
    for _ in 0..10 {
        let sid = session(&*a).await;
        let first = running(run(&*a, &sid, StartRun::default()).await);
        let (qa, qs) = (Arc::clone(&a), sid.clone());
        let queuer = tokio::spawn(async move { qa.start_run(&me(), &qs, queued()).await });
        let (eb, es, ef) = (Arc::clone(&b), sid.clone(), first.clone());
        let ender = tokio::spawn(async move { eb.end_run(&me(), &es, &ef, finished()).await });
        let started = queuer.await.unwrap().unwrap();
        ender.await.unwrap().unwrap();
        let id = match &started {
            Started::Running(r) | Started::Queued(r) => r.clone(),
        };
        // Either it started at once or the batch that freed the slot
        // started it; either way exactly once, and nothing is left queued.
        assert_eq!(starts_of(&*a, &sid, &id).await, 1, "{started:?}");
        assert_valid(&*a, &sid).await;
    }
    assert_eq!(queue_records(a.store()).await, 0);
}

/// Lets `ender` do anything but start runs.
#[derive(Debug)]
struct NoStartsForEnder;

impl narad_engine::Authorizer for NoStartsForEnder {
    fn allows(&self, p: &narad_engine::Principal, action: narad_engine::Action<'_>) -> bool {
        !matches!(
            action,
            narad_engine::Action::Write {
                event_type: "run.started",
                ..
            } if p.0 == "ender"
        )
    }
}

#[tokio::test]
async fn a_principal_that_may_not_start_runs_frees_the_slot_and_the_queue_waits_for_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::with_host(
        narad_store_redb::RedbStore::open(dir.path().join("engine.redb"))
            .await
            .unwrap(),
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(RandomIds),
        Arc::new(NoStartsForEnder),
        EngineConfig::default(),
    );
    let sid = session(&e).await;
    let first = running(run(&e, &sid, StartRun::default()).await);
    let next = waiting(run(&e, &sid, queued()).await);
    let ender = narad_engine::Principal::new("ender");
    e.end_run(&ender, &sid, &first, finished()).await.unwrap();
    // Its batch carried only what it may append.
    assert_eq!(types(&e, &sid).await, ["run.started", "run.finished"]);
    assert_eq!(queue_records(e.store()).await, 1);
    e.drain_queue(&me(), &sid).await.unwrap();
    assert_eq!(starts_of(&e, &sid, &next).await, 1);
    assert_eq!(queue_records(e.store()).await, 0);
}

#[tokio::test]
async fn an_import_that_frees_the_slot_starts_the_queued_run() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let first = running(run(&e, &sid, StartRun::default()).await);
    let next = waiting(run(&e, &sid, queued()).await);
    let head = common::journal(&e, &sid).await.len();
    // The active run's terminal, produced elsewhere and imported.
    let finish = format!(
        r#"{{"type":"run.finished","protocolVersion":"narad/v1","eventId":"imported-finish","timestamp":"2026-08-05T00:00:00Z","sessionId":"{sid}","sessionSequence":{},"rootRunId":"{first}","runId":"{first}","sequence":2}}"#,
        head + 1
    );
    assert_eq!(e.import(&me(), &[finish.into_bytes()]).await.unwrap().1, 1);
    assert_eq!(starts_of(&e, &sid, &next).await, 1);
    assert_eq!(queue_records(e.store()).await, 0);
    assert!(assert_valid(&e, &sid).await.run(&sid, &next).is_some());
}
