//! The compacted checker (closed runs, finished tool calls and closed
//! roots' heads and graphs packed away) against the reference that keeps
//! full history (`Checker::with_full_history`, the checker as it was):
//! on random journals with nested runs, stops, tool id reuse, interrupts,
//! events after a terminal, ignored-profile events, graph records,
//! redeliveries and conflicting eventIds, both give the same verdict for
//! every record and the same reads, `state_json` and `debug_state` after
//! every record. A restored snapshot of the compacted checker then goes on
//! deciding as the reference does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::{Checker, ClosedKey, CLOSED_RECALL};
use narad_core::{ProfileSet, Validator, ValidatorConfig};
use proptest::prelude::*;
use serde_json::{json, Value};

const SESSIONS: [&str; 2] = ["s0", "s1"];

/// A transcript handed to the store from this many bytes of messages, and
/// again once this many more came: small, so these short journals reach
/// both.
const HANDOVER: (usize, usize) = (1, 3);

fn validator(core_only: bool) -> Validator {
    if core_only {
        Validator::new(ValidatorConfig {
            profiles: ProfileSet::core(),
            ..ValidatorConfig::default()
        })
    } else {
        Validator::default()
    }
}

/// One step of a journal, chosen by proptest.
#[derive(Debug, Clone)]
struct Op {
    kind: u8,
    session: usize,
    run: usize,
    other: usize,
    skew: u8,
    pick: usize,
}

fn op() -> impl Strategy<Value = Op> {
    (
        0u8..22,
        0usize..2,
        0usize..4,
        0usize..4,
        0u8..12,
        any::<usize>(),
    )
        .prop_map(|(kind, session, run, other, skew, pick)| Op {
            kind,
            session,
            run,
            other,
            skew,
            pick,
        })
}

struct Gen {
    n: u64,
    sent: Vec<Vec<u8>>,
    /// Tool call ids started, per session index.
    tools: Vec<(usize, String)>,
}

impl Gen {
    /// A session-scoped conversation record: a user message or a streamed
    /// one's start (sometimes of an id already taken), a delta, a
    /// completion or a redaction of a message the reference holds (or of
    /// an unknown one).
    fn message(&mut self, reference: &Checker, o: &Op) -> Vec<u8> {
        let s = SESSIONS[o.session];
        let ids: Vec<String> = reference
            .transcript(s)
            .map(|t| t.messages.iter().map(|m| m.message_id.clone()).collect())
            .unwrap_or_default();
        let old = ids
            .get(o.pick % ids.len().max(1))
            .cloned()
            .unwrap_or_else(|| "m-unknown".into());
        let id = match (o.kind, o.skew) {
            (18 | 19, 2 | 3) | (20 | 21, 2..) => old,
            _ => format!("m{}", self.n),
        };
        let body = match o.kind {
            18 => json!({"type": "message.user.recorded", "messageId": id,
                "messageScope": "session", "content": format!("hello {}", self.n)}),
            19 => json!({"type": "message.text.started", "messageId": id,
                "role": "assistant", "messageScope": "session"}),
            20 => json!({"type": "message.text.delta", "messageId": id, "delta": "more "}),
            _ if o.pick % 2 == 0 => json!({"type": "message.text.completed", "messageId": id}),
            _ => json!({"type": "message.redacted", "messageId": id,
                "displayReplacement": "[hidden]", "reason": "policy"}),
        };
        self.n += 1;
        let seq = reference.session_head(s).unwrap_or(0) + 1 + u64::from(o.skew == 11);
        let mut m = json!({"protocolVersion": "narad/v1", "eventId": format!("e-{}", self.n),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": s, "sessionSequence": seq});
        m.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        serde_json::to_vec(&m).unwrap()
    }

    /// A record aimed mostly at the reference's open runs (so most are
    /// accepted), sometimes at closed or unknown ones, with positions from
    /// its heads (sometimes off by one).
    fn record(&mut self, reference: &Checker, o: &Op) -> Option<Vec<u8>> {
        let s = SESSIONS[o.session];
        let runs: Vec<(String, String, bool)> = reference
            .runs(s)
            .map(|(id, r)| (id.to_owned(), r.root.clone(), r.state.is_terminal()))
            .collect();
        let open: Vec<&(String, String, bool)> = runs.iter().filter(|r| !r.2).collect();
        let closed: Vec<&(String, String, bool)> = runs.iter().filter(|r| r.2).collect();
        let pick = |v: &[&(String, String, bool)], k: usize| {
            v.get(k % v.len().max(1))
                .map(|r| (r.0.clone(), r.1.clone()))
        };
        let target = match o.other {
            _ if o.skew == 0 => pick(&closed, o.pick),
            _ if o.skew == 1 => Some((format!("r-unknown-{}", o.run), "r-unknown".to_owned())),
            _ => pick(&open, o.pick),
        };
        let (run, root) = target
            .clone()
            .unwrap_or_else(|| ("r-none".into(), "r-none".into()));
        let stop_target = runs
            .get(o.pick % runs.len().max(1))
            .map(|r| r.0.clone())
            .unwrap_or_default();
        let my_tools: Vec<&String> = self
            .tools
            .iter()
            .filter(|t| t.0 == o.session)
            .map(|t| &t.1)
            .collect();
        let old_tool = my_tools
            .get(o.pick % my_tools.len().max(1))
            .map(|t| (*t).clone())
            .unwrap_or_default();
        let wait = format!("w-{run}");
        let int = format!("i-{run}");
        let fresh = format!("x{}", self.n);
        let (run, root, ty, body): (String, String, &str, Value) = match o.kind {
            0 | 1 => {
                // A new top-level run (sometimes a reused id).
                let id = if o.skew == 2 {
                    run.clone()
                } else {
                    fresh.clone()
                };
                (id.clone(), id, "run.started", json!({}))
            }
            2 => {
                // A nested run under the target (sometimes a reused id).
                let id = if o.skew == 2 {
                    stop_target.clone()
                } else {
                    fresh.clone()
                };
                (id, root, "run.started", json!({"parentRunId": run}))
            }
            3 => (run, root, "run.finished", json!({})),
            4 => (
                run,
                root,
                "run.error",
                json!({"code": "boom", "message": "failed"}),
            ),
            5 => (run, root, "run.cancelled", json!({})),
            6 => {
                let tool = if o.skew == 2 {
                    old_tool
                } else {
                    format!("t{}", self.n)
                };
                self.tools.push((o.session, tool.clone()));
                (
                    run,
                    root,
                    "tool.call.started",
                    json!({"toolCallId": tool, "toolName": "search", "executor": "backend", "args": {}}),
                )
            }
            7 => {
                // Finish a call of this run if it has one open, else any.
                let mine = my_tools
                    .iter()
                    .find(|t| reference.tool_call(s, t) == Some((run.as_str(), true)));
                let tool = mine.map(|t| (*t).clone()).unwrap_or(old_tool);
                (
                    run,
                    root,
                    "tool.call.finished",
                    json!({"toolCallId": tool, "outcome": "success", "response": {}}),
                )
            }
            8 => (
                run,
                root,
                "interrupt.requested",
                json!({"interruptId": int, "waitId": wait, "kind": "approval", "actions": ["approve", "deny"]}),
            ),
            9 => (
                run,
                root,
                "run.paused",
                json!({"waitId": wait, "reason": "interrupt", "resumeMode": "command", "interruptId": int}),
            ),
            10 => (
                run,
                root,
                "interrupt.resolved",
                json!({"interruptId": int, "waitId": wait, "decision": "approve"}),
            ),
            11 => (run, root, "run.resumed", json!({"waitId": wait})),
            12 => (
                run,
                root,
                "run.stop.requested",
                json!({"targetRunId": stop_target}),
            ),
            13 => (
                run,
                root,
                "progress.recorded",
                json!({"progressId": "p", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
            ),
            14 => (
                run,
                root,
                "run.custom",
                json!({"name": "acme.tick", "value": {"n": self.n}}),
            ),
            15 => {
                // A graph record naming the root (closed or not).
                let head = reference.run_head(s, &root).max(1);
                let rev = self.n + 1;
                let line = json!({"type": "graph.snapshot", "protocolVersion": "narad/v1",
                    "timestamp": "2026-08-05T00:00:01Z", "sessionId": s, "scope": "run",
                    "rootRunId": root, "graphSchemaVersion": "narad.graph/v1", "revision": rev,
                    "sourceRunCursor": {"rootRunId": root, "sequence": head},
                    "rootNodeId": "node-root", "nodes": [], "edges": []});
                self.n += 1;
                return Some(serde_json::to_vec(&line).unwrap());
            }
            18..=21 => return Some(self.message(reference, o)),
            16 => {
                // An exact redelivery.
                return self.sent.get(o.pick % self.sent.len().max(1)).cloned();
            }
            _ => {
                // The same eventId with different data.
                let old = self.sent.get(o.pick % self.sent.len().max(1))?;
                let mut v: Value = serde_json::from_slice(old).unwrap();
                v["timestamp"] = json!("2026-08-05T00:00:09Z");
                return Some(serde_json::to_vec(&v).unwrap());
            }
        };
        self.n += 1;
        let seq = reference.session_head(s).unwrap_or(0) + 1 + u64::from(o.skew == 11);
        let run_seq = reference.run_head(s, &root) + 1 + u64::from(o.skew == 10);
        let mut m = json!({
            "type": ty, "protocolVersion": "narad/v1", "eventId": format!("e-{}", self.n),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": s, "sessionSequence": seq,
            "rootRunId": root, "runId": run, "sequence": run_seq
        });
        m.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        Some(serde_json::to_vec(&m).unwrap())
    }
}

/// Everything a host can read of the checker, rendered.
fn reads(c: &Checker, tools: &[(usize, String)]) -> String {
    let mut out = String::new();
    for s in SESSIONS {
        out += &format!("{:?} {:?}\n", c.state_json(s), c.session_head(s));
        out += &format!("{:?}\n", c.transcript(s));
        for (id, r) in c.runs(s) {
            out += &format!("{id} {r:?} {:?}\n", c.run(s, id).map(|r| r.state));
        }
        let ids: Vec<String> = c.runs(s).map(|(id, _)| id.to_owned()).collect();
        for id in ids.iter().map(String::as_str).chain(["r-none"]) {
            let g = c.graph(s, id).map(|g| g.canonical_bytes());
            out += &format!(
                "{id} {:?} {} {:?}\n",
                c.run_state(s, id),
                c.run_head(s, id),
                g
            );
        }
        for (_, t) in tools {
            out += &format!("{t} {:?}\n", c.tool_call(s, t));
        }
    }
    out
}

fn run(ops: &[Op], core_only: bool, restore_at: Option<usize>) -> Result<(), TestCaseError> {
    let mut reference = Checker::new(validator(core_only)).with_full_history();
    let mut compact = Checker::new(validator(core_only));
    let mut g = Gen {
        n: 0,
        sent: Vec::new(),
        tools: Vec::new(),
    };
    for (i, o) in ops.iter().enumerate() {
        if restore_at == Some(i) {
            compact = Checker::restore(validator(core_only), &compact.snapshot())
                .expect("a snapshot restores");
        }
        let Some(bytes) = g.record(&reference, o) else {
            continue;
        };
        let want = reference.push_bytes(&bytes);
        let got = compact.push_bytes(&bytes);
        prop_assert_eq!(&got, &want, "record {}", i);
        g.sent.push(bytes);
        prop_assert_eq!(
            reads(&compact, &g.tools),
            reads(&reference, &g.tools),
            "after record {}",
            i
        );
        if restore_at.is_none() {
            prop_assert_eq!(compact.debug_state(), reference.debug_state());
        }
    }
    Ok(())
}

/// The host's store of closed records: what the checker handed over
/// ([`Checker::take_closed`]), by session and key.
type ClosedStore = std::collections::HashMap<(String, ClosedKey), Vec<u8>>;

/// Everything `store` holds of the sessions given back to a copy of `c`,
/// as a host does before reading closed history of a checker that does
/// not hold it all.
fn recall_all(c: &Checker, store: &ClosedStore) -> Checker {
    let mut c = c.clone();
    for ((sid, key), bytes) in store {
        c.recall_closed(sid, key, Some(bytes));
    }
    c
}

/// [`run`] restoring at `restore_at` from [`Checker::snapshot_for_store`],
/// which keeps no eventId (or, with `restore` false, forgetting the
/// eventIds in place there: [`Checker::forget_event_ids`]): before each
/// push the test plays the host, whose store (here the records the
/// reference accepted, by session and eventId) answers what the checker
/// may have forgotten. The verdicts and reads are the reference's.
///
/// With `closed`, the checker also leaves closed history to the store
/// ([`Checker::leave_closed_to_store`]): the host keeps what it hands over
/// (most steps; on some, it is left for later, so a snapshot carries it),
/// and answers each [`CLOSED_RECALL`] refusal from what it kept, pushing
/// the record again. The reads are compared once the host gave back all
/// it keeps.
fn run_forgetting(
    ops: &[Op],
    core_only: bool,
    restore_at: usize,
    restore: bool,
    closed: bool,
) -> Result<(), TestCaseError> {
    let mut reference = Checker::new(validator(core_only)).with_full_history();
    let mut compact = Checker::new(validator(core_only));
    if closed {
        compact = compact.with_transcript_handover(HANDOVER.0, HANDOVER.1);
        compact.leave_closed_to_store();
    }
    let mut closed_store = ClosedStore::default();
    let mut store: std::collections::HashMap<(String, String), Vec<u8>> = Default::default();
    let mut g = Gen {
        n: 0,
        sent: Vec::new(),
        tools: Vec::new(),
    };
    for (i, o) in ops.iter().enumerate() {
        if i == restore_at && restore {
            compact = Checker::restore(validator(core_only), &compact.snapshot_for_store())
                .expect("a snapshot restores")
                .with_transcript_handover(HANDOVER.0, HANDOVER.1);
        } else if i == restore_at {
            compact.forget_event_ids();
        }
        let Some(bytes) = g.record(&reference, o) else {
            continue;
        };
        let key = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| {
            let sid = v.get("sessionId")?.as_str()?.to_owned();
            Some((sid, v.get("eventId")?.as_str()?.to_owned()))
        });
        if let Some(key) = &key {
            if compact.may_have_forgotten(&key.0, &key.1) {
                if let Some(stored) = store.get(key) {
                    prop_assert!(compact.recall(&key.0, stored), "record {}", i);
                }
            }
        }
        let want = reference.push_bytes(&bytes);
        let mut got = compact.push_bytes(&bytes);
        for _ in 0..3 {
            let Err(r) = &got else { break };
            if r.code != CLOSED_RECALL {
                break;
            }
            let sid = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| Some(v.get("sessionId")?.as_str()?.to_owned()))
                .unwrap_or_default();
            let needed = compact.closed_needed(&sid);
            prop_assert!(!needed.is_empty(), "record {}", i);
            for k in needed {
                let stored = closed_store.get(&(sid.clone(), k.clone()));
                prop_assert!(compact.recall_closed(&sid, &k, stored.map(Vec::as_slice)));
            }
            got = compact.push_bytes(&bytes);
        }
        prop_assert_eq!(&got, &want, "record {}", i);
        prop_assert_eq!(compact.records_seen(), reference.records_seen());
        if o.pick % 3 != 0 {
            for sid in SESSIONS {
                for r in compact.take_closed(sid, usize::MAX) {
                    closed_store.insert((sid.to_owned(), r.key), r.bytes);
                }
            }
        }
        // The journal holds what moved the head: applied, or skipped
        // (covered by a transcript snapshot, or of an inactive profile).
        use narad_core::checker::Applied;
        if let (Some(key), Ok(Applied::Applied | Applied::Skipped)) = (key, &want) {
            store.entry(key).or_insert_with(|| bytes.clone());
        }
        g.sent.push(bytes);
        prop_assert_eq!(
            reads(&recall_all(&compact, &closed_store), &g.tools),
            reads(&reference, &g.tools),
            "after record {}",
            i
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_checker_restored_without_event_ids_decides_as_full_history_with_its_store(
        ops in prop::collection::vec(op(), 1..120),
        at in 0usize..120,
        core_only in any::<bool>(),
        restore in any::<bool>(),
    ) {
        run_forgetting(&ops, core_only, at, restore, false)?;
    }

    #[test]
    fn a_checker_restored_without_closed_history_decides_as_full_history_with_its_store(
        ops in prop::collection::vec(op(), 1..120),
        at in 0usize..120,
        core_only in any::<bool>(),
    ) {
        run_forgetting(&ops, core_only, at, true, true)?;
    }

    #[test]
    fn compacted_checker_decides_and_reads_as_full_history(
        ops in prop::collection::vec(op(), 1..120),
        core_only in any::<bool>(),
    ) {
        run(&ops, core_only, None)?;
    }

    #[test]
    fn a_restored_compacted_checker_decides_as_full_history(
        ops in prop::collection::vec(op(), 1..120),
        at in 0usize..120,
        core_only in any::<bool>(),
    ) {
        run(&ops, core_only, Some(at))?;
    }
}

/// Snapshot format 10 holds closed history as packed arenas, the
/// transcript's messages as a part restored in place and its reasoning as
/// a binary part: an older snapshot is not restored (the host replays its journal instead), and a
/// current one restores to the same state, closed history included.
#[test]
fn only_the_current_snapshot_format_restores() {
    let mut c = Checker::default();
    let mut g = Gen {
        n: 0,
        sent: Vec::new(),
        tools: Vec::new(),
    };
    let mut reference = Checker::default().with_full_history();
    for kind in [0, 6, 7, 14, 3] {
        let o = Op {
            kind,
            session: 0,
            run: 0,
            other: 0,
            skew: 5,
            pick: 0,
        };
        let bytes = g.record(&reference, &o).unwrap();
        assert!(reference.push_bytes(&bytes).is_ok());
        assert!(c.push_bytes(&bytes).is_ok());
        g.sent.push(bytes);
    }
    assert_eq!(c.run_state("s0", "x0").map(|s| s.is_terminal()), Some(true));
    let snap = c.snapshot();
    let restored = Checker::restore(Validator::default(), &snap).unwrap();
    assert_eq!(restored.debug_state(), c.debug_state());
    // The header: a magic string, then the format (10) as a u32 LE.
    assert_eq!(&snap[..12], b"narad.ck\x0a\0\0\0");
    for format in [5, 6, 7, 8, 9] {
        let mut old = snap.clone();
        old[8] = format;
        assert!(Checker::restore(Validator::default(), &old).is_none());
    }
    // A format 5 snapshot was one JSON document.
    let v5 = r#"{"format":5,"sessions":{},"workspaces":{},"client":{},"index":0}"#;
    assert!(Checker::restore(Validator::default(), v5.as_bytes()).is_none());
}
