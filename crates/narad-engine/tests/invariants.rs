//! One test per protocol invariant: the engine refuses the breaking command
//! with its stable code, and the refused command leaves the store unchanged.
//! Every test runs on a real redb file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_valid, engine, journal, me, session, types};
use narad_engine::{
    Action, Authorizer, Clock, Engine, EngineConfig, EngineError, EventScope, Interrupt,
    InterruptScope, ManualClock, NewSession, Principal, Resolve, SequentialIds, StartRun, Started,
    StopTarget, Terminal, ToolOutcome,
};
use narad_store::Store;
use serde_json::json;
use std::sync::Arc;

fn finished() -> Terminal {
    Terminal::Finished {
        usage: None,
        artifact_ids: vec![],
    }
}

async fn running<S: Store + 'static>(e: &Engine<S>, sid: &str) -> String {
    match e.start_run(&me(), sid, StartRun::default()).await.unwrap() {
        Started::Running(r) => r,
        other => panic!("{other:?}"),
    }
}

/// Runs `refused`, asserts its code, and that the journal did not change.
async fn refused<S, F>(e: &Engine<S>, sid: &str, code: &str, f: F)
where
    S: Store + 'static,
    F: std::future::Future<Output = Result<(), EngineError>>,
{
    let before = journal(e, sid).await;
    let err = f.await.expect_err("the command must be refused");
    assert_eq!(err.code(), code, "{err}");
    assert_eq!(journal(e, sid).await, before, "a refused command wrote");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_top_level_start_is_refused_or_queued() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let first = running(&e, &sid).await;
    refused(&e, &sid, "session_slot_busy", async {
        e.start_run(&me(), &sid, StartRun::default())
            .await
            .map(|_| ())
    })
    .await;
    let queued = e
        .start_run(
            &me(),
            &sid,
            StartRun {
                queue_if_busy: true,
                ..StartRun::default()
            },
        )
        .await
        .unwrap();
    let Started::Queued(next) = queued else {
        panic!("{queued:?}")
    };
    assert_eq!(types(&e, &sid).await, ["run.started"]);
    e.end_run(&me(), &sid, &first, finished()).await.unwrap();
    // The queued run started as soon as the slot freed.
    let c = assert_valid(&e, &sid).await;
    assert!(c.run(&sid, &next).is_some());
    assert_eq!(
        types(&e, &sid).await,
        ["run.started", "run.finished", "run.started"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_with_open_work_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    let tool = e
        .start_tool_call(&me(), &sid, &run, "search", json!({"q": 1}))
        .await
        .unwrap();
    refused(
        &e,
        &sid,
        "open_work",
        e.end_run(&me(), &sid, &run, finished()),
    )
    .await;
    e.finish_tool_call(&me(), &sid, &tool, ToolOutcome::success(json!(1)))
        .await
        .unwrap();
    let child = match e
        .start_run(
            &me(),
            &sid,
            StartRun {
                parent_run_id: Some(run.clone()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    {
        Started::Running(c) => c,
        other => panic!("{other:?}"),
    };
    refused(
        &e,
        &sid,
        "open_work",
        e.end_run(&me(), &sid, &run, finished()),
    )
    .await;
    e.end_run(&me(), &sid, &child, finished()).await.unwrap();
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    refused(
        &e,
        &sid,
        "run_terminated",
        e.end_run(&me(), &sid, &run, finished()),
    )
    .await;
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_finished_twice_and_unknown_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    let tool = e
        .start_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    e.finish_tool_call(&me(), &sid, &tool, ToolOutcome::success(json!(null)))
        .await
        .unwrap();
    refused(&e, &sid, "tool_call_finished_twice", async {
        e.finish_tool_call(&me(), &sid, &tool, ToolOutcome::success(json!(null)))
            .await
    })
    .await;
    refused(&e, &sid, "unknown_tool_call", async {
        e.finish_tool_call(&me(), &sid, "nope", ToolOutcome::success(json!(null)))
            .await
    })
    .await;
    refused(&e, &sid, "unknown_run", async {
        e.start_tool_call(&me(), &sid, "nope", "t", json!({}))
            .await
            .map(|_| ())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_or_child_starts_after_stop_and_the_policy_closes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let root = running(&e, &sid).await;
    let Started::Running(child) = e
        .start_run(
            &me(),
            &sid,
            StartRun {
                parent_run_id: Some(root.clone()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    e.start_tool_call(&me(), &sid, &root, "slow", json!({}))
        .await
        .unwrap();
    // The child waits on an interrupt (paused) while the root has a tool open.
    interrupted(&e, &sid, &child).await;
    let stopped = e.stop(&me(), &sid, StopTarget::ActiveRoot).await.unwrap();
    assert_eq!(stopped, root);
    let c = assert_valid(&e, &sid).await;
    assert!(c.run(&sid, &root).unwrap().state.is_terminal());
    assert!(c.run(&sid, &child).unwrap().state.is_terminal());
    let t = types(&e, &sid).await;
    assert_eq!(t.last().map(String::as_str), Some("run.cancelled"));
    assert!(t.contains(&"run.stop.requested".to_owned()));
    refused(&e, &sid, "run_terminated", async {
        e.start_tool_call(&me(), &sid, &root, "late", json!({}))
            .await
            .map(|_| ())
    })
    .await;
    // Slot free again: a new root may start.
    running(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_on_a_stopped_run_refuses_new_work_before_its_terminal() {
    // A stop request alone (the run not yet ended) blocks new work: the
    // checker's §6.3 rule, reached through the generic append.
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    e.append(
        &me(),
        &sid,
        "run.stop.requested",
        EventScope::Run(run.clone()),
        json!({ "targetRunId": run }),
    )
    .await
    .unwrap();
    refused(&e, &sid, "run_stop_requested", async {
        e.start_tool_call(&me(), &sid, &run, "t", json!({}))
            .await
            .map(|_| ())
    })
    .await;
    refused(&e, &sid, "run_stop_requested", async {
        e.start_run(
            &me(),
            &sid,
            StartRun {
                parent_run_id: Some(run.clone()),
                ..StartRun::default()
            },
        )
        .await
        .map(|_| ())
    })
    .await;
}

async fn interrupted<S: Store + 'static>(e: &Engine<S>, sid: &str, run: &str) -> (String, String) {
    e.request_interrupt(
        &me(),
        sid,
        Interrupt {
            scope: InterruptScope::Run(run.to_owned()),
            kind: "approval".into(),
            actions: vec!["approve".into(), "deny".into()],
            input: None,
            expires_at: None,
            title: None,
        },
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupts_pause_adjacently_and_resolve_by_id_alone() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    let (iid, wait) = interrupted(&e, &sid, &run).await;
    assert_eq!(
        types(&e, &sid).await,
        ["run.started", "interrupt.requested", "run.paused"]
    );
    refused(&e, &sid, "run_not_running", async {
        e.start_tool_call(&me(), &sid, &run, "t", json!({}))
            .await
            .map(|_| ())
    })
    .await;
    refused(
        &e,
        &sid,
        "wait_mismatch",
        e.resume_run(&me(), &sid, &run, "wait-wrong"),
    )
    .await;
    let resolve = |decision: &str, expected| Resolve {
        interrupt_id: iid.clone(),
        decision: decision.into(),
        reason: None,
        expected_revision: expected,
        members: None,
    };
    refused(&e, &sid, "decision_invalid", async {
        e.resolve_interrupt(&me(), resolve("maybe", None))
            .await
            .map(|_| ())
    })
    .await;
    refused(&e, &sid, "revision_conflict", async {
        e.resolve_interrupt(&me(), resolve("approve", Some(1)))
            .await
            .map(|_| ())
    })
    .await;
    // By id alone: the engine finds the session (revision 3 = the pause).
    let found = e
        .resolve_interrupt(&me(), resolve("approve", Some(3)))
        .await
        .unwrap();
    assert_eq!(found.session_id, sid);
    assert_eq!(found.decision, "approve");
    refused(&e, &sid, "interrupt_already_resolved", async {
        e.resolve_interrupt(&me(), resolve("approve", None))
            .await
            .map(|_| ())
    })
    .await;
    let _ = wait;
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    assert_eq!(
        types(&e, &sid).await,
        [
            "run.started",
            "interrupt.requested",
            "run.paused",
            "interrupt.resolved",
            "run.resumed",
            "run.finished"
        ]
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_or_a_terminal_while_paused_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    interrupted(&e, &sid, &run).await;
    // A paused run does no work, a second interrupt included (§6.4, §3.4).
    refused(&e, &sid, "run_not_running", async {
        e.request_interrupt(
            &me(),
            &sid,
            Interrupt {
                scope: InterruptScope::Run(run.clone()),
                kind: "approval".into(),
                actions: vec!["ok".into()],
                input: None,
                expires_at: None,
                title: None,
            },
        )
        .await
        .map(|_| ())
    })
    .await;
    refused(
        &e,
        &sid,
        "run_paused",
        e.end_run(&me(), &sid, &run, finished()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_paused_run_resolves_resumes_and_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    interrupted(&e, &sid, &run).await;
    e.stop(&me(), &sid, StopTarget::Run(run.clone()))
        .await
        .unwrap();
    assert_eq!(
        types(&e, &sid).await[3..],
        [
            "run.stop.requested",
            "interrupt.resolved",
            "run.resumed",
            "run.cancelled"
        ]
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_an_inactive_profile_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = e
        .create_session(
            &me(),
            NewSession {
                profiles: Some(narad_core::ProfileSet::core()),
                ..NewSession::default()
            },
        )
        .await
        .unwrap();
    refused(&e, &sid, "profile_inactive", async {
        e.message(&me(), &sid, json!("hi")).await.map(|_| ())
    })
    .await;
    refused(&e, &sid, "profile_inactive", async {
        e.start_workflow(&me(), &sid, None, None).await.map(|_| ())
    })
    .await;
    let caps = e.capabilities(&me(), &sid).await.unwrap();
    assert_eq!(caps.active_profiles, ["narad/v1"]);
    assert_eq!(
        e.create_session(
            &me(),
            NewSession {
                session_id: Some(sid.clone()),
                ..NewSession::default()
            }
        )
        .await
        .unwrap_err()
        .code(),
        "session_exists"
    );
}

#[derive(Debug)]
struct OnlyAlice;

impl Authorizer for OnlyAlice {
    fn allows(&self, p: &Principal, _: Action<'_>) -> bool {
        p.0 == "alice"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_and_read_is_authorized_and_debug_is_gated() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    let e = Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(OnlyAlice),
        EngineConfig::default(),
    );
    let (alice, mallory) = (Principal::new("alice"), Principal::new("mallory"));
    assert_eq!(
        e.create_session(&mallory, NewSession::default())
            .await
            .unwrap_err()
            .code(),
        "not_authorized"
    );
    let sid = e
        .create_session(&alice, NewSession::default())
        .await
        .unwrap();
    refused(&e, &sid, "not_authorized", async {
        e.start_run(&mallory, &sid, StartRun::default())
            .await
            .map(|_| ())
    })
    .await;
    let q = narad_store::HistoryQuery::default();
    assert_eq!(
        e.history(&mallory, &sid, &q).await.unwrap_err().code(),
        "not_authorized"
    );
    assert!(e.subscribe(&mallory, &sid, 0).await.is_err());
    // Debug needs more than write permission.
    refused(&e, &sid, "not_authorized", async {
        e.append(
            &alice,
            &sid,
            "debug.log",
            EventScope::Session,
            json!({"level": "info", "message": "x"}),
        )
        .await
        .map(|_| ())
    })
    .await;
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
    let Started::Running(run) = e
        .start_run(
            &me(),
            &sid,
            StartRun {
                workflow_id: Some(wf.clone()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    refused(&e, &sid, "workflow_open_runs", async {
        e.append(
            &me(),
            &sid,
            "workflow.finished",
            EventScope::Workflow(wf.clone()),
            json!({}),
        )
        .await
        .map(|_| ())
    })
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
async fn interrupts_expire_on_the_engine_clock_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (sid, run, iid) = {
        let (e, clock) = common::engine_with_clock(dir.path()).await;
        let sid = session(&e).await;
        let run = running(&e, &sid).await;
        let (iid, _) = e
            .request_interrupt(
                &me(),
                &sid,
                Interrupt {
                    scope: InterruptScope::Run(run.clone()),
                    kind: "approval".into(),
                    actions: vec!["approve".into()],
                    input: None,
                    expires_at: Some(clock.now() + std::time::Duration::from_secs(60)),
                    title: None,
                },
            )
            .await
            .unwrap();
        clock.advance(std::time::Duration::from_secs(59));
        assert!(e.expire_due(&me()).await.unwrap().is_empty());
        e.store().close().await.unwrap();
        (sid, run, iid)
    };
    // A new engine, its clock past the deadline: touching the session loads
    // it (and its pending expiry); the sweep resolves it as expired.
    let (e, clock) = common::engine_with_clock(dir.path()).await;
    clock.advance(std::time::Duration::from_secs(61));
    e.capabilities(&me(), &sid).await.unwrap();
    assert_eq!(e.expire_due(&me()).await.unwrap(), vec![iid]);
    assert!(e.expire_due(&me()).await.unwrap().is_empty());
    let last: Vec<serde_json::Value> = journal(&e, &sid)
        .await
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    assert_eq!(last[3]["type"], "interrupt.resolved");
    assert_eq!(last[3]["decision"], "expired");
    assert_eq!(last[4]["type"], "run.resumed");
    e.end_run(&me(), &sid, &run, finished()).await.unwrap();
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hitl_members_must_fold_to_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let run = running(&e, &sid).await;
    let (iid, _) = e
        .request_interrupt(
            &me(),
            &sid,
            Interrupt {
                scope: InterruptScope::Run(run.clone()),
                kind: "approval".into(),
                actions: vec!["approve".into(), "deny".into(), "stop".into()],
                input: Some(json!({"members": [{"requestId": "a"}, {"requestId": "b"}]})),
                expires_at: None,
                title: None,
            },
        )
        .await
        .unwrap();
    let members = json!([
        {"requestId": "a", "decision": "approve"},
        {"requestId": "b", "decision": "deny"}
    ]);
    let resolve = |decision: &str| Resolve {
        interrupt_id: iid.clone(),
        decision: decision.into(),
        reason: None,
        expected_revision: None,
        members: Some(members.clone()),
    };
    // approve + deny folds to deny, not approve.
    refused(&e, &sid, "members_fold_mismatch", async {
        e.resolve_interrupt(&me(), resolve("approve"))
            .await
            .map(|_| ())
    })
    .await;
    e.resolve_interrupt(&me(), resolve("deny")).await.unwrap();
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_run_records_its_executor_binding_explicitly() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let Started::Running(root) = e
        .start_run(
            &me(),
            &sid,
            StartRun {
                client_executor_id: Some("desktop-1".into()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    let Started::Running(child) = e
        .start_run(
            &me(),
            &sid,
            StartRun {
                parent_run_id: Some(root.clone()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    let evs: Vec<serde_json::Value> = journal(&e, &sid)
        .await
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect();
    assert_eq!(evs[1]["runId"], child.as_str());
    assert_eq!(evs[1]["parentRunId"], root.as_str());
    assert_eq!(evs[1]["rootRunId"], root.as_str());
    assert_eq!(evs[1]["sequence"], 2);
    assert_eq!(evs[1]["clientExecutorId"], "desktop-1");
}

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
async fn every_profile_is_reached_through_append_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_store_redb::RedbStore::open(dir.path().join("p.redb"))
        .await
        .unwrap();
    let e = Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(Debugger),
        EngineConfig::default(),
    );
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
    refused(&e, &sid, "document_revision_gap", async {
        e.append(
            &me(),
            &sid,
            "state.delta",
            EventScope::Session,
            json!({"scope": "session", "baseRevision": 5, "revision": 6, "patch": []}),
        )
        .await
        .map(|_| ())
    })
    .await;
    refused(&e, &sid, "lifecycle_invalid", async {
        e.append(
            &me(),
            &sid,
            "artifact.ready",
            EventScope::Session,
            json!({"artifactId": "x1"}),
        )
        .await
        .map(|_| ())
    })
    .await;
    refused(&e, &sid, "message_completed", async {
        e.append(
            &me(),
            &sid,
            "message.text.delta",
            EventScope::Session,
            json!({"messageId": "m1", "delta": "!"}),
        )
        .await
        .map(|_| ())
    })
    .await;
    // Trace and debug: only for a principal the hook lets debug.
    refused(&e, &sid, "not_authorized", async {
        e.append(
            &me(),
            &sid,
            "trace.event",
            EventScope::Session,
            json!({"name": "t"}),
        )
        .await
        .map(|_| ())
    })
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
