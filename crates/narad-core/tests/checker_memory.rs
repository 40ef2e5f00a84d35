//! Checker state per finished session: a session with no open work must
//! cost at most 1 KiB of live heap, whatever it once held. Counted with a
//! counting global allocator; prints the figures. Ids are UUID-length (36
//! characters), as real hosts send them.
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

/// A 36-character id, unique per `(kind, session, n)`.
fn uuid(kind: u8, session: usize, n: u64) -> String {
    format!("{:08x}-{kind:04x}-4000-8000-{:012x}", session as u32, n)
}

fn event(session: usize, seq: u64, ty: &str, run: u64, step: u64) -> Vec<u8> {
    let tree = if run > 0 {
        let r = uuid(2, session, run);
        format!(r#","rootRunId":"{r}","runId":"{r}","sequence":{step}"#)
    } else {
        String::new()
    };
    let tool = uuid(3, session, run);
    let (interrupt, wait) = (uuid(4, session, run), uuid(5, session, run));
    let body = match ty {
        "session.custom" | "run.custom" => r#","name":"acme.note","value":{"n":1}"#.to_owned(),
        "tool.call.started" => format!(
            r#","toolCallId":"{tool}","toolName":"search","executor":"backend","args":{{}}"#
        ),
        "tool.call.finished" => {
            format!(r#","toolCallId":"{tool}","outcome":"success","response":{{}}"#)
        }
        "interrupt.requested" => format!(
            r#","interruptId":"{interrupt}","waitId":"{wait}","kind":"approval","actions":["approve","deny"]"#
        ),
        "run.paused" => format!(
            r#","waitId":"{wait}","reason":"interrupt","resumeMode":"command","interruptId":"{interrupt}""#
        ),
        "interrupt.resolved" => {
            format!(r#","interruptId":"{interrupt}","waitId":"{wait}","decision":"approve""#)
        }
        "run.resumed" => format!(r#","waitId":"{wait}""#),
        _ => String::new(),
    };
    format!(
        r#"{{"type":"{ty}","protocolVersion":"narad/v1","eventId":"{}","timestamp":"2026-08-05T00:00:00Z","sessionId":"{}","sessionSequence":{seq}{tree}{body}}}"#,
        uuid(1, session, seq),
        uuid(0, session, 0),
    )
    .into_bytes()
}

/// A session of back-to-back runs of the given event types, numbered in order.
fn runs(i: usize, count: u64, types: &[&str]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut seq = 0;
    for run in 1..=count {
        for (step, ty) in (1..).zip(types) {
            seq += 1;
            out.push(event(i, seq, ty, run, step));
        }
    }
    out
}

/// Live heap bytes per session once `n` sessions built by `journal` are in.
fn per_session(n: usize, journal: impl Fn(usize) -> Vec<Vec<u8>>) -> f64 {
    per_session_of(Checker::default(), n, journal)
}

/// [`per_session`] of a checker that leaves closed history to the store
/// (the engine's), its closed records taken after each session as the
/// engine's next snapshot would.
fn per_session_leaving(n: usize, journal: impl Fn(usize) -> Vec<Vec<u8>>) -> f64 {
    let mut checker = Checker::default();
    checker.leave_closed_to_store();
    per_session_of(checker, n, journal)
}

fn per_session_of(mut checker: Checker, n: usize, journal: impl Fn(usize) -> Vec<Vec<u8>>) -> f64 {
    let leaving = checker.leaves_closed_to_store();
    // Warm-up: the first session allocates the map roots.
    for bytes in journal(usize::MAX) {
        checker.push_bytes(&bytes).unwrap();
    }
    let region = Region::new(GLOBAL);
    for i in 0..n {
        for bytes in journal(i) {
            checker.push_bytes(&bytes).unwrap();
        }
        if leaving {
            drop(checker.take_closed(&uuid(0, i, 0), usize::MAX));
        }
    }
    let stats = region.change();
    // Reallocations are already counted in both (as growth or shrinkage).
    let live = stats.bytes_allocated as f64 - stats.bytes_deallocated as f64;
    drop(checker);
    live / n as f64
}

const TOOL_RUN: [&str; 4] = [
    "run.started",
    "tool.call.started",
    "tool.call.finished",
    "run.finished",
];
const INTERRUPT_RUN: [&str; 6] = [
    "run.started",
    "interrupt.requested",
    "run.paused",
    "interrupt.resolved",
    "run.resumed",
    "run.finished",
];
/// The shape of `narad bench validate`'s sessions: ten runs of eight events.
const BENCH_RUN: [&str; 8] = [
    "run.started",
    "tool.call.started",
    "run.custom",
    "run.custom",
    "run.custom",
    "run.custom",
    "tool.call.finished",
    "run.finished",
];

/// The sessions of `narad bench validate`: short ids (`run-3`, `tool-3`,
/// `evt-{s}-{seq}`), ten runs of eight events with a progress event.
fn bench_session(s: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut seq = 0;
    for run in 1..=10 {
        let bodies = [
            r#""type":"run.started""#.to_owned(),
            format!(r#""type":"tool.call.started","toolCallId":"tool-{run}","toolName":"search","executor":"backend","args":{{"query":"narad"}}"#),
            r#""type":"progress.recorded","progressId":"phase","category":"phase","label":"Searching","status":"active","privacy":"public""#.to_owned(),
            r#""type":"run.custom","name":"acme.tokens","value":{"n":17}"#.to_owned(),
            r#""type":"run.custom","name":"acme.tokens","value":{"n":18}"#.to_owned(),
            r#""type":"run.custom","name":"acme.tokens","value":{"n":19}"#.to_owned(),
            format!(r#""type":"tool.call.finished","toolCallId":"tool-{run}","outcome":"success","response":{{"hits":1}}"#),
            r#""type":"run.finished""#.to_owned(),
        ];
        for (k, body) in (1..).zip(bodies) {
            seq += 1;
            out.push(format!(
                r#"{{"protocolVersion":"narad/v1","eventId":"evt-{s}-{seq}","timestamp":"2026-08-05T00:00:01.250Z","sessionId":"session-{s}","sessionSequence":{seq},"rootRunId":"run-{run}","runId":"run-{run}","sequence":{k},{body}}}"#
            ).into_bytes());
        }
    }
    out
}

#[test]
fn a_finished_session_costs_at_most_one_kib() {
    let n = std::env::var("NARAD_MEMORY_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let one_event = per_session(n, |i| vec![event(i, 1, "session.custom", 0, 0)]);
    let finished_run = per_session(n, |i| runs(i, 1, &["run.started", "run.finished"]));
    let with_tool = per_session(n, |i| runs(i, 1, &TOOL_RUN));
    let with_interrupt = per_session(n, |i| runs(i, 1, &INTERRUPT_RUN));
    let bench = per_session(n / 10, |i| runs(i, 10, &BENCH_RUN));
    let leaving_event = per_session_leaving(n, |i| vec![event(i, 1, "session.custom", 0, 0)]);
    let leaving_tool = per_session_leaving(n, |i| runs(i, 1, &TOOL_RUN));
    let bench_ids = per_session(n / 10, bench_session);
    println!("checker state per finished session, {n} sessions, 36-character ids:");
    println!("  one session.custom event            {one_event:>8.0} bytes");
    println!("  run.started + run.finished          {finished_run:>8.0} bytes");
    println!("  ... with one finished tool call     {with_tool:>8.0} bytes");
    println!("  ... with one resolved interrupt     {with_interrupt:>8.0} bytes");
    println!("  one event, closed history to store  {leaving_event:>8.0} bytes");
    println!("  a tool-call run, handed to store    {leaving_tool:>8.0} bytes");
    println!(
        "  ten runs of eight events (80)       {bench:>8.0} bytes ({:.0} per event)",
        bench / 80.0
    );
    println!(
        "  narad bench validate's session (80)  {bench_ids:>8.0} bytes ({:.0} per event)",
        bench_ids / 80.0
    );
    // Issue 13: `narad bench validate --full` holds 125,000 such sessions
    // within 256 MiB of RSS, allocator overhead and buffers included.
    assert!(
        bench_ids <= 2048.0,
        "{bench_ids} bytes per bench-shaped session"
    );
    for (what, bytes) in [
        ("one-event", one_event),
        ("finished-run", finished_run),
        ("tool-call", with_tool),
        ("interrupt", with_interrupt),
        ("one-event (closed history to the store)", leaving_event),
        ("tool-call (closed history to the store)", leaving_tool),
    ] {
        assert!(bytes <= BOUND, "{bytes} bytes per {what} session");
    }
}
