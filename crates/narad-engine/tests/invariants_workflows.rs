//! Workflows with workflow-scope interrupts, every profile's types reached
//! through `append` and checked, history paging and cursor conflicts, and
//! import's authorization. Real redb files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_valid, engine, finished, me, refused, refused_append, running, session};
use narad_engine::{
    Action, Authorizer, EventScope, Interrupt, InterruptScope, Principal, Resolve, StartRun,
};
use narad_store::Store;
use serde_json::json;
use std::sync::Arc;

#[derive(Debug)]
struct Debugger;

impl Authorizer for Debugger {
    fn allows(&self, _: &Principal, _: Action<'_>) -> bool {
        true
    }
    fn may_debug(&self, p: &Principal) -> bool {
        p.0 == "operator"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_run_their_lifecycle_with_workflow_scope_interrupts() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let wf = e.start_workflow(&me(), &sid, None, None).await.unwrap();
    refused(&e, &sid, "session_slot_busy", async {
        e.start_run(&me(), &sid, StartRun::default())
            .await
            .map(|_| ())
    })
    .await;
    e.append(
        &me(),
        &sid,
        "workflow.step.started",
        EventScope::Workflow(wf.clone()),
        json!({"nodeId": "a"}),
    )
    .await
    .unwrap();
    let run = common::running_with(
        &e,
        &sid,
        StartRun {
            workflow_id: Some(wf.clone()),
            ..StartRun::default()
        },
    )
    .await;
    refused_append(
        &e,
        &me(),
        &sid,
        "workflow_open_runs",
        "workflow.finished",
        EventScope::Workflow(wf.clone()),
        json!({}),
    )
    .await;
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    let (iid, _) = e
        .request_interrupt(
            &me(),
            &sid,
            Interrupt {
                scope: InterruptScope::Workflow(wf.clone()),
                kind: "approval".into(),
                actions: vec!["go".into()],
                input: None,
                expires_at: None,
                title: None,
            },
        )
        .await
        .unwrap();
    e.resolve_interrupt(
        &me(),
        Resolve {
            interrupt_id: iid,
            decision: "go".into(),
            reason: None,
            expected_revision: None,
            members: None,
        },
    )
    .await
    .unwrap();
    e.append(
        &me(),
        &sid,
        "workflow.edge.taken",
        EventScope::Workflow(wf.clone()),
        json!({"from": "a", "to": "b"}),
    )
    .await
    .unwrap();
    e.append(
        &me(),
        &sid,
        "workflow.finished",
        EventScope::Workflow(wf.clone()),
        json!({}),
    )
    .await
    .unwrap();
    let c = assert_valid(&e, &sid).await;
    assert!(c.slot(&sid).is_none());
    assert_eq!(c.workflow_head(&sid, &wf), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_profile_is_reached_through_append_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_store_redb::RedbStore::open(dir.path().join("p.redb"))
        .await
        .unwrap();
    let e = common::fixed_host(store, Arc::new(Debugger));
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    let s = EventScope::Session;
    let r = EventScope::Run(run.clone());
    let steps: Vec<(&str, EventScope, serde_json::Value)> = vec![
        (
            "message.text.started",
            s.clone(),
            json!({"messageId": "m1", "role": "assistant", "messageScope": "session"}),
        ),
        (
            "message.text.delta",
            s.clone(),
            json!({"messageId": "m1", "delta": "Hel"}),
        ),
        (
            "message.text.delta",
            s.clone(),
            json!({"messageId": "m1", "delta": "lo"}),
        ),
        (
            "message.text.completed",
            s.clone(),
            json!({"messageId": "m1"}),
        ),
        (
            "message.redacted",
            s.clone(),
            json!({"messageId": "m1", "reason": "policy", "displayReplacement": null}),
        ),
        ("attachment.added", s.clone(), json!({"attachmentId": "a1"})),
        ("attachment.ready", s.clone(), json!({"attachmentId": "a1"})),
        ("artifact.added", s.clone(), json!({"artifactId": "x1"})),
        ("artifact.ready", s.clone(), json!({"artifactId": "x1"})),
        (
            "state.snapshot",
            s.clone(),
            json!({"scope": "session", "revision": 1, "state": {"a": 1}}),
        ),
        (
            "state.delta",
            s.clone(),
            json!({"scope": "session", "baseRevision": 1, "revision": 2, "patch": [{"op": "replace", "path": "/a", "value": 2}]}),
        ),
        (
            "ui.state.snapshot",
            s.clone(),
            json!({"scope": "session", "revision": 1, "state": {}}),
        ),
        (
            "view.opened",
            s.clone(),
            json!({"viewId": "v1", "model": {"rows": []}}),
        ),
        (
            "view.updated",
            s.clone(),
            json!({"viewId": "v1", "operation": "patch", "patch": [{"op": "add", "path": "/rows/-", "value": 1}]}),
        ),
        (
            "progress.recorded",
            r.clone(),
            json!({"progressId": "p1", "category": "phase", "label": "Working", "status": "active", "privacy": "public"}),
        ),
        (
            "run.custom",
            r.clone(),
            json!({"name": "acme.note", "value": {"k": 1}}),
        ),
        (
            "session.custom",
            s.clone(),
            json!({"name": "acme.tag", "value": "x"}),
        ),
    ];
    for (ty, scope, body) in steps {
        e.append(&me(), &sid, ty, scope, body)
            .await
            .unwrap_or_else(|err| panic!("{ty}: {err}"));
    }
    // The checker's profile rules apply through append, with their codes.
    refused_append(
        &e,
        &me(),
        &sid,
        "document_revision_gap",
        "state.delta",
        EventScope::Session,
        json!({"scope": "session", "baseRevision": 5, "revision": 6, "patch": []}),
    )
    .await;
    refused_append(
        &e,
        &me(),
        &sid,
        "lifecycle_invalid",
        "artifact.ready",
        EventScope::Session,
        json!({"artifactId": "x1"}),
    )
    .await;
    refused_append(
        &e,
        &me(),
        &sid,
        "message_completed",
        "message.text.delta",
        EventScope::Session,
        json!({"messageId": "m1", "delta": "!"}),
    )
    .await;
    // Trace and debug: only for a principal the hook lets debug.
    refused_append(
        &e,
        &me(),
        &sid,
        "not_authorized",
        "trace.event",
        EventScope::Session,
        json!({"name": "t"}),
    )
    .await;
    e.append(
        &Principal::new("operator"),
        &sid,
        "trace.event",
        EventScope::Session,
        json!({"name": "t"}),
    )
    .await
    .unwrap();
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_through_the_engine_pages_and_refuses_cursor_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    e.message(&me(), &sid, json!("a")).await.unwrap();
    let run = running(&e, &sid).await;
    e.message(&me(), &sid, json!("b")).await.unwrap();
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    let q = narad_store::HistoryQuery::default().limit(2);
    let page = e.history(&me(), &sid, &q).await.unwrap();
    assert_eq!((page.events.len(), page.next), (2, Some(2)));
    let runs = e
        .history(
            &me(),
            &sid,
            &narad_store::HistoryQuery::default().run(run.clone(), Some(1)),
        )
        .await
        .unwrap();
    assert_eq!(runs.events.len(), 1);
    let clash = narad_store::HistoryQuery::default()
        .run(run, Some(1))
        .after_session_sequence(0);
    assert_eq!(
        e.history(&me(), &sid, &clash).await.unwrap_err().code(),
        "cursor_conflict"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_authorizes_every_event_type_and_gates_debug() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let line = |seq: u64, body: &str| {
        format!(
            r#"{{"protocolVersion":"narad/v1","eventId":"e{seq}","timestamp":"2026-08-05T00:00:00Z","sessionId":"imp","sessionSequence":{seq},{body}}}"#
        )
        .into_bytes()
    };
    let journal_with_debug = vec![
        line(
            1,
            r#""type":"message.user.recorded","messageId":"m","messageScope":"session","content":"hi""#,
        ),
        line(2, r#""type":"debug.log","level":"info","message":"x""#),
    ];
    // The debug event is not the first: it is still gated.
    assert_eq!(
        e.import(&me(), &journal_with_debug)
            .await
            .unwrap_err()
            .code(),
        "not_authorized"
    );
    assert_eq!(e.store().head("imp").await.unwrap(), 0);
    let (sid, n) = e.import(&me(), &journal_with_debug[..1]).await.unwrap();
    assert_eq!((sid.as_str(), n), ("imp", 1));
}
