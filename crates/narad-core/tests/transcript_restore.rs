//! A restored transcript decides and reads as one never restored: on
//! random conversations (repeated and unknown message ids, deltas to
//! completed messages, redactions), a checker that is snapshotted and
//! restored at random points, its messages read at random points, gives
//! every record the same verdict as one that is not, and ends with the
//! same transcript and state.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use bytes::Bytes;
use narad_core::checker::Checker;
use narad_core::Validator;
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
enum Op {
    User(u8, String),
    Started(u8),
    Delta(u8, String),
    Completed(u8),
    Redacted(u8, Option<String>),
    /// Snapshot and restore (`true`: in place, from shared bytes).
    Restore(bool),
    /// Read every message as a reference (which decodes them all).
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u8..8;
    let text = "[a-zé☃ ]{0,6}";
    prop_oneof![
        3 => (id.clone(), text).prop_map(|(i, t)| Op::User(i, t)),
        2 => id.clone().prop_map(Op::Started),
        4 => (id.clone(), text).prop_map(|(i, t)| Op::Delta(i, t)),
        2 => id.clone().prop_map(Op::Completed),
        1 => (id, proptest::option::of(text)).prop_map(|(i, t)| Op::Redacted(i, t)),
        1 => any::<bool>().prop_map(Op::Restore),
        1 => Just(Op::Read),
    ]
}

/// Message id `i`: short ones, and one long enough to be unusual.
fn mid(i: u8) -> String {
    match i {
        7 => "m".repeat(300),
        _ => format!("m{i}"),
    }
}

struct Journal {
    session: u64,
    run: u64,
}

impl Journal {
    fn record(&self, body: Value, in_run: bool) -> Vec<u8> {
        let mut e = json!({"protocolVersion": "narad/v1", "eventId": format!("e{}", self.session + 1),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": self.session + 1});
        if in_run {
            e["rootRunId"] = json!("r1");
            e["runId"] = json!("r1");
            e["sequence"] = json!(self.run + 1);
        }
        e.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        serde_json::to_vec(&e).unwrap()
    }
}

fn restore(c: &Checker, shared: bool) -> Checker {
    let snap = c.snapshot();
    let restored = match shared {
        true => Checker::restore_shared(Validator::default(), &Bytes::from(snap), || true).1,
        false => Checker::restore(Validator::default(), &snap),
    };
    restored.expect("a snapshot restores")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_restored_transcript_decides_and_reads_as_one_never_restored(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let mut j = Journal { session: 0, run: 0 };
        let mut plain = Checker::default();
        let mut restored = Checker::default();
        let first = j.record(json!({"type": "run.started"}), true);
        plain.push_bytes(&first).unwrap();
        restored.push_bytes(&first).unwrap();
        (j.session, j.run) = (1, 1);
        for op in ops {
            let (body, in_run) = match op {
                Op::Restore(shared) => {
                    restored = restore(&restored, shared);
                    continue;
                }
                Op::Read => {
                    let t = restored.transcript("s").unwrap();
                    let by_ref: Vec<_> = t.messages.iter().cloned().collect();
                    let expect: Vec<_> = plain.transcript("s").unwrap().messages.iter().cloned().collect();
                    prop_assert_eq!(by_ref, expect);
                    continue;
                }
                Op::User(i, text) => (json!({"type": "message.user.recorded", "messageId": mid(i), "messageScope": "session", "content": text}), false),
                Op::Started(i) => (json!({"type": "message.text.started", "messageId": mid(i), "role": "assistant", "messageScope": "run"}), true),
                Op::Delta(i, text) => (json!({"type": "message.text.delta", "messageId": mid(i), "delta": text}), false),
                Op::Completed(i) => (json!({"type": "message.text.completed", "messageId": mid(i)}), false),
                Op::Redacted(i, shown) => (json!({"type": "message.redacted", "messageId": mid(i), "reason": "pii", "displayReplacement": shown}), false),
            };
            let bytes = j.record(body, in_run);
            let code = |r: Result<_, narad_core::checker::Rejection>| r.map(|_| ()).map_err(|e| e.code);
            let verdict = code(plain.push_bytes(&bytes));
            prop_assert_eq!(&verdict, &code(restored.push_bytes(&bytes)), "{}", String::from_utf8_lossy(&bytes));
            if verdict.is_ok() {
                j.session += 1;
                j.run += u64::from(in_run);
            }
        }
        let (a, b) = (plain.transcript("s").unwrap(), restored.transcript("s").unwrap());
        prop_assert_eq!(a, b);
        prop_assert_eq!(plain.state_json("s"), restored.state_json("s"));
        for m in a.messages.iter() {
            let found = b.get(&m.message_id).map(|m| m.into_owned());
            prop_assert_eq!(found.as_ref(), Some(m));
        }
        prop_assert!(b.get("absent").is_none());
        // And once more through a snapshot of the restored checker.
        let again = restore(&restored, true);
        prop_assert_eq!(again.transcript("s"), plain.transcript("s"));
    }
}
