//! One test per protocol invariant: the engine refuses the breaking command
//! with its stable code, and the refused command leaves the store unchanged.
//! Every test runs on a real redb file. Runs, tool calls, stop, profiles
//! and authorization here; interrupts in `invariants_interrupts.rs`;
//! workflows, every profile's types, history and import in
//! `invariants_workflows.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{
    assert_valid, engine, finished, interrupted, journal, me, refused, refused_append, running,
    session, types,
};
use narad_engine::{
    Action, Authorizer, EventScope, NewSession, Principal, StartRun, Started, StopTarget,
    ToolOutcome,
};
use serde_json::json;
use std::sync::Arc;

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
    let child = common::child_of(&e, &sid, &run).await;
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
    let child = common::child_of(&e, &sid, &root).await;
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

/// Creating a session whose id is taken is `session_exists`, naming the
/// id, whether the engine created it or its events were appended to the
/// store by another tool (no record of its creation: the head guard
/// refuses first), and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_session_id_is_refused_by_name() {
    use narad_store::Store;
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let made = session(&e).await;
    let raw = narad_store::suite::event("raw", 1, "a");
    e.store()
        .append(narad_store::Batch {
            session_id: "raw".into(),
            events: vec![raw],
            ..Default::default()
        })
        .await
        .unwrap();
    for sid in [made.as_str(), "raw"] {
        let before = journal(&e, sid).await;
        let err = e
            .create_session(
                &me(),
                NewSession {
                    session_id: Some(sid.to_owned()),
                    ..NewSession::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), "session_exists", "{sid}: {err}");
        assert_eq!(err.to_string(), format!("session `{sid}` exists already"));
        assert_eq!(journal(&e, sid).await, before);
    }
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
    let e = common::fixed_host(store, Arc::new(OnlyAlice));
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
    refused_append(
        &e,
        &alice,
        &sid,
        "not_authorized",
        "debug.log",
        EventScope::Session,
        json!({"level": "info", "message": "x"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_run_records_its_executor_binding_explicitly() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let root = common::running_with(
        &e,
        &sid,
        StartRun {
            client_executor_id: Some("desktop-1".into()),
            ..StartRun::default()
        },
    )
    .await;
    let child = common::child_of(&e, &sid, &root).await;
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
