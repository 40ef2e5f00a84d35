//! The canonical `narad.graph/v1` derivation (§9.7): nodes and edges for
//! runs, tool calls and interrupts from authority alone; stable ids;
//! byte-identical on rebuild; emitted snapshots and deltas reproduce the
//! rebuild (checked by `Checker::with_canonical_graphs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::Checker;
use narad_core::graph::{derive, RunGraph};
use narad_core::{AuthorityEvent, Parsed, Record, Validator};
use serde_json::{json, Value};

fn ev(n: u64, run: &str, seq: u64, body: Value) -> Vec<u8> {
    let mut e = json!({"protocolVersion": "narad/v1", "eventId": format!("e{n}"), "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": n, "rootRunId": "r", "runId": run, "sequence": seq});
    e.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    serde_json::to_vec(&e).unwrap()
}

/// A run tree with a backend tool call, an approval interrupt resolved, a
/// nested run and terminals.
fn journal() -> Vec<Vec<u8>> {
    let mut n = 0;
    let mut next = |run: &str, body: Value| {
        n += 1;
        ev(n, run, n, body)
    };
    vec![
        next("r", json!({"type": "run.started"})),
        next(
            "r",
            json!({"type": "tool.call.started", "toolCallId": "t1", "toolName": "search", "executor": "backend", "args": {"q": "x"}}),
        ),
        next(
            "r",
            json!({"type": "tool.call.finished", "toolCallId": "t1", "outcome": "success", "response": {}}),
        ),
        next(
            "r",
            json!({"type": "interrupt.requested", "interruptId": "i1", "waitId": "w1", "kind": "approval", "actions": ["approve", "deny"]}),
        ),
        next(
            "r",
            json!({"type": "run.paused", "waitId": "w1", "reason": "interrupt", "resumeMode": "command", "interruptId": "i1"}),
        ),
        next(
            "r",
            json!({"type": "interrupt.resolved", "interruptId": "i1", "waitId": "w1", "decision": "approve"}),
        ),
        next("r", json!({"type": "run.resumed", "waitId": "w1"})),
        next("c", json!({"type": "run.started", "parentRunId": "r"})),
        next("c", json!({"type": "run.finished"})),
        next("r", json!({"type": "run.finished"})),
    ]
}

fn authority(lines: &[Vec<u8>]) -> Vec<AuthorityEvent> {
    let v = Validator::default();
    lines
        .iter()
        .filter_map(|l| match v.parse(l).unwrap() {
            Parsed::Record {
                record: Record::Authority(ev),
                ..
            } => Some(ev),
            _ => None,
        })
        .collect()
}

#[test]
fn derivation_names_every_run_tool_and_interrupt_with_stable_ids() {
    let g = derive("r", &authority(&journal())).unwrap();
    let expected = json!({
        "rootNodeId": "run:r",
        "nodes": [
            {"id": "run:r", "kind": "run", "label": "r", "state": "finished"},
            {"id": "tool:t1", "kind": "tool", "label": "search", "state": "success", "runId": "r"},
            {"id": "interrupt:i1", "kind": "interrupt", "label": "approval", "state": "approve", "runId": "r"},
            {"id": "run:c", "kind": "run", "label": "c", "state": "finished"},
        ],
        "edges": [
            {"id": "tool:run:r->tool:t1", "kind": "tool", "from": "run:r", "to": "tool:t1"},
            {"id": "interrupt:run:r->interrupt:i1", "kind": "interrupt", "from": "run:r", "to": "interrupt:i1"},
            {"id": "child:run:r->run:c", "kind": "child", "from": "run:r", "to": "run:c"},
        ],
    });
    assert_eq!(g.body(), expected);
    // Graph-changing events only: every event here changes the graph.
    assert_eq!((g.revision(), g.cursor()), (10, 10));
}

#[test]
fn rebuild_is_byte_identical_and_ignores_redelivery_and_other_trees() {
    let events = authority(&journal());
    let once = derive("r", &events).unwrap().canonical_bytes();
    let twice = derive("r", &events).unwrap().canonical_bytes();
    assert_eq!(once, twice);
    // Redelivery of every event (at-least-once) changes nothing.
    let doubled: Vec<&AuthorityEvent> = events.iter().flat_map(|e| [e, e]).collect();
    let redelivered = derive("r", doubled).unwrap();
    assert_eq!(redelivered.canonical_bytes(), once);
    assert_eq!(redelivered.revision(), 10);
    // Another tree's graph is empty.
    assert_eq!(derive("other", &events).unwrap().revision(), 0);
    // The checker keeps the same graph while it reduces.
    let mut c = Checker::default();
    for l in journal() {
        c.push_bytes(&l).unwrap();
    }
    assert_eq!(c.graph("s", "r").unwrap().canonical_bytes(), once);
}

#[test]
fn out_of_order_and_dangling_events_are_typed_errors_that_change_nothing() {
    let events = authority(&journal());
    let mut g = RunGraph::new("r");
    assert_eq!(
        g.apply(&events[1]).unwrap_err().code(),
        "graph_root_not_started"
    );
    g.apply(&events[0]).unwrap();
    let before = g.clone();
    assert_eq!(
        g.apply(&events[2]).unwrap_err().code(),
        "graph_out_of_order"
    );
    assert_eq!(g, before);
}

/// Emits what a host using this derivation emits: a delta after every
/// graph-changing event and a snapshot every third revision.
fn emitted_stream() -> Vec<Vec<u8>> {
    let lines = journal();
    let events = authority(&lines);
    let mut g = RunGraph::new("r");
    let mut out = Vec::new();
    for (line, e) in lines.iter().zip(&events) {
        out.push(line.clone());
        let patch = g.apply(e).unwrap();
        if patch.is_empty() {
            continue;
        }
        let rec = if g.revision() % 3 == 0 {
            g.snapshot_record("s", "2026-08-05T00:00:01Z")
        } else {
            g.delta_record("s", "2026-08-05T00:00:01Z", &patch)
        };
        out.push(serde_json::to_vec(&rec).unwrap());
    }
    out
}

#[test]
fn emitted_snapshots_and_deltas_reproduce_the_rebuild() {
    let mut c = Checker::default().with_canonical_graphs();
    for (i, l) in emitted_stream().iter().enumerate() {
        c.push_bytes(l)
            .unwrap_or_else(|e| panic!("record {i}: {e:?}"));
    }
    // A late snapshot at an earlier cursor is stale (lower revision): skipped.
    let g = c.graph("s", "r").unwrap();
    assert_eq!(g.revision(), 10);
    // Applying every emitted delta to an empty graph gives the derived one.
    let mut doc = RunGraph::new("r").body();
    for l in emitted_stream() {
        let v: Value = serde_json::from_slice(&l).unwrap();
        match v["type"].as_str() {
            Some("graph.delta") => {
                let p: json_patch::Patch = serde_json::from_value(v["patch"].clone()).unwrap();
                json_patch::patch(&mut doc, &p).unwrap();
            }
            Some("graph.snapshot") => {
                doc = json!({"rootNodeId": v["rootNodeId"], "nodes": v["nodes"], "edges": v["edges"]});
            }
            _ => {}
        }
    }
    assert_eq!(doc, g.body());
}

fn tamper(which: &str, f: impl Fn(&mut Value)) -> narad_core::checker::Rejection {
    let mut stream = emitted_stream();
    let i = stream
        .iter()
        .rposition(|l| {
            let v: Value = serde_json::from_slice(l).unwrap();
            v["type"] == which
        })
        .unwrap();
    let mut v: Value = serde_json::from_slice(&stream[i]).unwrap();
    f(&mut v);
    stream[i] = serde_json::to_vec(&v).unwrap();
    let mut c = Checker::default().with_canonical_graphs();
    for (k, l) in stream.iter().enumerate() {
        match c.push_bytes(l) {
            Ok(_) => assert_ne!(k, i, "tampered {which} accepted"),
            Err(e) => {
                assert_eq!(k, i, "refused the wrong record: {e:?}");
                return e;
            }
        }
    }
    panic!("tampered {which} accepted");
}

#[test]
fn a_snapshot_that_differs_from_the_rebuild_is_refused() {
    let e = tamper("graph.snapshot", |v| {
        v["nodes"][0]["state"] = json!("error")
    });
    assert_eq!((e.code, e.section), ("graph_not_derived", "9.7"));
    let e = tamper("graph.snapshot", |v| {
        v["edges"].as_array_mut().unwrap().pop();
    });
    assert_eq!(e.code, "graph_not_derived");
}

#[test]
fn a_delta_that_leads_away_from_the_rebuild_is_refused() {
    let e =
        tamper(
            "graph.delta",
            |v| v["patch"] = json!([{"op": "add", "path": "/nodes/-", "value": {"id": "x"}}]),
        );
    assert_eq!(e.code, "graph_not_derived");
}

#[test]
fn published_run_graph_is_accepted_but_is_not_this_derivation() {
    let Some(spec) = narad_conformance::require_spec(
        "published_run_graph_is_accepted_but_is_not_this_derivation",
    ) else {
        return;
    };
    let traces = narad_conformance::load_traces(&spec.join("conformance")).unwrap();
    let trace = traces.iter().find(|t| t.name == "run-graph.jsonl").unwrap();
    let mut plain = Checker::default();
    for (_, l) in &trace.lines {
        plain.push_bytes(l).unwrap();
    }
    // Its emitter labels the root "node-root": another node format, which
    // the canonical check names precisely (NOTES.md, "Graph derivation").
    let mut canonical = Checker::default().with_canonical_graphs();
    let err = trace
        .lines
        .iter()
        .find_map(|(_, l)| canonical.push_bytes(l).err())
        .unwrap();
    assert_eq!((err.index, err.code), (1, "graph_not_derived"));
}
