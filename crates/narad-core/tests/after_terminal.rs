//! What a run's journal accepts after the run's terminal (§6.1, §7.5,
//! §9.8). Every run-tree authority type of the registry is refused on a
//! terminated run, and the refusal changes nothing. The session-scoped
//! types that may carry a run's fields are accepted there, as before.
//!
//! The type lists are checked against `registry::TYPES`, so a new type
//! fails here until it is given a sample and a verdict; and a rule that
//! let a new run-tree type through on a terminated run (the old catch-all
//! `_ => Ok(())`) fails the refusal assertion.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::Checker;
use narad_core::registry::TYPES;
use narad_core::RecordClass;
use serde_json::{json, Value};

/// A journal of run `r`: a tool call, an interrupt with its pause and
/// resume, then `run.finished`. The next position is 9.
fn finished_run() -> Vec<Value> {
    let body = [
        json!({"type": "run.started"}),
        json!({"type": "tool.call.started", "toolCallId": "t1", "toolName": "n", "executor": "backend", "args": {}}),
        json!({"type": "tool.call.finished", "toolCallId": "t1", "outcome": "success", "response": null}),
        json!({"type": "interrupt.requested", "interruptId": "i1", "waitId": "w1", "kind": "x.approval", "actions": ["approve"]}),
        json!({"type": "run.paused", "waitId": "w1", "reason": "x.interrupt", "resumeMode": "command", "interruptId": "i1"}),
        json!({"type": "interrupt.resolved", "interruptId": "i1", "waitId": "w1", "decision": "approve"}),
        json!({"type": "run.resumed", "waitId": "w1"}),
        json!({"type": "run.finished"}),
    ];
    body.into_iter()
        .enumerate()
        .map(|(i, b)| event(b, i as u64 + 1))
        .collect()
}

fn event(body: Value, position: u64) -> Value {
    let mut v = json!({
        "protocolVersion": "narad/v1", "eventId": format!("e{position}"),
        "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": position,
        "rootRunId": "r", "runId": "r", "sequence": position
    });
    if let (Some(o), Value::Object(b)) = (v.as_object_mut(), body) {
        o.extend(b);
    }
    v
}

/// Each run-tree type, a body for it, and the code it is refused with on
/// the terminated run `r`.
fn run_tree_samples() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("run.started", json!({}), "run_already_started"),
        (
            "run.paused",
            json!({"waitId": "w2", "reason": "x.capacity", "resumeMode": "automatic"}),
            "run_terminated",
        ),
        ("run.resumed", json!({"waitId": "w1"}), "run_terminated"),
        (
            "run.stop.requested",
            json!({"targetRunId": "r"}),
            "stop_target_invalid",
        ),
        ("run.finished", json!({}), "run_terminated"),
        (
            "run.error",
            json!({"code": "x", "message": "m"}),
            "run_terminated",
        ),
        ("run.cancelled", json!({}), "run_terminated"),
        (
            "interrupt.requested",
            json!({"interruptId": "i2", "waitId": "w2", "kind": "x.approval", "actions": ["approve"]}),
            "run_terminated",
        ),
        (
            "interrupt.resolved",
            json!({"interruptId": "i1", "waitId": "w1", "decision": "approve"}),
            "run_terminated",
        ),
        (
            "tool.call.started",
            json!({"toolCallId": "t2", "toolName": "n", "executor": "backend", "args": {}}),
            "run_terminated",
        ),
        (
            "tool.call.finished",
            json!({"toolCallId": "t1", "outcome": "success", "response": null}),
            "tool_call_finished_twice",
        ),
        (
            "progress.recorded",
            json!({"progressId": "p", "category": "x.step", "label": "l", "status": "active", "privacy": "public"}),
            "progress_run_invalid",
        ),
        (
            "run.custom",
            json!({"name": "x.note", "value": 1}),
            "run_terminated",
        ),
        (
            "run.raw",
            json!({"contentType": "text/plain", "payload": "x"}),
            "run_terminated",
        ),
    ]
}

/// Session-scoped types with no lifecycle of their own: they may carry a
/// run's fields and are accepted after its terminal (the spec bars only
/// run work and progress there).
fn session_samples() -> Vec<(&'static str, Value)> {
    vec![
        ("session.custom", json!({"name": "x.note", "value": 1})),
        (
            "session.raw",
            json!({"contentType": "text/plain", "payload": "x"}),
        ),
        ("trace.span.started", json!({})),
        ("trace.span.completed", json!({})),
        ("trace.event", json!({})),
        ("debug.log", json!({})),
        ("debug.snapshot", json!({})),
    ]
}

fn checkers() -> [(&'static str, Checker); 2] {
    [
        ("compacted", Checker::default()),
        ("full history", Checker::default().with_full_history()),
    ]
}

fn journal_checker(mut c: Checker) -> Checker {
    for v in finished_run() {
        c.push_bytes(v.to_string().as_bytes()).unwrap();
    }
    c
}

#[test]
fn every_run_tree_type_has_a_sample() {
    let mut registered: Vec<&str> = TYPES
        .iter()
        .filter(|t| t.class == RecordClass::RunTreeAuthority)
        .map(|t| t.name)
        .collect();
    let mut sampled: Vec<&str> = run_tree_samples().iter().map(|s| s.0).collect();
    registered.sort_unstable();
    sampled.sort_unstable();
    assert_eq!(
        registered, sampled,
        "give each run-tree type a sample and its verdict after a terminal"
    );
}

#[test]
fn every_run_tree_type_is_refused_on_a_terminated_run_and_changes_nothing() {
    for (name, checker) in checkers() {
        let base = journal_checker(checker);
        for (ty, body, code) in run_tree_samples() {
            let mut c = base.clone();
            let before = c.debug_state();
            let mut b = body;
            b["type"] = json!(ty);
            let err = c
                .push_bytes(event(b, 9).to_string().as_bytes())
                .expect_err(ty);
            assert_eq!((err.index, err.code), (8, code), "{name}: {ty}");
            assert_eq!(c.debug_state(), before, "{name}: {ty} changed the state");
        }
    }
}

#[test]
fn session_scoped_types_with_run_fields_are_accepted_after_the_terminal() {
    let session_types: Vec<&str> = session_samples().iter().map(|s| s.0).collect();
    for t in &session_types {
        let info = TYPES.iter().find(|x| x.name == *t).unwrap();
        assert_eq!(info.class, RecordClass::SessionAuthority, "{t}");
    }
    for (name, checker) in checkers() {
        let base = journal_checker(checker);
        for (ty, body) in session_samples() {
            let mut c = base.clone();
            let mut b = body;
            b["type"] = json!(ty);
            let out = c.push_bytes(event(b, 9).to_string().as_bytes());
            assert!(out.is_ok(), "{name}: {ty}: {out:?}");
            assert_eq!(c.run_head("s", "r"), 9, "{name}: {ty}");
        }
    }
}
