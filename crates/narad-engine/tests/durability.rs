//! Restart, two engines over one SQLite file, live attach, and the bounded
//! session cache — all on real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{assert_valid, engine, me, session, types};
use narad_engine::{
    AllowAll, Engine, EngineConfig, ManualClock, RandomIds, StartRun, Started, Terminal,
    ToolOutcome,
};
use narad_store::Store;
use serde_json::json;

fn finished() -> Terminal {
    Terminal::Finished {
        usage: Some(json!({"totalTokens": 3})),
        artifact_ids: vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_restarted_on_the_same_file_continues_every_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut sessions = Vec::new();
    {
        let e = engine(dir.path()).await;
        for _ in 0..5 {
            let sid = session(&e).await;
            let Started::Running(run) =
                e.start_run(&me(), &sid, StartRun::default()).await.unwrap()
            else {
                panic!()
            };
            let tool = e
                .start_tool_call(&me(), &sid, &run, "search", json!({"q": "x"}))
                .await
                .unwrap();
            sessions.push((sid, run, tool));
        }
        e.store().close().await.unwrap();
        // The engine is dropped mid-way: every run is open, every tool open.
    }
    // A new engine with random ids, so nothing depends on the old id counter.
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
    for (sid, run, tool) in &sessions {
        // The open work survived the restart: ending now is refused...
        assert_eq!(
            e.end_run(&me(), sid, run, finished())
                .await
                .unwrap_err()
                .code(),
            "open_work"
        );
        // ...and closing it continues the same journal.
        e.finish_tool_call(&me(), sid, tool, ToolOutcome::success(json!({"hits": 1})))
            .await
            .unwrap();
        e.end_run(&me(), sid, run, finished()).await.unwrap();
        assert_valid(&e, sid).await;
        assert_eq!(
            types(&e, sid).await,
            [
                "run.started",
                "tool.call.started",
                "tool.call.finished",
                "run.finished"
            ]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_engines_over_one_sqlite_file_stay_correct() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let open = || async {
        Engine::with_host(
            narad_store_sqlite::SqliteStore::open(&path).await.unwrap(),
            Arc::new(ManualClock::at_unix(1_780_000_000)),
            Arc::new(RandomIds),
            Arc::new(AllowAll),
            EngineConfig::default(),
        )
    };
    let (a, b) = (open().await, open().await);
    let sid = session(&a).await;
    let Started::Running(run) = a.start_run(&me(), &sid, StartRun::default()).await.unwrap() else {
        panic!()
    };
    // Both engines cached the session; each appends tool calls to it while
    // the other moves the head underneath: conflict → reload → re-check.
    b.message(&me(), &sid, json!("warm the cache"))
        .await
        .unwrap();
    let work = |e: Engine<narad_store_sqlite::SqliteStore>, sid: String, run: String| {
        tokio::spawn(async move {
            for i in 0..20 {
                let t = e
                    .start_tool_call(&me(), &sid, &run, "t", json!({ "i": i }))
                    .await
                    .unwrap();
                e.finish_tool_call(&me(), &sid, &t, ToolOutcome::success(json!(i)))
                    .await
                    .unwrap();
            }
        })
    };
    let (ta, tb) = (
        work(a.clone(), sid.clone(), run.clone()),
        work(b.clone(), sid.clone(), run.clone()),
    );
    ta.await.unwrap();
    tb.await.unwrap();
    // A start through one engine is seen by the other's slot check.
    assert_eq!(
        b.start_run(&me(), &sid, StartRun::default())
            .await
            .unwrap_err()
            .code(),
        "session_slot_busy"
    );
    a.end_run(&me(), &sid, &run, finished()).await.unwrap();
    let c = assert_valid(&b, &sid).await;
    assert_eq!(c.session_head(&sid), Some(1 + 1 + 80 + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_replays_then_follows_without_gap_or_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    for i in 0..5 {
        e.message(&me(), &sid, json!(format!("before {i}")))
            .await
            .unwrap();
    }
    let mut follow = e.subscribe(&me(), &sid, 2).await.unwrap();
    let writer = {
        let (e, sid) = (e.clone(), sid.clone());
        tokio::spawn(async move {
            for i in 0..40 {
                e.message(&me(), &sid, json!(format!("live {i}")))
                    .await
                    .unwrap();
            }
        })
    };
    let mut seen = Vec::new();
    while seen.len() < 43 {
        let ev = follow.next().await.unwrap().unwrap();
        seen.push(ev.position.session_sequence);
    }
    writer.await.unwrap();
    assert_eq!(seen, (3..=45).collect::<Vec<u64>>());
    assert_eq!(follow.cursor(), 45);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cache_is_bounded_and_cold_sessions_rehydrate() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_store_redb::RedbStore::open(dir.path().join("c.redb"))
        .await
        .unwrap();
    let e = Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            cached_sessions: 4,
            ..EngineConfig::default()
        },
    );
    let mut runs = Vec::new();
    for _ in 0..12 {
        let sid = session(&e).await;
        let Started::Running(run) = e.start_run(&me(), &sid, StartRun::default()).await.unwrap()
        else {
            panic!()
        };
        runs.push((sid, run));
        assert!(e.cached_sessions() <= 4, "{}", e.cached_sessions());
    }
    // The first sessions were evicted; their state comes back from the store.
    for (sid, run) in &runs {
        assert_eq!(
            e.start_run(&me(), sid, StartRun::default())
                .await
                .unwrap_err()
                .code(),
            "session_slot_busy"
        );
        e.end_run(&me(), sid, run, finished()).await.unwrap();
        assert_valid(&e, sid).await;
    }
    assert!(e.cached_sessions() <= 4);
    let _ = e.store().head(&runs[0].0).await.unwrap();
}
