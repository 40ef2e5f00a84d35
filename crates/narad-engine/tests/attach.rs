//! Attach with hydrate records, watch events, and the workspace stream:
//! everything the engine emits beside authority is accepted by the
//! narad-core checker together with the authority it covers (and by the
//! published schemas when `../shared/narad-spec` is present).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{engine, journal, me, running, schema_valid, session};
use narad_core::checker::Checker;
use narad_engine::{NewSession, Terminal, ToolOutcome};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_hydrates_transcript_and_graph_then_follows_from_the_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    e.message(&me(), &sid, json!("hello")).await.unwrap();
    let run = running(&e, &sid).await;
    let child = common::child_of(&e, &sid, &run).await;
    let tool = e
        .start_tool_call(&me(), &sid, &child, "search", json!({}))
        .await
        .unwrap();
    let mut attached = e.attach(&me(), &sid).await.unwrap();
    assert_eq!(attached.capabilities.session_sequence, 4);
    let kinds: Vec<String> = attached
        .hydrate
        .iter()
        .map(|b| {
            serde_json::from_slice::<Value>(b).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["messages.snapshot", "graph.snapshot"]);
    let snapshot: Value = serde_json::from_slice(&attached.hydrate[0]).unwrap();
    assert_eq!(snapshot["messages"][0]["content"], "hello");
    assert_eq!(snapshot["coversThroughSessionSequence"], 4);

    // The checker, with canonical graphs, accepts authority + hydrate.
    let mut c = Checker::default().with_canonical_graphs();
    for b in journal(&e, &sid).await {
        c.push_bytes(&b).unwrap();
    }
    let s = common::schemas("engine_records_validate_against_schemas");
    for h in &attached.hydrate {
        c.push_bytes(h)
            .unwrap_or_else(|r| panic!("{r}: {}", String::from_utf8_lossy(h)));
        schema_valid(&s, h);
    }
    // Live from the boundary: the next event is sequence 5.
    e.finish_tool_call(&me(), &sid, &tool, ToolOutcome::success(json!(1)))
        .await
        .unwrap();
    let next = attached.follow.next().await.unwrap().unwrap();
    assert_eq!(next.position.session_sequence, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_coalesce_carry_cursors_and_replay_with_the_same_ids() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    for i in 0..8 {
        let t = e
            .start_tool_call(&me(), &sid, &run, "t", json!({"i": i}))
            .await
            .unwrap();
        e.finish_tool_call(&me(), &sid, &t, ToolOutcome::success(json!(i)))
            .await
            .unwrap();
    }
    // 17 events before the first poll: one run.revision, one session.revision.
    let mut w = e.watch(&me(), &sid, 0).await.unwrap();
    let a: Value = serde_json::from_slice(&w.next().await.unwrap().unwrap()).unwrap();
    let b: Value = serde_json::from_slice(&w.next().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        (a["type"].as_str(), a["revision"].as_u64()),
        (Some("run.revision"), Some(17))
    );
    assert_eq!(
        a["cursor"],
        json!({"kind": "run", "rootRunId": run, "sequence": 17})
    );
    assert_eq!(
        (b["type"].as_str(), b["revision"].as_u64()),
        (Some("session.revision"), Some(17))
    );
    assert_eq!(w.cursor(), 17);
    // Live: the next commit gives the next pair.
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Cancelled {
            code: None,
            message: None,
            usage: None,
        },
    )
    .await
    .unwrap();
    let c1: Value = serde_json::from_slice(&w.next().await.unwrap().unwrap()).unwrap();
    let c2: Value = serde_json::from_slice(&w.next().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        (c1["revision"].as_u64(), c2["revision"].as_u64()),
        (Some(18), Some(18))
    );
    // Replay from 0 again: same ids for the same notification.
    let mut again = e.watch(&me(), &sid, 0).await.unwrap();
    let r: Value = serde_json::from_slice(&again.next().await.unwrap().unwrap()).unwrap();
    assert_eq!(r["eventId"], json!(format!("watch:run:{run}:18")));
    // Authority, then the watch events that cover it: the checker accepts.
    let mut c = Checker::default();
    for ev in journal(&e, &sid).await {
        c.push_bytes(&ev).unwrap();
    }
    let s = common::schemas("engine_records_validate_against_schemas");
    for v in [&a, &b, &c1, &c2, &r] {
        let bytes = serde_json::to_vec(v).unwrap();
        c.push_bytes(&bytes).unwrap_or_else(|e| panic!("{e}: {v}"));
        schema_valid(&s, &bytes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_stream_announces_created_updated_archived() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let new = |id: &str| NewSession {
        session_id: Some(id.into()),
        workspace_id: Some("ws-1".into()),
        ..NewSession::default()
    };
    e.create_session(&me(), new("a")).await.unwrap();
    e.create_session(&me(), new("b")).await.unwrap();
    assert_eq!(e.announce_session(&me(), "a", false).await.unwrap(), 3);
    assert_eq!(e.announce_session(&me(), "a", true).await.unwrap(), 4);
    // A second engine on the same store knows no revision yet: the store
    // tells it the current one and it lands after it.
    let other = narad_engine::Engine::new(e.store().clone());
    assert_eq!(other.announce_session(&me(), "b", false).await.unwrap(), 5);
    let page = e.workspace_watch(&me(), "ws-1", 0, 100).await.unwrap();
    let types: Vec<String> = page
        .events
        .iter()
        .map(|w| {
            serde_json::from_slice::<Value>(&w.bytes).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "session.created",
            "session.created",
            "session.updated",
            "session.archived",
            "session.updated"
        ]
    );
    let mut c = Checker::default();
    let s = common::schemas("engine_records_validate_against_schemas");
    for w in &page.events {
        c.push_bytes(&w.bytes).unwrap();
        schema_valid(&s, &w.bytes);
    }
    assert_eq!(
        e.announce_session(&me(), &session(&e).await, true)
            .await
            .unwrap_err()
            .code(),
        "invalid_command"
    );
}
