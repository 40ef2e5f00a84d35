//! At-least-once delivery (§10.1): redelivering any accepted record, at once
//! or after a whole replay, is a no-op, and a changed redelivery is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_conformance::{load_traces, require_spec, Trace};
use narad_core::checker::{Applied, Checker};
use std::path::Path;

fn valid_traces() -> Vec<Trace> {
    let mut all = load_traces(&Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")).unwrap();
    if let Some(spec) = require_spec("redelivery over published traces") {
        all.extend(load_traces(&spec.join("conformance")).unwrap());
    }
    all.retain(|t| !t.invalid);
    all
}

fn heads(c: &Checker, t: &Trace) -> Vec<Option<u64>> {
    let mut ids: Vec<String> = t
        .lines
        .iter()
        .filter_map(|(_, b)| {
            serde_json::from_slice::<serde_json::Value>(b)
                .ok()?
                .get("sessionId")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids.iter().map(|s| c.session_head(s)).collect()
}

#[test]
fn immediate_redelivery_of_every_record_is_a_no_op() {
    for t in valid_traces() {
        let mut once = Checker::default();
        let mut twice = Checker::default();
        for (line, b) in &t.lines {
            once.push_bytes(b)
                .unwrap_or_else(|e| panic!("{}:{line}: {e}", t.name));
            twice
                .push_bytes(b)
                .unwrap_or_else(|e| panic!("{}:{line}: {e}", t.name));
            let again = twice
                .push_bytes(b)
                .unwrap_or_else(|e| panic!("{}:{line} redelivered: {e}", t.name));
            let has_identity = serde_json::from_slice::<serde_json::Value>(b)
                .unwrap()
                .get("eventId")
                .is_some();
            if has_identity {
                assert_ne!(
                    again,
                    Applied::Applied,
                    "{}:{line}: a redelivery was applied twice",
                    t.name
                );
            }
        }
        assert_eq!(heads(&once, &t), heads(&twice, &t), "{}", t.name);
    }
}

#[test]
fn replay_after_reconnect_is_a_no_op() {
    for t in valid_traces() {
        let mut c = Checker::default();
        for (_, b) in &t.lines {
            c.push_bytes(b).unwrap();
        }
        let before = heads(&c, &t);
        for (line, b) in &t.lines {
            let r = c
                .push_bytes(b)
                .unwrap_or_else(|e| panic!("{}:{line} replayed: {e}", t.name));
            // Control messages carry no identity and are not deduplicated here;
            // hydrate records re-anchor idempotently. Authority and watch are no-ops.
            let v: serde_json::Value = serde_json::from_slice(b).unwrap();
            if v.get("eventId").is_some() {
                assert_ne!(r, Applied::Applied, "{}:{line}", t.name);
            }
        }
        assert_eq!(heads(&c, &t), before, "{}", t.name);
    }
}

#[test]
fn a_redelivery_with_different_data_is_refused() {
    for t in valid_traces() {
        let mut c = Checker::default();
        for (line, b) in &t.lines {
            c.push_bytes(b).unwrap();
            let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
            if v.get("eventId").is_none() {
                continue;
            }
            v["x-changed"] = serde_json::json!(true);
            let err = c
                .push_bytes(&serde_json::to_vec(&v).unwrap())
                .expect_err("changed redelivery accepted");
            assert_eq!(err.code, "duplicate_event_conflict", "{}:{line}", t.name);
        }
    }
}
