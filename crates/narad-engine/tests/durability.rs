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
    // `a` held the session at head 1 when `b` appended at 2: at least its
    // first command went through conflict → reload → re-check.
    assert!(a.stats().retries >= 1, "{:?}", a.stats());
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

fn engine_at(
    store: narad_store_redb::RedbStore,
    secs: u64,
    snapshot_every: u64,
) -> (Engine<narad_store_redb::RedbStore>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_unix(secs));
    let e = Engine::with_host(
        store,
        clock.clone(),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            snapshot_every,
            ..EngineConfig::default()
        },
    );
    (e, clock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_session_hydrates_from_its_snapshot_plus_the_tail() {
    use narad_engine::{Clock, Interrupt, InterruptScope};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.redb");
    let (sid, run) = {
        let (e, clock) = engine_at(
            narad_store_redb::RedbStore::open(&path).await.unwrap(),
            1_780_000_000,
            5,
        );
        let sid = session(&e).await;
        let Started::Running(run) = e.start_run(&me(), &sid, StartRun::default()).await.unwrap()
        else {
            panic!()
        };
        e.request_interrupt(
            &me(),
            &sid,
            Interrupt {
                scope: InterruptScope::Run(run.clone()),
                kind: "approval".into(),
                actions: vec!["approve".into()],
                input: None,
                expires_at: Some((clock.now() + std::time::Duration::from_secs(10)).into()),
                title: None,
            },
        )
        .await
        .unwrap();
        for i in 0..9 {
            e.message(&me(), &sid, json!(format!("m{i}")))
                .await
                .unwrap();
        }
        e.store().close().await.unwrap();
        (sid, run)
    };
    // 12 events; the snapshot was written with the batch that reached 5 and
    // again at 10, so the tail is 2 events.
    let store = narad_store_redb::RedbStore::open(&path).await.unwrap();
    let snap = store
        .side(narad_store::SideSpace::Snapshot, &sid)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(u64::from_be_bytes(snap[..8].try_into().unwrap()), 10);
    let (e, clock) = engine_at(store, 1_780_000_000, 5);
    let from_snapshot = e.state_json(&me(), &sid).await.unwrap();
    assert_eq!(e.stats().from_snapshot, 1);
    // Exactly the state a full replay gives.
    let replayed = assert_valid(&e, &sid).await.state_json(&sid).unwrap();
    assert_eq!(from_snapshot, replayed);
    // The expiry requested before the snapshot survived in it.
    clock.advance(std::time::Duration::from_secs(11));
    assert_eq!(e.expire_due(&me()).await.unwrap().len(), 1);
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    assert_valid(&e, &sid).await;

    // A damaged snapshot is not trusted: the session replays from the start.
    e.store().close().await.unwrap();
    drop(e);
    let store = narad_store_redb::RedbStore::open(&path).await.unwrap();
    store
        .append(narad_store::Batch {
            session_id: sid.clone(),
            expected_head: store.head(&sid).await.unwrap(),
            side: vec![narad_store::SideWrite {
                space: narad_store::SideSpace::Snapshot,
                key: sid.clone(),
                expect: narad_store::Expect::Any,
                value: Some(bytes::Bytes::from_static(b"\0\0\0\0\0\0\0\x03garbage")),
            }],
            ..narad_store::Batch::default()
        })
        .await
        .unwrap();
    let (e, _) = engine_at(store, 1_780_000_100, 0);
    let again = e.state_json(&me(), &sid).await.unwrap();
    assert_eq!(
        e.stats(),
        narad_engine::EngineStats {
            hydrations: 1,
            from_snapshot: 0,
            retries: 0,
            snapshots_rejected: 1,
            snapshots_earlier: 0,
        }
    );
    assert_eq!(
        again,
        assert_valid(&e, &sid).await.state_json(&sid).unwrap()
    );
}
