//! Checker state per finished session: a session with no open work must
//! cost at most 1 KiB of live heap, whatever it once held. Counted with a
//! counting global allocator; prints the figures.
//!
//! `cargo test -p narad-core --test checker_memory -- --nocapture`
//! (set `NARAD_MEMORY_SESSIONS` for more than the default 20,000).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::Checker;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const BOUND: f64 = 1024.0;

fn event(session: usize, seq: u64, ty: &str, run: bool) -> Vec<u8> {
    let tree = if run {
        format!(r#","rootRunId":"run-{session}","runId":"run-{session}","sequence":{seq}"#)
    } else {
        String::new()
    };
    let body = match ty {
        "session.custom" => r#","name":"acme.note","value":{"n":1}"#.to_owned(),
        "tool.call.started" => format!(
            r#","toolCallId":"tool-{session}","toolName":"search","executor":"backend","args":{{}}"#
        ),
        "tool.call.finished" => {
            format!(r#","toolCallId":"tool-{session}","outcome":"success","response":{{}}"#)
        }
        _ => String::new(),
    };
    format!(
        r#"{{"type":"{ty}","protocolVersion":"narad/v1","eventId":"evt-{session}-{seq}","timestamp":"2026-08-05T00:00:00Z","sessionId":"session-{session}","sessionSequence":{seq}{tree}{body}}}"#
    )
    .into_bytes()
}

/// Live heap bytes per session once `n` sessions built by `journal` are in.
fn per_session(n: usize, journal: impl Fn(usize) -> Vec<Vec<u8>>) -> f64 {
    let mut checker = Checker::default();
    // Warm-up: the first session allocates the map roots.
    for bytes in journal(usize::MAX) {
        checker.push_bytes(&bytes).unwrap();
    }
    let region = Region::new(GLOBAL);
    for i in 0..n {
        for bytes in journal(i) {
            checker.push_bytes(&bytes).unwrap();
        }
    }
    let stats = region.change();
    // Reallocations are already counted in both (as growth or shrinkage).
    let live = stats.bytes_allocated as f64 - stats.bytes_deallocated as f64;
    drop(checker);
    live / n as f64
}

#[test]
fn a_finished_session_costs_at_most_one_kib() {
    let n = std::env::var("NARAD_MEMORY_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let one_event = per_session(n, |i| vec![event(i, 1, "session.custom", false)]);
    let finished_run = per_session(n, |i| {
        vec![
            event(i, 1, "run.started", true),
            event(i, 2, "run.finished", true),
        ]
    });
    let with_tool = per_session(n, |i| {
        vec![
            event(i, 1, "run.started", true),
            event(i, 2, "tool.call.started", true),
            event(i, 3, "tool.call.finished", true),
            event(i, 4, "run.finished", true),
        ]
    });
    println!("checker state per finished session, {n} sessions:");
    println!("  one session.custom event            {one_event:>8.0} bytes");
    println!("  run.started + run.finished          {finished_run:>8.0} bytes");
    println!("  ... with one finished tool call     {with_tool:>8.0} bytes");
    assert!(
        one_event <= BOUND,
        "{one_event} bytes per one-event session"
    );
    assert!(
        finished_run <= BOUND,
        "{finished_run} bytes per finished-run session"
    );
}
