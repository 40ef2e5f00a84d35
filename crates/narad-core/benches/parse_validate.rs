//! Parse + validate throughput against plain `serde_json::from_slice::<Value>`
//! of the same bytes. Prints records/s for both and the ratio.
//!
//! `cargo bench -p narad-core --bench parse_validate [-- RECORDS]`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::{Parsed, Validator};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A representative journal mix: lifecycle, tools, conversation, progress.
fn corpus(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let base = json!({
                "protocolVersion": "narad/v1", "eventId": format!("evt-{i}"),
                "timestamp": "2026-08-05T00:00:01.250Z", "sessionId": "session-bench",
                "sessionSequence": i + 1, "rootRunId": "run-1", "runId": "run-1", "sequence": i + 1
            });
            let body = match i % 6 {
                0 => json!({"type": "tool.call.started", "toolCallId": format!("tool-{i}"), "toolName": "search", "executor": "backend", "args": {"query": "narad protocol", "limit": 10}}),
                1 => json!({"type": "tool.call.finished", "toolCallId": format!("tool-{}", i - 1), "outcome": "success", "response": {"hits": [{"title": "Narad", "score": 0.9}]}}),
                2 => json!({"type": "progress.recorded", "progressId": "phase", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
                3 => json!({"type": "message.text.delta", "messageId": "m-1", "delta": "The quick brown fox jumps over the lazy dog. "}),
                4 => json!({"type": "run.custom", "name": "acme.metrics", "value": {"latencyMs": 12}}),
                _ => json!({"type": "interrupt.requested", "interruptId": format!("i-{i}"), "waitId": format!("w-{i}"), "kind": "approval", "actions": ["approve", "deny"], "title": "Run tool?"}),
            };
            let mut m = base.as_object().cloned().unwrap_or_default();
            m.extend(body.as_object().cloned().unwrap_or_default());
            serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
        })
        .collect()
}

/// Best of `rounds` passes over the corpus.
fn best(rounds: usize, mut pass: impl FnMut() -> usize) -> Duration {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            black_box(pass());
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let records = corpus(n);
    let bytes: usize = records.iter().map(Vec::len).sum();
    let validator = Validator::default();
    // Sanity: every record is accepted, so the timed path is the full path.
    let accepted = records
        .iter()
        .filter(|r| matches!(validator.parse(r), Ok(Parsed::Record { .. })))
        .count();
    assert_eq!(accepted, n, "bench corpus must be valid");

    let rounds = 5;
    let plain = best(rounds, || {
        records
            .iter()
            .filter(|r| serde_json::from_slice::<Value>(r).is_ok())
            .count()
    });
    let strict = best(rounds, || {
        records
            .iter()
            .filter(|r| narad_core::json::from_slice_strict(r).is_ok())
            .count()
    });
    let narad = best(rounds, || {
        records
            .iter()
            .filter(|r| validator.parse(r).is_ok())
            .count()
    });
    let check_only = {
        let values: Vec<Value> = records
            .iter()
            .filter_map(|r| serde_json::from_slice(r).ok())
            .collect();
        best(rounds, || {
            values.iter().filter(|v| validator.check(v).is_ok()).count()
        })
    };

    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "parse_validate: {n} records, {:.1} MiB, best of {rounds}",
        bytes as f64 / 1_048_576.0
    );
    println!(
        "  serde_json::from_slice::<Value>     {:>12.0} records/s",
        rate(plain)
    );
    println!(
        "  narad_core::json::from_slice_strict {:>12.0} records/s",
        rate(strict)
    );
    println!(
        "  narad-core parse (validate + typed) {:>12.0} records/s",
        rate(narad)
    );
    println!(
        "  narad-core check only (on Value)    {:>12.0} records/s",
        rate(check_only)
    );
    println!(
        "  ratio narad parse / plain parse     {:>12.2}x the time ({:.0}% of plain throughput)",
        narad.as_secs_f64() / plain.as_secs_f64(),
        100.0 * plain.as_secs_f64() / narad.as_secs_f64()
    );
    wide_unique_arrays(&validator);
}

/// Ten records, each with a 10,000-item array whose items must be unique
/// (`artifactIds`): the uniqueness check must stay linear.
fn wide_unique_arrays(validator: &Validator) {
    let ids: Vec<String> = (0..10_000).map(|i| format!("artifact-{i}")).collect();
    let records: Vec<Vec<u8>> = (0..10)
        .map(|i| {
            serde_json::to_vec(&json!({
                "type": "run.finished", "protocolVersion": "narad/v1", "eventId": format!("e{i}"),
                "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": 2,
                "rootRunId": "r", "runId": "r", "sequence": 2, "artifactIds": ids,
            }))
            .unwrap()
        })
        .collect();
    let took = best(3, || {
        records
            .iter()
            .filter(|r| matches!(validator.parse(r), Ok(Parsed::Record { .. })))
            .count()
    });
    println!(
        "  10 records with 10,000 unique artifactIds {:>8.3} ms per record",
        took.as_secs_f64() * 1000.0 / records.len() as f64
    );
}
