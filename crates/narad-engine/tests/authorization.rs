//! The authorization hook sees every event type of every batch, client
//! controls with their session, and reads honor `may_debug` — on real
//! redb files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::session;
use narad_engine::{
    Action, Authorizer, Engine, EngineConfig, EventScope, ManualClock, Principal, SequentialIds,
    StartRun, Started, StopTarget,
};
use narad_store::{Batch, Expect, HistoryQuery, SideSpace, SideWrite, Store};
use narad_store_redb::RedbStore;
use serde_json::{json, Value};

/// Allows everything but appending the listed types; records every call;
/// lets `operator` debug.
#[derive(Debug, Default)]
struct Recording {
    refuse: Vec<&'static str>,
    calls: Mutex<Vec<String>>,
}

impl Authorizer for Recording {
    fn allows(&self, _: &Principal, action: Action<'_>) -> bool {
        let shown = match action {
            Action::Write {
                session_id,
                event_type,
            } => format!("write {event_type} in [{session_id}]"),
            Action::ClientLease {
                executor_id,
                control,
            } => format!("lease {control} of {executor_id}"),
            other => format!("{other:?}"),
        };
        self.calls.lock().unwrap().push(shown);
        match action {
            Action::Write { event_type, .. } => !self.refuse.contains(&event_type),
            _ => true,
        }
    }
    fn may_debug(&self, p: &Principal) -> bool {
        p.0 == "operator"
    }
}

async fn engine(dir: &std::path::Path, auth: Arc<Recording>) -> Engine<RedbStore> {
    Engine::with_host(
        RedbStore::open(dir.join("a.redb")).await.unwrap(),
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        auth,
        EngineConfig::default(),
    )
}

fn me() -> Principal {
    Principal::new("me")
}

async fn started(e: &Engine<RedbStore>, sid: &str, start: StartRun) -> String {
    match e.start_run(&me(), sid, start).await.unwrap() {
        Started::Running(r) => r,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_is_refused_whole_when_one_of_its_types_is_not_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let auth = Arc::new(Recording {
        refuse: vec!["run.cancelled"],
        ..Recording::default()
    });
    let e = engine(dir.path(), auth.clone()).await;
    let sid = session(&e).await;
    let run = started(&e, &sid, StartRun::default()).await;
    e.start_tool_call(&me(), &sid, &run, "search", json!({}))
        .await
        .unwrap();
    let before = e.store().head(&sid).await.unwrap();
    // `run.stop.requested` comes first and is allowed; the batch also holds
    // `tool.call.finished` and `run.cancelled`.
    let err = e.stop(&me(), &sid, StopTarget::Run(run)).await.unwrap_err();
    assert_eq!(err.code(), "not_authorized");
    assert_eq!(e.store().head(&sid).await.unwrap(), before, "stop wrote");
    let calls = auth.calls.lock().unwrap().clone();
    for ty in ["run.stop.requested", "tool.call.finished", "run.cancelled"] {
        let asked = format!("write {ty} in [{sid}]");
        assert!(calls.contains(&asked), "{ty} was not authorized: {calls:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_controls_are_authorized_with_their_session() {
    let dir = tempfile::tempdir().unwrap();
    let auth = Arc::new(Recording::default());
    let e = engine(dir.path(), auth.clone()).await;
    let sid = session(&e).await;
    let lease = e.attach_client(&me(), "desktop-1").await.unwrap();
    e.client_heartbeat(&me(), "desktop-1", &lease)
        .await
        .unwrap();
    let run = started(
        &e,
        &sid,
        StartRun {
            client_executor_id: Some("desktop-1".into()),
            ..StartRun::default()
        },
    )
    .await;
    let out = e.client_outbox("desktop-1");
    out.try_next().unwrap(); // client.attached
    e.start_client_tool_call(&me(), &sid, &run, "search", json!({}))
        .await
        .unwrap();
    let exec: Value = serde_json::from_slice(&out.try_next().unwrap()).unwrap();
    let finish = serde_json::to_vec(&json!({
        "type": "client.tool.finish", "protocolVersion": "narad/v1",
        "clientExecutorId": exec["clientExecutorId"], "leaseId": exec["leaseId"],
        "executionToken": exec["executionToken"], "toolCallId": exec["toolCallId"],
        "outcome": "success", "response": {"ok": true}
    }))
    .unwrap();
    e.client_finish(&me(), &finish).await.unwrap();
    let calls = auth.calls.lock().unwrap().clone();
    assert!(calls.contains(&"lease client.attached of desktop-1".to_owned()));
    assert!(calls.contains(&"lease client.heartbeat of desktop-1".to_owned()));
    assert!(calls.contains(&format!("write client.tool.finish in [{sid}]")));
    assert!(
        !calls.iter().any(|c| c.ends_with("in []")),
        "a control was authorized without its session: {calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_leave_out_trace_and_debug_events_unless_the_reader_may_debug() {
    let dir = tempfile::tempdir().unwrap();
    let auth = Arc::new(Recording::default());
    let e = engine(dir.path(), auth).await;
    let sid = session(&e).await;
    let operator = Principal::new("operator");
    let viewer = Principal::new("viewer");
    e.append(
        &operator,
        &sid,
        "debug.log",
        EventScope::Session,
        json!({"level": "info", "message": "x"}),
    )
    .await
    .unwrap();
    e.append(
        &operator,
        &sid,
        "trace.event",
        EventScope::Session,
        json!({"name": "t"}),
    )
    .await
    .unwrap();
    let msg = e.message(&viewer, &sid, json!("hi")).await.unwrap();
    let types = |page: &narad_store::Page| -> Vec<String> {
        page.events
            .iter()
            .map(|ev| {
                let v: Value = serde_json::from_slice(&ev.bytes).unwrap();
                v["type"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let q = HistoryQuery::default();
    let seen = types(&e.history(&viewer, &sid, &q).await.unwrap());
    assert_eq!(seen, ["message.user.recorded"], "{seen:?}");
    let all = types(&e.history(&operator, &sid, &q).await.unwrap());
    assert_eq!(
        all,
        ["debug.log", "trace.event", "message.user.recorded"],
        "{all:?}"
    );
    // Following skips them too, and its cursor moves past them.
    let mut follow = e.subscribe(&viewer, &sid, 0).await.unwrap();
    let first = follow.next().await.unwrap().unwrap();
    let v: Value = serde_json::from_slice(&first.bytes).unwrap();
    assert_eq!(v["messageId"], msg.as_str());
    assert_eq!(follow.cursor(), 3);
    let attached = e.attach(&operator, &sid).await.unwrap();
    assert_eq!(attached.capabilities.session_sequence, 3);
    let mut follow = e.subscribe(&operator, &sid, 0).await.unwrap();
    let first = follow.next().await.unwrap().unwrap();
    assert_eq!(first.position.session_sequence, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_record_missing_a_field_is_a_typed_error_not_an_empty_string() {
    let dir = tempfile::tempdir().unwrap();
    let auth = Arc::new(Recording::default());
    let e = engine(dir.path(), auth).await;
    let bad = json!({"executor": "desktop-1", "lease": "lease-1", "toolCallId": "tool-1",
        "runId": "run-1", "expiresAt": "2026-05-28T20:31:40.000Z", "toolName": "search",
        "args": {}, "finish": null, "closed": null});
    e.store()
        .append(Batch {
            side: vec![SideWrite {
                space: SideSpace::Token,
                key: "token-secret".into(),
                expect: Expect::Absent,
                value: Some(bad.to_string().into()),
            }],
            ..Batch::default()
        })
        .await
        .unwrap();
    let err = e
        .client_delivery_failed(&me(), "token-secret")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "corrupt_record", "{err}");
    assert!(!err.to_string().contains("secret"), "{err}");
}
