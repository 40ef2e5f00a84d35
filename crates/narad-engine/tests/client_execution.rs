//! §11 client execution with an injected clock, on real redb files: every
//! host rule, the executor library, and the published `client-tool*.jsonl`
//! traces reproduced by driving the engine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{assert_valid, journal, me, session, types};
use narad_core::checker::Checker;
use narad_engine::client::Finished;
use narad_engine::executor::{ClientExecutor, Handled};
use narad_engine::{
    AllowAll, Engine, EngineConfig, ManualClock, RandomIds, StartRun, Started, StopTarget, Terminal,
};
use narad_store_redb::RedbStore;
use serde_json::{json, Value};

async fn setup(dir: &std::path::Path) -> (Engine<RedbStore>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    let e = Engine::with_host(
        RedbStore::open(dir.join("host.redb")).await.unwrap(),
        clock.clone(),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            lease_ttl: Duration::from_secs(45),
            token_ttl: Duration::from_secs(60),
            ..EngineConfig::default()
        },
    );
    (e, clock)
}

async fn bound_run(e: &Engine<RedbStore>, sid: &str, executor: &str) -> String {
    match e
        .start_run(
            &me(),
            sid,
            StartRun {
                client_executor_id: Some(executor.into()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    {
        Started::Running(r) => r,
        other => panic!("{other:?}"),
    }
}

fn v(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

fn finish(exec: &Value, outcome: &str, response: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "type": "client.tool.finish", "protocolVersion": "narad/v1",
        "clientExecutorId": exec["clientExecutorId"], "leaseId": exec["leaseId"],
        "executionToken": exec["executionToken"], "toolCallId": exec["toolCallId"],
        "outcome": outcome, "response": response
    }))
    .unwrap()
}

/// Drains an outbox into a list.
fn drain(e: &Engine<RedbStore>, executor: &str) -> Vec<Value> {
    let out = e.client_outbox(executor);
    std::iter::from_fn(|| out.try_next())
        .map(|b| v(&b))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_published_client_tool_trace_is_reproduced_by_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _clock) = setup(dir.path()).await;
    let mut stream: Vec<Vec<u8>> = Vec::new();
    let lease1 = e.attach_client(&me(), "desktop-1").await.unwrap();
    let (typed, attached1) = e.client_outbox("desktop-1").next_control().await.unwrap();
    assert!(matches!(
        typed,
        narad_core::model::ControlPayload::ClientAttached { ref lease_id, .. } if *lease_id == lease1
    ));
    stream.push(attached1.to_vec());
    e.client_heartbeat(&me(), "desktop-1", &lease1)
        .await
        .unwrap();
    stream.push(
        serde_json::to_vec(
            &json!({"type": "client.heartbeat", "protocolVersion": "narad/v1",
            "clientExecutorId": "desktop-1", "leaseId": lease1}),
        )
        .unwrap(),
    );
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "desktop-1").await;
    let tool = e
        .start_client_tool_call(&me(), &sid, &run, "open.file", json!({"path": "README.md"}))
        .await
        .unwrap();
    let j = journal(&e, &sid).await;
    stream.push(j[0].clone());
    stream.push(j[1].clone());
    let execute = e.client_outbox("desktop-1").try_next().unwrap();
    assert!(
        e.client_outbox("desktop-1").try_next().is_none(),
        "exactly one execute"
    );
    let ex = v(&execute);
    assert_eq!(
        (ex["toolCallId"].as_str(), ex["toolName"].as_str()),
        (Some(tool.as_str()), Some("open.file"))
    );
    assert_eq!(ex["args"], json!({"path": "README.md"}));
    assert_eq!(ex["leaseId"], json!(lease1));
    stream.push(execute.to_vec());
    stream.push(execute.to_vec()); // duplicate delivery
                                   // Reattach: a new lease; the unfinished execution is redelivered with
                                   // its original lease and token.
    let lease2 = e.attach_client(&me(), "desktop-1").await.unwrap();
    assert_ne!(lease1, lease2);
    let out = drain(&e, "desktop-1");
    assert_eq!(out[0]["type"], "client.attached");
    assert_eq!(out[1], ex);
    stream.push(serde_json::to_vec(&out[0]).unwrap());
    stream.push(serde_json::to_vec(&out[1]).unwrap());
    // The finish on the originating (superseded) lease is accepted.
    let fin = finish(&ex, "success", json!({"opened": true}));
    assert_eq!(
        e.client_finish(&me(), &fin).await.unwrap(),
        Finished::Appended
    );
    assert_eq!(
        e.client_finish(&me(), &fin).await.unwrap(),
        Finished::Repeated
    );
    stream.push(fin);
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Finished {
            usage: None,
            artifact_ids: vec![],
        },
    )
    .await
    .unwrap();
    let j = journal(&e, &sid).await;
    stream.push(j[2].clone());
    stream.push(j[3].clone());
    // The engine's stream has the published trace's shape...
    let published = narad_conformance::require_spec("client_tool_trace_reproduced")
        .map(|spec| std::fs::read_to_string(spec.join("conformance/client-tool.jsonl")).unwrap());
    if let Some(text) = published {
        let want: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| v(l.as_bytes())["type"].as_str().unwrap().to_owned())
            .collect();
        let got: Vec<String> = stream
            .iter()
            .map(|b| v(b)["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, want);
    }
    // ...and the checker, client rules included, accepts it.
    let mut c = Checker::default();
    for b in &stream {
        c.push_bytes(b)
            .unwrap_or_else(|r| panic!("{r}: {}", String::from_utf8_lossy(b)));
    }
    assert_eq!(v(&j[2])["response"], json!({"opened": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishes_are_fenced_by_token_lease_and_data() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _clock) = setup(dir.path()).await;
    e.attach_client(&me(), "w").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    e.start_client_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    let ex = drain(&e, "w").pop().unwrap();
    // The new lease cannot claim the token.
    let lease2 = e.attach_client(&me(), "w").await.unwrap();
    let mut stolen = ex.clone();
    stolen["leaseId"] = json!(lease2);
    let err = e
        .client_finish(&me(), &finish(&stolen, "success", json!(1)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "token_mismatch");
    let mut other = ex.clone();
    other["clientExecutorId"] = json!("intruder");
    assert_eq!(
        e.client_finish(&me(), &finish(&other, "success", json!(1)))
            .await
            .unwrap_err()
            .code(),
        "executor_mismatch"
    );
    let mut unknown = ex.clone();
    unknown["executionToken"] = json!("token-nope");
    assert_eq!(
        e.client_finish(&me(), &finish(&unknown, "success", json!(1)))
            .await
            .unwrap_err()
            .code(),
        "token_unknown"
    );
    let before = journal(&e, &sid).await;
    e.client_finish(&me(), &finish(&ex, "error", json!({"why": "x"})))
        .await
        .unwrap();
    assert_eq!(journal(&e, &sid).await.len(), before.len() + 1);
    // Other data under the same token: refused, nothing appended.
    assert_eq!(
        e.client_finish(&me(), &finish(&ex, "success", json!(1)))
            .await
            .unwrap_err()
            .code(),
        "finish_conflict"
    );
    assert_eq!(journal(&e, &sid).await.len(), before.len() + 1);
    let last = v(journal(&e, &sid).await.last().unwrap());
    assert_eq!(
        (last["outcome"].as_str(), &last["response"]),
        (Some("error"), &json!({"why": "x"}))
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_expire_superseded_ones_accept_nothing_and_heartbeats_renew() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = setup(dir.path()).await;
    let l1 = e.attach_client(&me(), "w").await.unwrap();
    let l2 = e.attach_client(&me(), "w").await.unwrap();
    assert_eq!(
        e.client_heartbeat(&me(), "w", &l1)
            .await
            .unwrap_err()
            .code(),
        "lease_invalid"
    );
    clock.advance(Duration::from_secs(40));
    e.client_heartbeat(&me(), "w", &l2).await.unwrap();
    clock.advance(Duration::from_secs(40)); // 80 s after attach, 40 after the heartbeat
    e.client_heartbeat(&me(), "w", &l2).await.unwrap();
    drain(&e, "w");
    // The tick sends server.heartbeat while the lease is valid.
    e.client_tick(&me()).await.unwrap();
    assert_eq!(drain(&e, "w").last().unwrap()["type"], "server.heartbeat");
    clock.advance(Duration::from_secs(46));
    assert_eq!(
        e.client_heartbeat(&me(), "w", &l2)
            .await
            .unwrap_err()
            .code(),
        "lease_invalid"
    );
    // An expired lease accepts no new execution: the call closes at once.
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    let tool = e
        .start_client_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    assert!(drain(&e, "w")
        .iter()
        .all(|m| m["type"] != "client.tool.execute"));
    let last = v(journal(&e, &sid).await.last().unwrap());
    assert_eq!(last["toolCallId"], json!(tool));
    assert_eq!(
        (last["outcome"].as_str(), last["code"].as_str()),
        (Some("error"), Some("client_unavailable"))
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfinished_token_expires_and_a_late_finish_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = setup(dir.path()).await;
    let lease = e.attach_client(&me(), "w").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    let tool = e
        .start_client_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    let ex = drain(&e, "w").pop().unwrap();
    clock.advance(Duration::from_secs(30));
    e.client_heartbeat(&me(), "w", &lease).await.unwrap();
    assert!(e.client_tick(&me()).await.unwrap().expired_calls.is_empty());
    clock.advance(Duration::from_secs(31)); // 61 s: past the 60 s token
    e.client_heartbeat(&me(), "w", &lease).await.unwrap();
    let report = e.client_tick(&me()).await.unwrap();
    assert_eq!(report.expired_calls, vec![tool]);
    let last = v(journal(&e, &sid).await.last().unwrap());
    assert_eq!(last["code"], "client_execution_expired");
    assert_eq!(
        e.client_finish(&me(), &finish(&ex, "success", json!(1)))
            .await
            .unwrap_err()
            .code(),
        "call_closed"
    );
    assert!(e.client_tick(&me()).await.unwrap().expired_calls.is_empty());
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_failure_closes_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _clock) = setup(dir.path()).await;
    e.attach_client(&me(), "w").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    e.start_client_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    let ex = drain(&e, "w").pop().unwrap();
    e.client_delivery_failed(&me(), ex["executionToken"].as_str().unwrap())
        .await
        .unwrap();
    let last = v(journal(&e, &sid).await.last().unwrap());
    assert_eq!(
        (last["outcome"].as_str(), last["code"].as_str()),
        (Some("error"), Some("delivery_failed"))
    );
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Error {
            code: "client_tool_failed".into(),
            message: "Client tool execution failed.".into(),
            usage: None,
        },
    )
    .await
    .unwrap();
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_during_a_client_call_cancels_it_and_the_late_finish_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _clock) = setup(dir.path()).await;
    e.attach_client(&me(), "desktop-1").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "desktop-1").await;
    e.start_client_tool_call(&me(), &sid, &run, "open.file", json!({"path": "README.md"}))
        .await
        .unwrap();
    let ex = drain(&e, "desktop-1").pop().unwrap();
    e.stop(&me(), &sid, StopTarget::ActiveRoot).await.unwrap();
    // The published client-tool-stop trace's shape.
    assert_eq!(
        types(&e, &sid).await,
        [
            "run.started",
            "tool.call.started",
            "run.stop.requested",
            "tool.call.finished",
            "run.cancelled"
        ]
    );
    let closed = v(&journal(&e, &sid).await[3]);
    assert_eq!(
        (closed["outcome"].as_str(), &closed["response"]),
        (Some("cancelled"), &Value::Null)
    );
    assert_eq!(
        e.client_finish(&me(), &finish(&ex, "success", json!(1)))
            .await
            .unwrap_err()
            .code(),
        "call_closed"
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_executor_pauses_its_run_and_a_new_lease_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = setup(dir.path()).await;
    e.attach_client(&me(), "w").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    e.start_client_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    let ex = drain(&e, "w").pop().unwrap();
    clock.advance(Duration::from_secs(50)); // lease (45 s) lapsed, token (60 s) not
    let report = e.client_tick(&me()).await.unwrap();
    assert_eq!(
        (report.unavailable, report.paused_runs.clone()),
        (vec!["w".to_owned()], vec![run.clone()])
    );
    // Paused, not terminated; a second tick pauses nothing more.
    assert!(e.client_tick(&me()).await.unwrap().paused_runs.is_empty());
    let paused = v(journal(&e, &sid).await.last().unwrap());
    assert_eq!(
        (paused["type"].as_str(), paused["reason"].as_str()),
        (Some("run.paused"), Some("client_executor_unavailable"))
    );
    // The executor returns: the run resumes and the execution is redelivered.
    e.attach_client(&me(), "w").await.unwrap();
    assert_eq!(
        types(&e, &sid).await.last().map(String::as_str),
        Some("run.resumed")
    );
    let out = drain(&e, "w");
    assert_eq!(out[1], ex);
    e.client_finish(&me(), &finish(&ex, "success", json!("done")))
        .await
        .unwrap();
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Finished {
            usage: None,
            artifact_ids: vec![],
        },
    )
    .await
    .unwrap();
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_library_runs_each_token_once_and_resends_its_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _clock) = setup(dir.path()).await;
    let exec = ClientExecutor::new(
        RedbStore::open(dir.path().join("ledger.redb"))
            .await
            .unwrap(),
        "w",
    );
    e.attach_client(&me(), "w").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    e.start_client_tool_call(&me(), &sid, &run, "count", json!({"n": 1}))
        .await
        .unwrap();
    let out = e.client_outbox("w");
    let attached = out.try_next().unwrap();
    let execute = out.try_next().unwrap();
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let tool = |runs: Arc<std::sync::atomic::AtomicU32>| {
        move |name: String, args: Value| async move {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            ("success", json!({"tool": name, "args": args}))
        }
    };
    assert!(matches!(
        exec.handle(&attached, tool(runs.clone())).await.unwrap(),
        Handled::Attached(_)
    ));
    // Authority events never trigger execution, even a tool.call.started.
    let started = journal(&e, &sid).await[1].clone();
    assert!(matches!(
        exec.handle(&started, tool(runs.clone())).await.unwrap(),
        Handled::Ignored(_)
    ));
    let Handled::Finish(first) = exec.handle(&execute, tool(runs.clone())).await.unwrap() else {
        panic!()
    };
    let Handled::Finish(again) = exec.handle(&execute, tool(runs.clone())).await.unwrap() else {
        panic!()
    };
    assert_eq!(first, again);
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Misdirected: another executor's library ignores it.
    let other = ClientExecutor::new(
        RedbStore::open(dir.path().join("other.redb"))
            .await
            .unwrap(),
        "x",
    );
    assert!(matches!(
        other.handle(&execute, tool(runs.clone())).await.unwrap(),
        Handled::Ignored(_)
    ));
    e.client_finish(&me(), &first).await.unwrap();
    assert_eq!(
        e.client_finish(&me(), &again).await.unwrap(),
        Finished::Repeated
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_expiring_while_its_run_waits_for_the_executor_still_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = setup(dir.path()).await;
    e.attach_client(&me(), "w").await.unwrap();
    let sid = session(&e).await;
    let run = bound_run(&e, &sid, "w").await;
    let tool = e
        .start_client_tool_call(&me(), &sid, &run, "t", json!({}))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(50));
    assert_eq!(
        e.client_tick(&me()).await.unwrap().paused_runs,
        vec![run.clone()]
    );
    clock.advance(Duration::from_secs(20)); // the token (60 s) is past too
    assert_eq!(
        e.client_tick(&me()).await.unwrap().expired_calls,
        vec![tool]
    );
    e.attach_client(&me(), "w").await.unwrap();
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Error {
            code: "client_tool_failed".into(),
            message: "x".into(),
            usage: None,
        },
    )
    .await
    .unwrap();
    assert_valid(&e, &sid).await;
}

/// The engine's authority for the other two published client traces has
/// their shape, type for type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_published_delivery_failure_trace_is_reproduced() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _clock) = setup(dir.path()).await;
    let sid = session(&e).await;
    // Bound to an executor that never attached: delivery cannot be accepted.
    let run = bound_run(&e, &sid, "desktop-missing").await;
    e.start_client_tool_call(&me(), &sid, &run, "open.file", json!({"path": "README.md"}))
        .await
        .unwrap();
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Error {
            code: "client_tool_failed".into(),
            message: "Client tool execution failed.".into(),
            usage: None,
        },
    )
    .await
    .unwrap();
    let j = journal(&e, &sid).await;
    let closed = v(&j[2]);
    assert_eq!(closed["response"], json!({"code": "client_unavailable"}));
    assert_eq!(closed["code"], "client_unavailable");
    if let Some(spec) = narad_conformance::require_spec("client_delivery_failure_reproduced") {
        let name = "client-tool-delivery-failure.jsonl";
        let text = std::fs::read_to_string(spec.join("conformance").join(name)).unwrap();
        let want: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| v(l.as_bytes())["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(types(&e, &sid).await, want, "{name}");
        let text =
            std::fs::read_to_string(spec.join("conformance/client-tool-stop.jsonl")).unwrap();
        let want: Vec<String> = text
            .lines()
            .map(|l| v(l.as_bytes())["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            want,
            [
                "run.started",
                "tool.call.started",
                "run.stop.requested",
                "tool.call.finished",
                "run.cancelled"
            ]
        );
    }
    assert_valid(&e, &sid).await;
}
