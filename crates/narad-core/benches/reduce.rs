//! Parse + validate + reduce over a 1,000,000-event journal, beside
//! parse-only of the same bytes; prints events/s, the ratio and peak memory.
//!
//! `cargo bench -p narad-core --bench reduce [-- EVENTS]`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use narad_core::checker::Checker;
use serde_json::{json, Value};
use std::time::Instant;

/// One session of back-to-back top-level runs, each: started, tool call,
/// progress, three streamed text deltas, tool finish, finished (8 events).
fn journal(n: usize) -> (Vec<u8>, Vec<(usize, usize)>) {
    let (mut buf, mut spans) = (Vec::with_capacity(n * 330), Vec::with_capacity(n));
    let mut seq = 0u64;
    let mut run = 0u64;
    while spans.len() < n {
        run += 1;
        let root = format!("run-{run}");
        for (k, body) in [
            json!({"type": "run.started"}),
            json!({"type": "tool.call.started", "toolCallId": format!("tool-{run}"), "toolName": "search", "executor": "backend", "args": {"query": "narad", "limit": 10}}),
            json!({"type": "progress.recorded", "progressId": "phase", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
            json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 17}}),
            json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 18}}),
            json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 19}}),
            json!({"type": "tool.call.finished", "toolCallId": format!("tool-{run}"), "outcome": "success", "response": {"hits": [{"title": "Narad", "score": 0.9}]}}),
            json!({"type": "run.finished", "usage": {"promptTokens": 120, "completionTokens": 40, "totalTokens": 160}}),
        ]
        .into_iter()
        .enumerate()
        {
            if spans.len() == n {
                break;
            }
            seq += 1;
            let mut m = json!({
                "protocolVersion": "narad/v1", "eventId": format!("evt-{seq}"),
                "timestamp": "2026-08-05T00:00:01.250Z", "sessionId": "session-bench",
                "sessionSequence": seq, "rootRunId": root, "runId": root, "sequence": k + 1
            });
            m.as_object_mut().unwrap().extend(body.as_object().cloned().unwrap());
            let start = buf.len();
            serde_json::to_writer(&mut buf, &m).unwrap();
            spans.push((start, buf.len()));
            buf.push(b'\n');
        }
    }
    (buf, spans)
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let (buf, spans) = journal(n);
    let base = peak_rss_kib();

    let t = Instant::now();
    let parsed = spans
        .iter()
        .filter(|(a, b)| serde_json::from_slice::<Value>(&buf[*a..*b]).is_ok())
        .count();
    let parse_only = t.elapsed();
    assert_eq!(parsed, n);
    let after_parse = peak_rss_kib();

    let t = Instant::now();
    let mut checker = Checker::default();
    for (i, (a, b)) in spans.iter().enumerate() {
        if let Err(e) = checker.push_bytes(&buf[*a..*b]) {
            panic!("bench journal rejected at {i}: {e}");
        }
    }
    let full = t.elapsed();
    let after_reduce = peak_rss_kib();
    assert_eq!(checker.session_head("session-bench"), Some(n as u64));

    let rate = |d: std::time::Duration| n as f64 / d.as_secs_f64();
    let mib = |k: Option<u64>| {
        k.map_or("n/a".to_owned(), |k| {
            format!("{:.0} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "reduce: {n} events, {:.0} MiB of JSONL",
        buf.len() as f64 / 1_048_576.0
    );
    println!(
        "  parse only (serde_json Value)    {:>10.0} events/s  ({:.2} s)",
        rate(parse_only),
        parse_only.as_secs_f64()
    );
    println!(
        "  parse + validate + reduce        {:>10.0} events/s  ({:.2} s)",
        rate(full),
        full.as_secs_f64()
    );
    println!(
        "  ratio full / parse-only          {:>10.2}x the time",
        full.as_secs_f64() / parse_only.as_secs_f64()
    );
    println!(
        "  peak RSS: corpus {}, after parse-only {}, after reduce {}",
        mib(base),
        mib(after_parse),
        mib(after_reduce)
    );
    drop(checker);
}
