//! Property tests of the journal checker. Journals come from a model of
//! valid behaviour driven by a proptest-generated choice vector (so failures
//! shrink to short journals).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::Checker;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Default)]
struct ModelRun {
    root: String,
    parent: Option<String>,
    paused: Option<String>,
    interrupt: Option<(String, String)>,
    stop: bool,
    tools: BTreeSet<String>,
    children: BTreeSet<String>,
}

/// Emits only valid journals: each step picks one of the actions the model
/// enables now.
#[derive(Default)]
struct Model {
    events: Vec<Value>,
    runs: BTreeMap<String, ModelRun>,
    run_seq: BTreeMap<String, u64>,
    top: Option<String>,
    n: u64,
}

impl Model {
    fn emit(&mut self, run: &str, body: Value) {
        self.n += 1;
        let root = self
            .runs
            .get(run)
            .map_or(run.to_owned(), |r| r.root.clone());
        let seq = self.run_seq.entry(root.clone()).or_default();
        *seq += 1;
        let mut e = json!({
            "protocolVersion": "narad/v1", "eventId": format!("e{}", self.n),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": self.n,
            "rootRunId": root, "runId": run, "sequence": *seq
        });
        e.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        self.events.push(e);
    }

    fn open_work(r: &ModelRun) -> bool {
        !r.tools.is_empty() || !r.children.is_empty() || r.interrupt.is_some() || r.paused.is_some()
    }

    fn step(&mut self, action: u8, pick: u8) {
        let ids: Vec<String> = self.runs.keys().cloned().collect();
        let target = |f: &dyn Fn(&ModelRun) -> bool| -> Option<String> {
            let ok: Vec<&String> = ids.iter().filter(|id| f(&self.runs[*id])).collect();
            (!ok.is_empty()).then(|| ok[pick as usize % ok.len()].clone())
        };
        let running = |r: &ModelRun| r.paused.is_none();
        let k = self.n + 1;
        match action % 10 {
            0 if self.top.is_none() => {
                let id = format!("r{k}");
                self.runs.insert(
                    id.clone(),
                    ModelRun {
                        root: id.clone(),
                        ..ModelRun::default()
                    },
                );
                self.top = Some(id.clone());
                self.emit(&id, json!({"type": "run.started"}));
            }
            1 => {
                if let Some(p) = target(&|r| running(r) && !r.stop) {
                    let id = format!("c{k}");
                    let root = self.runs[&p].root.clone();
                    self.runs.get_mut(&p).unwrap().children.insert(id.clone());
                    self.runs.insert(
                        id.clone(),
                        ModelRun {
                            root,
                            parent: Some(p.clone()),
                            ..ModelRun::default()
                        },
                    );
                    self.emit(&id, json!({"type": "run.started", "parentRunId": p}));
                }
            }
            2 => {
                if let Some(r) = target(&|r| running(r) && !r.stop) {
                    let t = format!("t{k}");
                    self.runs.get_mut(&r).unwrap().tools.insert(t.clone());
                    self.emit(&r, json!({"type": "tool.call.started", "toolCallId": t, "toolName": "x", "executor": "backend", "args": {"k": k}}));
                }
            }
            3 => {
                if let Some(r) = target(&|r| !r.tools.is_empty() && running(r)) {
                    let t = self.runs[&r].tools.iter().next().unwrap().clone();
                    self.runs.get_mut(&r).unwrap().tools.remove(&t);
                    self.emit(&r, json!({"type": "tool.call.finished", "toolCallId": t, "outcome": "success", "response": null}));
                }
            }
            4 => {
                if let Some(r) = target(&|r| running(r) && r.interrupt.is_none()) {
                    let (i, w) = (format!("i{k}"), format!("w{k}"));
                    self.emit(&r, json!({"type": "interrupt.requested", "interruptId": i, "waitId": w, "kind": "approval", "actions": ["approve", "deny"]}));
                    self.emit(&r, json!({"type": "run.paused", "waitId": w, "reason": "interrupt", "resumeMode": "command", "interruptId": i}));
                    let run = self.runs.get_mut(&r).unwrap();
                    run.interrupt = Some((i, w.clone()));
                    run.paused = Some(w);
                }
            }
            5 => {
                if let Some(r) = target(&|r| r.interrupt.is_some()) {
                    let (i, w) = self.runs.get_mut(&r).unwrap().interrupt.take().unwrap();
                    let d = if pick % 3 == 0 {
                        "expired"
                    } else if pick % 2 == 0 {
                        "approve"
                    } else {
                        "deny"
                    };
                    self.emit(&r, json!({"type": "interrupt.resolved", "interruptId": i, "waitId": w, "decision": d}));
                }
            }
            6 => {
                if let Some(r) = target(&|r| r.paused.is_some() && r.interrupt.is_none()) {
                    let w = self.runs.get_mut(&r).unwrap().paused.take().unwrap();
                    self.emit(&r, json!({"type": "run.resumed", "waitId": w}));
                }
            }
            7 => {
                if let Some(r) = target(&|r| running(r)) {
                    let w = format!("p{k}");
                    self.runs.get_mut(&r).unwrap().paused = Some(w.clone());
                    self.emit(&r, json!({"type": "run.paused", "waitId": w, "reason": "capacity", "resumeMode": "automatic"}));
                }
            }
            8 => {
                if let Some(r) = target(&|r| !r.stop) {
                    self.runs.get_mut(&r).unwrap().stop = true;
                    self.emit(&r, json!({"type": "run.stop.requested", "targetRunId": r}));
                }
            }
            9 => {
                if let Some(r) = target(&|r| !Self::open_work(r)) {
                    let run = self.runs.remove(&r).unwrap();
                    if let Some(p) = &run.parent {
                        self.runs.get_mut(p).unwrap().children.remove(&r);
                    }
                    if self.top.as_deref() == Some(r.as_str()) {
                        self.top = None;
                    }
                    let ty = ["run.finished", "run.error", "run.cancelled"][pick as usize % 3];
                    let body = if ty == "run.error" {
                        json!({"type": ty, "code": "x", "message": "failed"})
                    } else {
                        json!({"type": ty})
                    };
                    // Emitted after removal: the run's root is its own id or recorded below.
                    self.runs.insert(r.clone(), run);
                    self.emit(&r, body);
                    self.runs.remove(&r);
                }
            }
            _ => {
                if let Some(r) = target(&|_| true) {
                    self.emit(&r, json!({"type": "progress.recorded", "progressId": format!("g{k}"), "category": "step", "label": "Working", "status": "active", "privacy": "public"}));
                }
            }
        }
    }
}

fn journal(choices: &[(u8, u8)]) -> Model {
    let mut m = Model::default();
    for (a, p) in choices {
        m.step(*a, *p);
    }
    m
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

fn reduce(events: &[Value]) -> Result<Checker, (usize, &'static str)> {
    let mut c = Checker::default();
    for e in events {
        c.push_bytes(&bytes(e)).map_err(|r| (r.index, r.code))?;
    }
    Ok(c)
}

fn choices() -> impl Strategy<Value = Vec<(u8, u8)>> {
    prop::collection::vec((any::<u8>(), any::<u8>()), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn journals_from_the_model_are_accepted_and_reduce_deterministically(c in choices()) {
        let m = journal(&c);
        let a = reduce(&m.events).map_err(|e| TestCaseError::fail(format!("{e:?} in {:#?}", m.events)))?;
        let b = reduce(&m.events).unwrap();
        prop_assert_eq!(a.debug_state(), b.debug_state());
    }

    #[test]
    fn redelivery_and_replay_leave_the_state_unchanged(c in choices(), dups in prop::collection::vec(any::<u16>(), 0..40)) {
        let m = journal(&c);
        prop_assume!(!m.events.is_empty());
        let clean = reduce(&m.events).unwrap();
        // Interleave redeliveries of already-delivered events, then replay all.
        let mut stream: Vec<Value> = Vec::new();
        let mut dups = dups.into_iter().peekable();
        for (i, e) in m.events.iter().enumerate() {
            stream.push(e.clone());
            while let Some(d) = dups.next_if(|d| (*d as usize) % (m.events.len()) <= i) {
                stream.push(m.events[(d as usize) % (i + 1)].clone());
            }
        }
        stream.extend(m.events.iter().cloned());
        let noisy = reduce(&stream).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(noisy.debug_state(), clean.debug_state());
    }

    #[test]
    fn dropping_an_event_is_refused_as_a_session_gap(c in choices(), at in any::<u16>()) {
        let m = journal(&c);
        prop_assume!(m.events.len() >= 2);
        let i = (at as usize) % (m.events.len() - 1);
        let mut events = m.events.clone();
        events.remove(i);
        prop_assert_eq!(reduce(&events).err(), Some((i, "session_sequence_gap")));
    }

    #[test]
    fn changing_a_delivered_fact_is_refused_as_a_conflict(c in choices(), at in any::<u16>()) {
        let m = journal(&c);
        prop_assume!(!m.events.is_empty());
        let i = (at as usize) % m.events.len();
        let mut changed = m.events[i].clone();
        changed["timestamp"] = json!("2026-08-05T00:00:09Z");
        let mut events = m.events.clone();
        events.push(changed);
        prop_assert_eq!(reduce(&events).err(), Some((m.events.len(), "duplicate_event_conflict")));
    }

    #[test]
    fn a_terminal_with_open_work_is_refused(c in choices()) {
        let mut m = journal(&c);
        let busy: Vec<String> = m.runs.iter().filter(|(_, r)| Model::open_work(r)).map(|(id, _)| id.clone()).collect();
        prop_assume!(!busy.is_empty());
        let r = busy[0].clone();
        let paused = m.runs[&r].paused.is_some();
        let n = m.events.len();
        m.emit(&r, json!({"type": "run.finished"}));
        let want = if paused { "run_paused" } else { "open_work" };
        prop_assert_eq!(reduce(&m.events).err(), Some((n, want)));
    }

    #[test]
    fn a_tool_call_after_stop_is_refused(c in choices()) {
        let mut m = journal(&c);
        let running: Vec<String> = m.runs.iter().filter(|(_, r)| r.paused.is_none()).map(|(id, _)| id.clone()).collect();
        prop_assume!(!running.is_empty());
        let r = running[0].clone();
        if !m.runs[&r].stop {
            m.emit(&r, json!({"type": "run.stop.requested", "targetRunId": r}));
        }
        let n = m.events.len();
        m.emit(&r, json!({"type": "tool.call.started", "toolCallId": "late", "toolName": "x", "executor": "backend", "args": {}}));
        prop_assert_eq!(reduce(&m.events).err(), Some((n, "run_stop_requested")));
    }

    #[test]
    fn a_second_top_level_run_while_one_is_active_is_refused(c in choices()) {
        let mut m = journal(&c);
        prop_assume!(m.top.is_some());
        let n = m.events.len();
        m.emit("intruder", json!({"type": "run.started"}));
        prop_assert_eq!(reduce(&m.events).err(), Some((n, "session_slot_busy")));
    }

    #[test]
    fn shifting_a_run_tree_sequence_is_refused_as_a_run_gap(c in choices(), at in any::<u16>()) {
        let m = journal(&c);
        let tree: Vec<usize> = (0..m.events.len()).filter(|i| m.events[*i].get("sequence").is_some()).collect();
        prop_assume!(!tree.is_empty());
        let i = tree[(at as usize) % tree.len()];
        let mut events = m.events.clone();
        let seq = events[i]["sequence"].as_u64().unwrap();
        events[i]["sequence"] = json!(seq + 1);
        prop_assert_eq!(reduce(&events).err(), Some((i, "run_sequence_gap")));
    }

    #[test]
    fn the_checkers_graph_is_the_derivation_of_the_journal(c in choices()) {
        let m = journal(&c);
        let checker = reduce(&m.events).unwrap();
        let v = narad_core::Validator::default();
        let events: Vec<narad_core::AuthorityEvent> = m.events.iter().filter_map(|e| match v.parse(&bytes(e)).ok()? {
            narad_core::Parsed::Record { record: narad_core::Record::Authority(ev), .. } => Some(ev),
            _ => None,
        }).collect();
        let roots: std::collections::BTreeSet<String> = m.events.iter().filter_map(|e| e["rootRunId"].as_str().map(str::to_owned)).collect();
        for root in roots {
            let derived = narad_core::graph::derive(&root, &events).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let held = checker.graph("s", &root).map(|g| g.canonical_bytes());
            prop_assert_eq!(held, Some(derived.canonical_bytes()));
        }
    }

    #[test]
    fn a_restored_snapshot_continues_exactly_like_a_full_replay(c in choices(), cut in any::<u16>()) {
        let m = journal(&c);
        prop_assume!(!m.events.is_empty());
        let k = cut as usize % (m.events.len() + 1);
        let full = reduce(&m.events).unwrap();
        let head = reduce(&m.events[..k]).unwrap();
        let mut restored = Checker::restore(narad_core::Validator::default(), &head.snapshot())
            .ok_or_else(|| TestCaseError::fail("snapshot did not restore"))?;
        prop_assert_eq!(restored.debug_state(), head.debug_state());
        for e in &m.events[k..] {
            restored.push_bytes(&bytes(e)).map_err(|r| TestCaseError::fail(r.to_string()))?;
        }
        prop_assert_eq!(restored.debug_state(), full.debug_state());
        // A refused event is refused the same way after a restore.
        if let Some(last) = m.events.last() {
            let mut changed = last.clone();
            changed["timestamp"] = "2026-08-05T09:09:09Z".into();
            prop_assert_eq!(
                restored.push_bytes(&bytes(&changed)).map_err(|r| r.code),
                reduce(&m.events).unwrap().push_bytes(&bytes(&changed)).map_err(|r| r.code)
            );
        }
    }
}

/// Every accepted project trace (conversation, documents, client control,
/// workflows included), cut at every point: snapshot, restore, push the
/// rest — the same state as a full replay.
#[test]
fn snapshots_of_every_project_trace_restore_exactly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let traces = narad_conformance::load_traces(&dir).unwrap();
    let mut cuts = 0;
    for t in traces.iter().filter(|t| !t.invalid) {
        let mut full = Checker::default();
        let records: Vec<&[u8]> = t.lines.iter().map(|(_, l)| l.as_slice()).collect();
        for r in &records {
            full.push_bytes(r).unwrap();
        }
        for k in 0..=records.len() {
            let mut head = Checker::default();
            for r in &records[..k] {
                head.push_bytes(r).unwrap();
            }
            let mut restored =
                Checker::restore(narad_core::Validator::default(), &head.snapshot()).unwrap();
            for r in &records[k..] {
                restored.push_bytes(r).unwrap();
            }
            assert_eq!(
                restored.debug_state(),
                full.debug_state(),
                "{} cut at {k}",
                t.name
            );
            cuts += 1;
        }
    }
    assert!(cuts > 100, "{cuts}");
}
