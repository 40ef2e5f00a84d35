//! The compacted checker (hashed eventIds, packed graphs of closed run
//! trees, lean session layout) decides exactly as the checker that kept
//! full history did.
//!
//! Two references:
//! - `recorded_verdicts_and_state_are_unchanged`: 400 seeded journals
//!   (refused records, exact and re-encoded redeliveries, conflicting
//!   eventIds, events after a terminal, interrupts, tool calls, several
//!   sessions) were run through the checker as it was before compaction
//!   (commit 5fa2cf5); `data/compaction_reference.txt` holds a digest of
//!   every verdict, every session's `state_json` and every run tree's
//!   canonical graph per journal. Rerecord with
//!   `NARAD_RECORD_REFERENCE=1` only on purpose.
//! - `packed_graphs_equal_graphs_with_full_history` (proptest): a checker
//!   with canonical graphs keeps every graph live with its whole history;
//!   on journals without graph records its verdicts, state and graphs
//!   equal the compacted checker's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::{Applied, Checker};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const REFERENCE: &str = "tests/data/compaction_reference.txt";
const JOURNALS: u64 = 400;
const STEPS: usize = 120;

/// xorshift64*: the journals must not depend on any crate's generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Default, Clone)]
struct Sess {
    head: u64,
    root: Option<String>,
    run_seq: BTreeMap<String, u64>,
    closed: Vec<String>,
    tool: Option<String>,
    interrupt: Option<(String, String, u8)>,
}

/// Drives one journal from choices, pushing each record as it is made;
/// the model follows only accepted records, so refused ones are made on
/// purpose and by chance.
struct Driver {
    checker: Checker,
    sessions: Vec<Sess>,
    sent: Vec<Vec<u8>>,
    log: String,
    n: u64,
}

impl Driver {
    fn new(checker: Checker) -> Self {
        Self {
            checker,
            sessions: vec![Sess::default(); 3],
            sent: Vec::new(),
            log: String::new(),
            n: 0,
        }
    }

    fn push(&mut self, bytes: Vec<u8>) -> bool {
        let out = self.checker.push_bytes(&bytes);
        writeln!(self.log, "{out:?}").unwrap();
        self.sent.push(bytes);
        matches!(out, Ok(Applied::Applied))
    }

    fn event(&mut self, s: usize, root: &str, body: Value, seq_skew: u64) -> (Vec<u8>, u64) {
        self.n += 1;
        let st = &self.sessions[s];
        let seq = st.run_seq.get(root).copied().unwrap_or(0) + 1;
        let mut m = json!({
            "protocolVersion": "narad/v1", "eventId": format!("evt-{}", self.n),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": format!("session-{s}"),
            "sessionSequence": st.head + 1 + seq_skew,
            "rootRunId": root, "runId": root, "sequence": seq
        });
        m.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        (serde_json::to_vec(&m).unwrap(), seq)
    }

    fn emit(&mut self, s: usize, root: &str, body: Value, skew: u64) -> bool {
        let (bytes, seq) = self.event(s, root, body, skew);
        let ok = self.push(bytes);
        if ok {
            let st = &mut self.sessions[s];
            st.head += 1;
            st.run_seq.insert(root.to_owned(), seq);
        }
        ok
    }

    fn step(&mut self, rng: &mut Rng) {
        let s = rng.below(3) as usize;
        let st = self.sessions[s].clone();
        let n = self.n;
        match (rng.below(12), st.root.clone()) {
            (0 | 1, None) | (0, Some(_)) => {
                let root = format!("run-{n}");
                if self.emit(s, &root, json!({"type": "run.started"}), 0) {
                    self.sessions[s].root = Some(root);
                }
            }
            (2, Some(root)) if st.tool.is_none() && st.interrupt.is_none() => {
                let tool = format!("tool-{n}");
                let body = json!({"type": "tool.call.started", "toolCallId": tool,
                    "toolName": "search", "executor": "backend", "args": {"q": n}});
                if self.emit(s, &root, body, 0) {
                    self.sessions[s].tool = Some(tool);
                }
            }
            (3, Some(root)) if st.tool.is_some() => {
                let outcome = ["success", "error", "cancelled"][rng.below(3) as usize];
                let body = json!({"type": "tool.call.finished", "toolCallId": st.tool,
                    "outcome": outcome, "response": {}});
                if self.emit(s, &root, body, 0) {
                    self.sessions[s].tool = None;
                }
            }
            (4, Some(root)) if st.interrupt.is_none() && st.tool.is_none() => {
                let (i, w) = (format!("int-{n}"), format!("wait-{n}"));
                let body = json!({"type": "interrupt.requested", "interruptId": i,
                    "waitId": w, "kind": "approval", "actions": ["approve", "deny"]});
                if self.emit(s, &root, body, 0) {
                    let body = json!({"type": "run.paused", "waitId": w,
                        "reason": "interrupt", "resumeMode": "command", "interruptId": i});
                    let paused = self.emit(s, &root, body, 0);
                    self.sessions[s].interrupt = Some((i, w, if paused { 1 } else { 0 }));
                }
            }
            (5, Some(root)) if st.interrupt.is_some() => {
                let (i, w, phase) = st.interrupt.clone().unwrap();
                if phase == 1 {
                    let decision = ["approve", "deny"][rng.below(2) as usize];
                    let body = json!({"type": "interrupt.resolved", "interruptId": i,
                        "waitId": w, "decision": decision});
                    if self.emit(s, &root, body, 0) {
                        self.sessions[s].interrupt = Some((i, w, 2));
                    }
                } else if self.emit(s, &root, json!({"type": "run.resumed", "waitId": w}), 0) {
                    self.sessions[s].interrupt = None;
                }
            }
            (6, Some(root)) => {
                let body = json!({"type": "run.custom", "name": "acme.tick", "value": {"n": n}});
                self.emit(s, &root, body, rng.below(8) / 7);
            }
            (7, Some(root)) => {
                let ty = ["run.finished", "run.cancelled", "run.error"][rng.below(3) as usize];
                let mut body = json!({"type": ty});
                if ty == "run.error" {
                    body["error"] = json!({"code": "boom", "message": "failed"});
                }
                if self.emit(s, &root, body, 0) {
                    let st = &mut self.sessions[s];
                    st.root = None;
                    st.closed.push(root);
                }
            }
            (8, _) if !st.closed.is_empty() => {
                // An event of a closed run tree: refused.
                let root = st.closed[rng.below(st.closed.len() as u64) as usize].clone();
                self.emit(
                    s,
                    &root,
                    json!({"type": "run.custom", "name": "acme.late", "value": 1}),
                    0,
                );
            }
            (9, _) if !self.sent.is_empty() => {
                let old = self.sent[rng.below(self.sent.len() as u64) as usize].clone();
                self.push(old);
            }
            (10, _) if !self.sent.is_empty() => {
                // Re-encoded redelivery: keys in reverse order.
                let old = &self.sent[rng.below(self.sent.len() as u64) as usize];
                let v: Map<String, Value> = serde_json::from_slice(old).unwrap();
                let mut out = String::from("{");
                for (i, (k, v)) in v.iter().rev().enumerate() {
                    if i > 0 {
                        out.push_str(" , ");
                    }
                    write!(out, "{}: {v}", Value::from(k.as_str())).unwrap();
                }
                out.push('}');
                self.push(out.into_bytes());
            }
            (11, _) if !self.sent.is_empty() => {
                // A conflicting reuse of an eventId.
                let old = &self.sent[rng.below(self.sent.len() as u64) as usize];
                let mut v: Value = serde_json::from_slice(old).unwrap();
                v["timestamp"] = json!("2026-08-05T00:00:09Z");
                self.push(serde_json::to_vec(&v).unwrap());
            }
            _ => {}
        }
    }

    /// Verdicts, then every session's state and run-tree graphs.
    fn outcome(&self) -> String {
        let mut out = self.log.clone();
        for s in 0..self.sessions.len() {
            let id = format!("session-{s}");
            writeln!(out, "{:?}", self.checker.state_json(&id)).unwrap();
            for (run, r) in self.checker.runs(&id) {
                if *run == r.root {
                    let g = self.checker.graph(&id, run).map(|g| g.canonical_bytes());
                    writeln!(out, "{run} {:?}", g.map(String::from_utf8)).unwrap();
                }
            }
        }
        out
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn journal(seed: u64, checker: Checker) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut d = Driver::new(checker);
    for _ in 0..STEPS {
        d.step(&mut rng);
    }
    d.outcome()
}

#[test]
fn recorded_verdicts_and_state_are_unchanged() {
    let lines: String = (0..JOURNALS)
        .map(|seed| {
            let out = journal(seed, Checker::default());
            let refused = out.lines().filter(|l| l.starts_with("Err")).count();
            format!("{seed} {:016x} {refused}\n", fnv(&out))
        })
        .collect();
    if std::env::var_os("NARAD_RECORD_REFERENCE").is_some() {
        std::fs::write(REFERENCE, &lines).unwrap();
    }
    let recorded = std::fs::read_to_string(REFERENCE).unwrap();
    // Enough refusals to exercise them.
    let refused: usize = lines
        .lines()
        .filter_map(|l| l.split(' ').nth(2)?.parse::<usize>().ok())
        .sum();
    assert!(refused > JOURNALS as usize, "{refused} refusals only");
    for (got, want) in lines.lines().zip(recorded.lines()) {
        assert_eq!(got, want, "journal differs from the recorded reference");
    }
    assert_eq!(lines.lines().count(), recorded.lines().count());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn packed_graphs_equal_graphs_with_full_history(seed in any::<u64>()) {
        let compact = journal(seed, Checker::default());
        let full = journal(seed, Checker::default().with_canonical_graphs());
        prop_assert_eq!(compact, full);
    }
}
