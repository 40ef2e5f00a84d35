//! The checker's own snapshot size and restore time for one long session,
//! without a store or a digest: what `Checker::snapshot` (every eventId
//! kept) and `Checker::snapshot_for_store` (the engine's) write and the
//! best of five `Checker::restore`s (`NARAD_BENCH_RESTORES=50`: of fifty,
//! to profile them), and of five `Checker::restore_shared`s of the
//! store's snapshot (the engine's: messages kept in place, not copied).
//! The two corpora of narad-engine's `hydrate` bench:
//!
//! - `runs`: back-to-back runs, eight events a run;
//! - `messages`: user messages only, so the snapshot is mostly transcript;
//! - `conversation` (`NARAD_BENCH_CORPUS=conversation`): the reduce bench's
//!   chat, from `shared/corpus.rs`.
//!
//! ```text
//! cargo bench -p narad-core --bench snapshot            # 10k, 100k and 1M events
//! NARAD_BENCH_QUICK=1 cargo bench -p narad-core --bench snapshot   # 10k and 100k
//! NARAD_BENCH_CORPUS=messages cargo bench -p narad-core --bench snapshot
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use narad_core::checker::Checker;
use narad_core::Validator;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The `k`-th (1-based) event of run number `run`, at session position `seq`.
fn event(seq: u64, run: u64, k: u64) -> Vec<u8> {
    let tool = format!("tool-{run}");
    let body = match k {
        1 => json!({"type": "run.started"}),
        2 => {
            json!({"type": "tool.call.started", "toolCallId": tool, "toolName": "search", "executor": "backend", "args": {"query": "narad"}})
        }
        3 => {
            json!({"type": "progress.recorded", "progressId": "phase", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"})
        }
        4..=6 => json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": k}}),
        7 => {
            json!({"type": "tool.call.finished", "toolCallId": tool, "outcome": "success", "response": {"hits": []}})
        }
        _ => json!({"type": "run.finished"}),
    };
    let root = format!("run-{run}");
    let mut m = json!({
        "protocolVersion": "narad/v1", "eventId": format!("evt-{seq}"),
        "timestamp": "2026-08-05T00:00:01.250Z", "sessionId": "s",
        "sessionSequence": seq, "rootRunId": root, "runId": root, "sequence": k
    });
    if let (Value::Object(m), Value::Object(b)) = (&mut m, body) {
        m.extend(b);
    }
    serde_json::to_vec(&m).unwrap()
}

/// The `seq`-th event of a session of user messages.
fn message(seq: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "type": "message.user.recorded", "protocolVersion": "narad/v1",
        "eventId": format!("evt-{seq}"), "timestamp": "2026-08-05T00:00:00.000Z",
        "sessionId": "s", "sessionSequence": seq, "messageId": format!("m{seq}"),
        "messageScope": "session", "content": format!("message number {seq}")
    }))
    .unwrap()
}

// The snapshot bench takes only the conversation of the shared corpora.
#[allow(dead_code)]
#[path = "shared/corpus.rs"]
mod corpus;

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let sizes: &[u64] = if quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    // NARAD_BENCH_RESTORES=50 takes more restores (to profile them).
    let restores: usize = std::env::var("NARAD_BENCH_RESTORES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let corpora: Vec<String> = match std::env::var("NARAD_BENCH_CORPUS") {
        Ok(c) => vec![c],
        Err(_) => vec!["runs".into(), "messages".into()],
    };
    for corpus in &corpora {
        for &n in sizes {
            measure(corpus, n, restores);
        }
    }
}

fn measure(corpus: &str, n: u64, restores: usize) {
    let mut c = Checker::default();
    // The same session in a checker that leaves closed history to the
    // store, which keeps what it hands over every 64 events (a batch).
    let mut l = Checker::default();
    l.leave_closed_to_store();
    let (mut handed, mut handed_bytes) = (0usize, 0usize);
    let mut push = |i: u64, b: &[u8]| {
        c.push_bytes(b).unwrap();
        l.push_bytes(b).unwrap();
        if i % 64 == 0 || i == n {
            for r in l.take_closed("s", usize::MAX) {
                handed += 1;
                handed_bytes += r.key.id.len() + r.bytes.len();
            }
        }
    };
    if corpus == "conversation" {
        let records = corpus::records(corpus::Corpus::Conversation, "s", 1);
        for (i, r) in records.take(n as usize).enumerate() {
            push(i as u64 + 1, &serde_json::to_vec(&r).unwrap());
        }
    }
    for seq in (1..=n).filter(|_| corpus != "conversation") {
        let ev = match corpus {
            "messages" => message(seq),
            _ => event(seq, (seq - 1) / 8, (seq - 1) % 8 + 1),
        };
        push(seq, &ev);
    }
    // `snapshot` keeps every eventId; `for-store` leaves them to the store
    // (`Checker::snapshot_for_store`); `closed-out` also leaves closed
    // runs and tool calls there (`Checker::leave_closed_to_store`).
    type Write = fn(&Checker) -> Vec<u8>;
    let kinds: [(&str, &Checker, Write); 3] = [
        ("snapshot", &c, Checker::snapshot),
        ("for-store", &c, Checker::snapshot_for_store),
        ("closed-out", &l, Checker::snapshot_for_store),
    ];
    println!(
        "closed-out {corpus:8} {n:>8} events: {handed} closed records handed to the store, {handed_bytes} bytes with their ids"
    );
    for (kind, c, write_it) in kinds {
        let t = Instant::now();
        let snap = write_it(c);
        let write = t.elapsed();
        let mut best = Duration::MAX;
        for _ in 0..restores {
            let t = Instant::now();
            let r = Checker::restore(Validator::default(), &snap).unwrap();
            best = best.min(t.elapsed());
            assert_eq!(r.session_head("s"), Some(n));
        }
        let shared = bytes::Bytes::from(snap);
        let mut best_shared = Duration::MAX;
        for _ in 0..restores {
            let t = Instant::now();
            let (_, r) = Checker::restore_shared(Validator::default(), &shared, || true);
            best_shared = best_shared.min(t.elapsed());
            assert_eq!(r.unwrap().session_head("s"), Some(n));
        }
        // The next snapshot of a restored checker (its messages still packed).
        let (_, r) = Checker::restore_shared(Validator::default(), &shared, || true);
        let r = r.unwrap();
        let t = Instant::now();
        let again = write_it(&r);
        let rewrite = t.elapsed();
        assert_eq!(again.len(), shared.len());
        let (transcript, closed) = parts(&shared);
        println!(
            "{kind:10} {corpus:8} {n:>8} events: {:>10} bytes ({:>5.1} B/event); write {:>7.1} ms; restore {:>7.1} ms (in place {:>7.1} ms); write again after a restore {:>7.1} ms",
            shared.len(),
            shared.len() as f64 / n as f64,
            write.as_secs_f64() * 1e3,
            best.as_secs_f64() * 1e3,
            best_shared.as_secs_f64() * 1e3,
            rewrite.as_secs_f64() * 1e3,
        );
        println!(
            "{kind:10} {corpus:8} {n:>8} events: without the transcript {:>10} bytes, of which closed-run and tool-call arenas {closed}",
            shared.len() - transcript,
        );
    }
}

/// The bytes of a one-session snapshot's transcript parts (messages and
/// reasoning) and of its closed-history arenas, read from the layout
/// `checker/snapshot/mod.rs` documents: magic and format, the JSON part, then
/// per session the dedup set, the closed runs and tool calls, the messages
/// and the reasoning, each part a u64 LE length and its bytes.
fn parts(snap: &[u8]) -> (usize, usize) {
    let mut at = 12;
    let mut part = || {
        let n = u64::from_le_bytes(snap[at..at + 8].try_into().unwrap()) as usize;
        at += 8 + n;
        n
    };
    let _json = part();
    let _seen = part();
    let closed = part() + part();
    let transcript = part() + part();
    (transcript, closed)
}
