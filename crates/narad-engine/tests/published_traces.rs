//! Conformance driven through the engine: for every published golden trace
//! a host could emit, drive the engine with commands derived from the
//! trace's authority events and compare the journal it writes with the
//! trace.
//!
//! What is compared: every authority event (after redelivered duplicates
//! of the trace are dropped), field by field, in order — type, every
//! sequence, every payload field. Ids are compared **up to renaming**: each
//! id field class (event, session, run — `rootRunId`, `runId`,
//! `parentRunId`, `targetRunId` share one —, tool call, interrupt, wait,
//! workflow, executor, message) is renumbered by first appearance in both
//! journals, so the engine's fresh ids must form the same pattern as the
//! trace's. `timestamp` is not compared (the engine's clock is its own).
//! Control, watch and hydrate records of a trace are not authority and are
//! covered by the client-execution and attach tests.
//!
//! Not driven: `snapshot-replay` (it starts mid-session, after a
//! transcript snapshot — a client's replay, not something a host appends
//! from an empty session) and `workspace-watch` (watch only); the
//! `*.invalid` traces (a host must never emit them).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::{journal, me};
use narad_engine::{
    AllowAll, Engine, EngineConfig, EventScope, Interrupt, InterruptScope, ManualClock, NewSession,
    RandomIds, Resolve, StartRun, Started, StopTarget, Terminal, ToolOutcome,
};
use narad_store_redb::RedbStore;
use serde_json::{json, Value};

const DRIVEN: &[&str] = &[
    "authority-replay",
    "client-tool",
    "client-tool-delivery-failure",
    "client-tool-stop",
    "independent-run",
    "interrupt-pause",
    "progress-replay",
    "progress-while-paused",
    "reconnect-revision",
    "run-graph",
    "terminal-usage",
    "workflow",
    "workflow-edge",
];

const ID_CLASSES: &[(&str, &str)] = &[
    ("eventId", "event"),
    ("sessionId", "session"),
    ("rootRunId", "run"),
    ("runId", "run"),
    ("parentRunId", "run"),
    ("targetRunId", "run"),
    ("toolCallId", "tool"),
    ("interruptId", "interrupt"),
    ("waitId", "wait"),
    ("workflowId", "workflow"),
    ("clientExecutorId", "executor"),
    ("defaultClientExecutorId", "executor"),
    ("messageId", "message"),
];

/// Renames ids by first appearance per class; drops `timestamp`.
fn normalize(events: &[Value]) -> Vec<Value> {
    let mut maps: BTreeMap<&str, BTreeMap<String, usize>> = BTreeMap::new();
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            let o = e.as_object_mut().unwrap();
            o.remove("timestamp");
            for (field, class) in ID_CLASSES {
                if let Some(Value::String(id)) = o.get(*field) {
                    let m = maps.entry(class).or_default();
                    let n = m.len();
                    let k = *m.entry(id.clone()).or_insert(n);
                    o.insert((*field).into(), json!(format!("{class}#{k}")));
                }
            }
            e
        })
        .collect()
}

fn authority(lines: &[Value]) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    lines
        .iter()
        .filter(|v| v.get("sessionSequence").is_some())
        .filter(|v| seen.insert(v["eventId"].as_str().unwrap_or_default().to_owned()))
        .cloned()
        .collect()
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// Drives the engine with one command per trace event (engine-produced
/// companions — the pause after an interrupt, the resume after a
/// resolution — are skipped in the trace as the engine writes them).
async fn drive(e: &Engine<RedbStore>, trace: &[Value]) -> String {
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let mut runs: BTreeMap<String, String> = BTreeMap::new(); // trace id -> engine id
    let mut tools: BTreeMap<String, String> = BTreeMap::new();
    let mut waits: BTreeMap<String, String> = BTreeMap::new();
    let mut interrupts: BTreeMap<String, String> = BTreeMap::new();
    let mut wfs: BTreeMap<String, String> = BTreeMap::new();
    let mut executes: BTreeMap<String, Value> = BTreeMap::new(); // engine tool id -> execute
    let mut skip_next: Option<&str> = None;
    for ev in trace {
        let ty = ev["type"].as_str().unwrap();
        if skip_next == Some(ty) {
            skip_next = None;
            continue;
        }
        let run = s(ev, "runId").map(|r| runs.get(&r).cloned().unwrap_or(r));
        match ty {
            "run.started" => {
                let id = ev["runId"].as_str().unwrap().to_owned();
                let executor = s(ev, "clientExecutorId");
                if let Some(x) = &executor {
                    if !x.contains("missing") {
                        e.attach_client(&me(), x).await.unwrap();
                    }
                }
                let started = e
                    .start_run(
                        &me(),
                        &sid,
                        StartRun {
                            parent_run_id: s(ev, "parentRunId").map(|p| runs[&p].clone()),
                            workflow_id: s(ev, "workflowId").map(|w| wfs[&w].clone()),
                            client_executor_id: executor,
                            ..StartRun::default()
                        },
                    )
                    .await
                    .unwrap();
                let Started::Running(r) = started else {
                    panic!()
                };
                runs.insert(id, r);
            }
            "tool.call.started" => {
                let (name, args) = (s(ev, "toolName").unwrap(), ev["args"].clone());
                let run = run.unwrap();
                let id = if ev["executor"] == "client" {
                    let t = e
                        .start_client_tool_call(&me(), &sid, &run, &name, args)
                        .await
                        .unwrap();
                    for ex in std::iter::from_fn(|| e.client_outbox("desktop-1").try_next()) {
                        let v: Value = serde_json::from_slice(&ex).unwrap();
                        if v["type"] == "client.tool.execute" {
                            executes.insert(v["toolCallId"].as_str().unwrap().to_owned(), v);
                        }
                    }
                    t
                } else {
                    e.start_tool_call(&me(), &sid, &run, &name, args)
                        .await
                        .unwrap()
                };
                tools.insert(ev["toolCallId"].as_str().unwrap().to_owned(), id);
            }
            "tool.call.finished" => {
                let tool = tools[ev["toolCallId"].as_str().unwrap()].clone();
                let code = s(ev, "code");
                if code.as_deref() == Some("client_unavailable") {
                    continue; // the engine closed it at start: no executor lease
                }
                if let Some(ex) = executes.get(&tool) {
                    let finish = json!({
                        "type": "client.tool.finish", "protocolVersion": "narad/v1",
                        "clientExecutorId": ex["clientExecutorId"], "leaseId": ex["leaseId"],
                        "executionToken": ex["executionToken"], "toolCallId": tool,
                        "outcome": ev["outcome"], "response": ev["response"],
                    });
                    e.client_finish(&me(), &serde_json::to_vec(&finish).unwrap())
                        .await
                        .unwrap();
                    continue;
                }
                let outcome = match ev["outcome"].as_str().unwrap() {
                    "success" => "success",
                    "error" => "error",
                    _ => "cancelled",
                };
                e.finish_tool_call(
                    &me(),
                    &sid,
                    &tool,
                    ToolOutcome {
                        outcome,
                        response: ev["response"].clone(),
                        code,
                        message: s(ev, "message"),
                    },
                )
                .await
                .unwrap();
            }
            "interrupt.requested" => {
                let scope = match &run {
                    Some(r) => InterruptScope::Run(r.clone()),
                    None => InterruptScope::Workflow(wfs[&s(ev, "workflowId").unwrap()].clone()),
                };
                let (iid, wait) = e
                    .request_interrupt(
                        &me(),
                        &sid,
                        Interrupt {
                            scope,
                            kind: s(ev, "kind").unwrap(),
                            actions: serde_json::from_value(ev["actions"].clone()).unwrap(),
                            input: ev.get("input").cloned(),
                            expires_at: None,
                            title: None,
                        },
                    )
                    .await
                    .unwrap();
                interrupts.insert(s(ev, "interruptId").unwrap(), iid);
                waits.insert(s(ev, "waitId").unwrap(), wait);
                skip_next = Some(if run.is_some() {
                    "run.paused"
                } else {
                    "workflow.paused"
                });
            }
            "interrupt.resolved" => {
                e.resolve_interrupt(
                    &me(),
                    Resolve {
                        interrupt_id: interrupts[&s(ev, "interruptId").unwrap()].clone(),
                        decision: s(ev, "decision").unwrap(),
                        reason: s(ev, "reason"),
                        expected_revision: None,
                        members: ev.get("members").cloned(),
                    },
                )
                .await
                .unwrap();
                skip_next = Some(if run.is_some() {
                    "run.resumed"
                } else {
                    "workflow.resumed"
                });
            }
            "run.stop.requested" => {
                // The stop command's own policy writes what follows when the
                // trace shows exactly that policy; otherwise the stop request
                // alone, and the trace's own closing events follow.
                let policy = trace.windows(2).any(|w| {
                    w[0]["type"] == "run.stop.requested"
                        && w[1]["type"] == "tool.call.finished"
                        && w[1]["outcome"] == "cancelled"
                });
                if policy {
                    e.stop(&me(), &sid, StopTarget::ActiveRoot).await.unwrap();
                    return sid;
                }
                let target = runs[&s(ev, "targetRunId").unwrap()].clone();
                e.append(
                    &me(),
                    &sid,
                    ty,
                    EventScope::Run(run.unwrap()),
                    json!({"targetRunId": target}),
                )
                .await
                .unwrap();
            }
            "run.finished" | "run.error" | "run.cancelled" => {
                let usage = ev.get("usage").cloned();
                let t = match ty {
                    "run.finished" => Terminal::Finished {
                        usage,
                        artifact_ids: ev
                            .get("artifactIds")
                            .map(|a| serde_json::from_value(a.clone()).unwrap())
                            .unwrap_or_default(),
                    },
                    "run.error" => Terminal::Error {
                        code: s(ev, "code").unwrap(),
                        message: s(ev, "message").unwrap(),
                        usage,
                    },
                    _ => Terminal::Cancelled {
                        code: s(ev, "code"),
                        message: s(ev, "message"),
                        usage,
                    },
                };
                e.end_run(&me(), &sid, &run.unwrap(), t).await.unwrap();
            }
            "run.resumed" => {
                let wait = waits[&s(ev, "waitId").unwrap()].clone();
                e.resume_run(&me(), &sid, &run.unwrap(), &wait)
                    .await
                    .unwrap();
            }
            "workflow.started" => {
                let wf = e
                    .start_workflow(&me(), &sid, None, s(ev, "defaultClientExecutorId"))
                    .await
                    .unwrap();
                wfs.insert(s(ev, "workflowId").unwrap(), wf);
            }
            _ => {
                // Profile and workflow events: the generic command, with the
                // type's own fields.
                let mut body = ev.as_object().unwrap().clone();
                for k in [
                    "type",
                    "protocolVersion",
                    "eventId",
                    "timestamp",
                    "sessionId",
                    "sessionSequence",
                    "rootRunId",
                    "runId",
                    "sequence",
                    "workflowId",
                    "workflowSequence",
                ] {
                    body.remove(k);
                }
                let scope = match (&run, s(ev, "workflowId")) {
                    (Some(r), _) => EventScope::Run(r.clone()),
                    (None, Some(w)) => EventScope::Workflow(wfs[&w].clone()),
                    (None, None) => EventScope::Session,
                };
                e.append(&me(), &sid, ty, scope, Value::Object(body))
                    .await
                    .unwrap();
            }
        }
    }
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_emittable_published_trace_is_reproduced_by_driving_the_engine() {
    let Some(spec) = narad_conformance::require_spec("published_traces_driven_through_the_engine")
    else {
        return;
    };
    for name in DRIVEN {
        let text = std::fs::read_to_string(spec.join("conformance").join(format!("{name}.jsonl")))
            .unwrap();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let want = authority(&lines);
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::with_host(
            RedbStore::open(dir.path().join("t.redb")).await.unwrap(),
            Arc::new(ManualClock::at_unix(1_780_000_000)),
            Arc::new(RandomIds),
            Arc::new(AllowAll),
            EngineConfig::default(),
        );
        let sid = drive(&e, &want).await;
        let got: Vec<Value> = journal(&e, &sid)
            .await
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect();
        let (want_n, got_n) = (normalize(&want), normalize(&got));
        for (i, (w, g)) in want_n.iter().zip(&got_n).enumerate() {
            assert_eq!(g, w, "{name}: event {} differs", i + 1);
        }
        assert_eq!(got_n.len(), want_n.len(), "{name}: journal length");
    }
}
