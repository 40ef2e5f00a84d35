//! The interrupt invariants: adjacency with pauses, resolution by id,
//! refusals while paused, stop of a paused run, expiry on the engine
//! clock across a restart, and HITL members folding to the decision. Each
//! refused command leaves the store unchanged; real redb files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{
    assert_valid, engine, finished, interrupted, journal, me, refused, running, session, types,
};
use narad_engine::{Clock, Interrupt, InterruptScope, Resolve, StopTarget};
use narad_store::Store;
use serde_json::json;

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
            Interrupt::on_run(run.clone(), "approval", ["ok"]),
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
                    expires_at: Some((clock.now() + std::time::Duration::from_secs(60)).into()),
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
