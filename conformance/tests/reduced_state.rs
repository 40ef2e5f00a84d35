//! What the checker's reduced state holds: the transcript (§9.2–9.4) and
//! state documents (§9.6), and byte-identical serialization.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::Checker;
use serde_json::{json, Value};

fn ev(n: u64, body: Value) -> Vec<u8> {
    let mut e = json!({"protocolVersion": "narad/v1", "eventId": format!("e{n}"), "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": n});
    e.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    serde_json::to_vec(&e).unwrap()
}

fn run(root: &str, run: &str, seq: u64, body: Value) -> Value {
    let mut b = json!({"rootRunId": root, "runId": run, "sequence": seq});
    b.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    b
}

fn conversation() -> Vec<Vec<u8>> {
    vec![
        ev(
            1,
            json!({"type": "message.user.recorded", "messageId": "u1", "messageScope": "session", "content": "Hi"}),
        ),
        ev(2, run("r1", "r1", 1, json!({"type": "run.started"}))),
        ev(
            3,
            json!({"type": "reasoning.started", "reasoningId": "reasoning:a1", "messageId": "a1"}),
        ),
        ev(
            4,
            json!({"type": "reasoning.delta", "reasoningId": "reasoning:a1", "delta": "Think"}),
        ),
        ev(
            5,
            run(
                "r1",
                "r1",
                2,
                json!({"type": "message.text.started", "messageId": "a2", "role": "assistant", "messageScope": "run"}),
            ),
        ),
        ev(
            6,
            json!({"type": "message.text.delta", "messageId": "a2", "delta": "Hel"}),
        ),
        ev(
            7,
            json!({"type": "message.text.delta", "messageId": "a2", "delta": "lo"}),
        ),
        ev(
            8,
            json!({"type": "message.text.completed", "messageId": "a2"}),
        ),
        ev(
            9,
            run(
                "r1",
                "c1",
                3,
                json!({"type": "run.started", "parentRunId": "r1"}),
            ),
        ),
        ev(
            10,
            run(
                "r1",
                "c1",
                4,
                json!({"type": "message.text.started", "messageId": "n1", "role": "assistant", "messageScope": "run"}),
            ),
        ),
        ev(
            11,
            json!({"type": "message.redacted", "messageId": "u1", "reason": "pii", "displayReplacement": "[removed]"}),
        ),
        ev(
            12,
            json!({"type": "state.snapshot", "scope": "session", "revision": 1, "state": {"todo": ["a"]}}),
        ),
        ev(
            13,
            json!({"type": "state.delta", "scope": "session", "baseRevision": 1, "revision": 2, "patch": [{"op": "add", "path": "/todo/-", "value": "b"}]}),
        ),
    ]
}

#[test]
fn deltas_apply_once_reasoning_is_kept_redaction_is_display_only_and_nested_runs_are_hidden() {
    let mut c = Checker::default();
    for (i, e) in conversation().iter().enumerate() {
        c.push_bytes(e).unwrap();
        if i == 5 {
            c.push_bytes(e).unwrap(); // redelivered delta: applied once
        }
    }
    let t = c.transcript("s").unwrap();
    let a2 = t.messages.iter().find(|m| m.message_id == "a2").unwrap();
    assert_eq!((a2.content.as_str(), a2.completed), ("Hello", true));
    // Reasoning joined by id stays although the final text landed on a2.
    assert_eq!(t.reasoning[0].content, "Think");
    assert_eq!(t.reasoning[0].message_id.as_deref(), Some("a1"));
    // Redaction replaces the display only.
    let u1 = &t.messages[0];
    assert_eq!(
        (u1.content.as_str(), u1.redacted.clone()),
        ("Hi", Some(Some("[removed]".to_owned())))
    );
    // Primary transcript: session messages and the top-level run's, not the nested run's.
    let primary: Vec<&str> = c
        .primary_transcript("s")
        .iter()
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(primary, ["u1", "a2"]);
    assert_eq!(
        c.documents("s").unwrap().documents["state:session"].value,
        json!({"todo": ["a", "b"]})
    );
}

#[test]
fn a_transcript_snapshot_replaces_what_it_covers() {
    let mut c = Checker::default();
    for e in &conversation()[..8] {
        c.push_bytes(e).unwrap();
    }
    let snap = json!({"type": "messages.snapshot", "protocolVersion": "narad/v1", "timestamp": "2026-08-05T00:00:00Z", "snapshotId": "x", "sessionId": "s", "coversThroughSessionSequence": 8, "messages": [{"messageId": "u1", "role": "user", "content": "Hi"}, {"messageId": "a2", "role": "assistant", "content": "Hello!"}]});
    c.push_bytes(&serde_json::to_vec(&snap).unwrap()).unwrap();
    let contents: Vec<&str> = c
        .transcript("s")
        .unwrap()
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(contents, ["Hi", "Hello!"]);
    assert_eq!(c.session_head("s"), Some(8));
}

#[test]
fn reducing_twice_gives_byte_identical_serialized_state() {
    let reduce = || {
        let mut c = Checker::default();
        conversation().iter().for_each(|e| {
            c.push_bytes(e).unwrap();
        });
        c.state_json("s").unwrap()
    };
    let (a, b) = (reduce(), reduce());
    assert_eq!(a, b);
    assert!(a.contains("\"todo\":[\"a\",\"b\"]"), "{a}");
}
