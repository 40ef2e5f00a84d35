//! Differential test: narad-core's validator and the published JSON Schemas
//! give the same verdict on every published record and on a generated corpus
//! of mutated records, except the documented cases in `conformance/NOTES.md`
//! where the spec prose is stricter than the schemas (see [`prose_rule`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_conformance::{load_schemas, load_traces, mutate::mutations, require_spec};
use narad_core::{Validator, Verdict};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

struct Oracle(Vec<jsonschema::Validator>);

impl Oracle {
    fn load(spec: &std::path::Path) -> Self {
        let schemas = load_schemas(spec).expect("schemas readable");
        Oracle(
            schemas
                .iter()
                .map(|(name, s)| {
                    jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft202012)
                        .should_validate_formats(true)
                        .build(s)
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                })
                .collect(),
        )
    }

    /// A record is schema-valid iff one of the four record schemas accepts it
    /// (their `type` constants are disjoint, so at most one can).
    fn accepts(&self, v: &Value) -> bool {
        self.0.iter().any(|s| s.is_valid(v))
    }
}

fn ours(v: &Value) -> bool {
    match Validator::default().check(v) {
        Ok(Verdict::Valid { .. }) => true,
        Ok(Verdict::Ignorable { profile }) => {
            panic!("all profiles are active, yet {profile} was ignorable")
        }
        Err(_) => false,
    }
}

/// The documented places where the spec prose is stricter than (or differs
/// from) the schemas. Each id names a section of `conformance/NOTES.md`.
/// Written independently of the validator so that it cannot hide a bug there.
fn prose_rule(v: &Value) -> Option<&'static str> {
    let m = v.as_object()?;
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    if matches!(
        ty,
        "workflow.paused" | "workflow.resumed" | "workflow.step.started"
    ) {
        return Some("D1-workflow-lifecycle");
    }
    if ty.starts_with("interrupt.") && m.get("scope").is_some_and(|s| s != "run") {
        return Some("D2-workflow-scope-interrupt");
    }
    if ty == "interrupt.resolved" && m.contains_key("members") {
        return Some("D3-hitl-members");
    }
    let ts_keys = [
        "timestamp",
        "retryAt",
        "expiresAt",
        "leaseExpiresAt",
        "executionTokenExpiresAt",
        "serverTime",
    ];
    if ts_keys.iter().any(|k| {
        m.get(*k)
            .and_then(Value::as_str)
            .is_some_and(non_utc_offset)
    }) {
        return Some("D4-utc-timestamps");
    }
    if matches!(ty, "state.delta" | "ui.state.delta" | "graph.delta") {
        if let (Some(b), Some(r)) = (
            m.get("baseRevision").and_then(Value::as_u64),
            m.get("revision").and_then(Value::as_u64),
        ) {
            if b + 1 != r {
                return Some("D5-delta-revision");
            }
        }
    }
    if let Some(Value::Array(ops)) = m.get("patch") {
        let rfc_incomplete = ops
            .iter()
            .any(|op| match op.get("op").and_then(Value::as_str) {
                Some("add" | "replace" | "test") => op.get("value").is_none(),
                Some("move" | "copy") => op.get("from").is_none(),
                _ => false,
            });
        if rfc_incomplete {
            return Some("D6-rfc6902-operations");
        }
    }
    if m.contains_key("cursor") && is_watch(ty) && !cursor_well_formed(&m["cursor"]) {
        return Some("D7-watch-cursor");
    }
    if has_integral_float(v) {
        return Some("D8-integers-as-integers");
    }
    None
}

fn is_watch(ty: &str) -> bool {
    matches!(
        ty,
        "session.revision"
            | "run.revision"
            | "workflow.revision"
            | "node.revision"
            | "workspace.revision"
            | "session.created"
            | "session.updated"
            | "session.archived"
    )
}

fn non_utc_offset(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 6
        && matches!(b[b.len() - 6], b'+' | b'-')
        && b[b.len() - 3] == b':'
        && !s.ends_with("+00:00")
}

fn cursor_well_formed(c: &Value) -> bool {
    let pos = |k: &str| c.get(k).and_then(Value::as_u64).is_some_and(|n| n >= 1);
    let id = |k: &str| {
        c.get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    let opt_id = |k: &str| c.get(k).is_none() || id(k);
    match c.get("kind").and_then(Value::as_str) {
        Some("session") => pos("sessionSequence") && opt_id("sessionId"),
        Some("workflow") => pos("workflowSequence") && id("workflowId"),
        Some("run") => pos("sequence") && id("rootRunId"),
        _ => false,
    }
}

fn has_integral_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0),
        Value::Array(a) => a.iter().any(has_integral_float),
        Value::Object(o) => o.values().any(has_integral_float),
        _ => false,
    }
}

#[test]
fn validator_agrees_with_published_schemas_on_published_and_mutated_records() {
    let Some(spec) = require_spec("validator_agrees_with_published_schemas") else {
        return;
    };
    let oracle = Oracle::load(&spec);
    let traces = load_traces(&spec.join("conformance")).expect("traces readable");

    let mut originals: Vec<(String, Map<String, Value>)> = Vec::new();
    for t in &traces {
        for (line, bytes) in &t.lines {
            let v: Value = serde_json::from_slice(bytes).expect("published lines are JSON");
            let (schema, core) = (oracle.accepts(&v), ours(&v));
            if !t.invalid {
                assert!(schema, "{}:{line} rejected by the schemas", t.name);
            }
            assert_eq!(
                schema,
                core,
                "{}:{line}: {:?}",
                t.name,
                Validator::default().check(&v)
            );
            if let Value::Object(m) = v {
                originals.push((format!("{}:{line}", t.name), m));
            }
        }
    }

    let mut compared = 0usize;
    let mut excluded: BTreeMap<&str, usize> = BTreeMap::new();
    let mut accepted = 0usize;
    let mut disagreements = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (origin, record) in &originals {
        for (label, mutant) in mutations(record) {
            if !seen.insert(mutant.to_string()) {
                continue;
            }
            if let Some(rule) = prose_rule(&mutant) {
                *excluded.entry(rule).or_default() += 1;
                continue;
            }
            compared += 1;
            let (schema, core) = (oracle.accepts(&mutant), ours(&mutant));
            accepted += usize::from(schema);
            if schema != core {
                disagreements.push(format!(
                    "{origin} {label}: schema={schema} core={core} ({:?})\n  {mutant}",
                    Validator::default()
                        .check(&mutant)
                        .err()
                        .map(|e| e.to_string())
                ));
            }
        }
    }
    println!(
        "differential: {} published records, {compared} mutated records compared ({accepted} schema-valid, {} schema-invalid), excluded by documented prose rules: {excluded:?}",
        originals.len(),
        compared - accepted,
    );
    assert!(compared >= 10_000, "corpus too small: {compared}");
    assert!(
        disagreements.is_empty(),
        "{} disagreements, first 20:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Each documented rule must actually be exercised, or the note is stale.
    for rule in [
        "D1-workflow-lifecycle",
        "D2-workflow-scope-interrupt",
        "D4-utc-timestamps",
        "D5-delta-revision",
    ] {
        assert!(
            excluded.contains_key(rule),
            "documented rule {rule} was never exercised"
        );
    }
}
