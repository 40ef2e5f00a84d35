// Included by tests/canonical_graph.rs and by
// conformance/preserve-order (serde_json `preserve_order` on).
use narad_core::{graph::RunGraph, Parsed, Record, Validator};

/// A run with a tool call and an interrupt: nodes and edges whose fields
/// insert in an order other than sorted.
const LINES: [&str; 4] = [
    r#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#,
    r#"{"type":"tool.call.started","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2,"toolCallId":"t1","toolName":"search","executor":"backend","args":{"zeta":1,"alpha":2}}"#,
    r#"{"type":"tool.call.finished","protocolVersion":"narad/v1","eventId":"e3","timestamp":"2026-08-05T00:00:02Z","sessionId":"s","sessionSequence":3,"rootRunId":"r","runId":"r","sequence":3,"toolCallId":"t1","outcome":"success","response":{"b":1,"a":2}}"#,
    r#"{"type":"run.finished","protocolVersion":"narad/v1","eventId":"e4","timestamp":"2026-08-05T00:00:03Z","sessionId":"s","sessionSequence":4,"rootRunId":"r","runId":"r","sequence":4}"#,
];

/// The bytes as RFC 8785 orders them (keys sorted at every level).
const PINNED: &str = r#"{"edges":[{"from":"run:r","id":"tool:run:r->tool:t1","kind":"tool","to":"tool:t1"}],"nodes":[{"id":"run:r","kind":"run","label":"r","state":"finished"},{"id":"tool:t1","kind":"tool","label":"search","runId":"r","state":"success"}],"rootNodeId":"run:r"}"#;

fn graph() -> RunGraph {
    let mut graph = RunGraph::new("r");
    for line in LINES {
        match Validator::default().parse(line.as_bytes()).unwrap() {
            Parsed::Record {
                record: Record::Authority(ev),
                ..
            } => {
                graph.apply(&ev).unwrap();
            }
            other => panic!("not an authority event: {other:?}"),
        }
    }
    graph
}

#[test]
fn canonical_graph_bytes_are_pinned_whatever_the_map_order() {
    let bytes = graph().canonical_bytes();
    assert_eq!(String::from_utf8(bytes).unwrap(), PINNED);
}

/// Whether serde_json keeps insertion order in this build.
pub fn preserve_order_on() -> bool {
    let mut m = serde_json::Map::new();
    m.insert("b".into(), 1.into());
    m.insert("a".into(), 2.into());
    m.keys().next().map(String::as_str) == Some("b")
}

#[test]
fn plain_serde_json_bytes_differ_only_when_preserve_order_is_on() {
    // Shows the hazard the canonicalizer removes: serde_json's own bytes
    // of the same body follow the map order.
    let plain = serde_json::to_vec(&graph().body()).unwrap();
    assert_eq!(plain == PINNED.as_bytes(), !preserve_order_on());
}
