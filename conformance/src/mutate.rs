//! A deterministic corpus of mutated records: fields dropped, retyped,
//! renamed, emptied, enums changed, types and scopes swapped, one level of
//! nesting mutated, and envelope fields added where a class forbids them.

use narad_core::registry::TYPES;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// Every mutation of `record`, labelled, deduplicated, in a fixed order.
pub fn mutations(record: &Map<String, Value>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (k, v) in record {
        for (label, nv) in value_mutations(v) {
            let mut m = record.clone();
            m.insert(k.clone(), nv);
            out.push((format!("{k}:{label}"), Value::Object(m)));
        }
        let mut dropped = record.clone();
        dropped.remove(k);
        out.push((format!("{k}:drop"), Value::Object(dropped.clone())));
        let mut renamed = dropped;
        renamed.insert(format!("{k}X"), v.clone());
        out.push((format!("{k}:rename"), Value::Object(renamed)));
        if let Value::Object(inner) = v {
            for (ik, iv) in inner {
                for (label, nv) in value_mutations(iv)
                    .into_iter()
                    .chain([("drop".to_owned(), Value::Null)])
                {
                    let mut i2 = inner.clone();
                    if label == "drop" {
                        i2.remove(ik);
                    } else {
                        i2.insert(ik.clone(), nv);
                    }
                    let mut m = record.clone();
                    m.insert(k.clone(), Value::Object(i2));
                    out.push((format!("{k}/{ik}:{label}"), Value::Object(m)));
                }
            }
        }
        if let Value::Array(items) = v {
            if let Some(Value::Object(first)) = items.first() {
                for ik in first.keys() {
                    let mut f2 = first.clone();
                    f2.remove(ik);
                    let mut arr = items.clone();
                    arr[0] = Value::Object(f2);
                    let mut m = record.clone();
                    m.insert(k.clone(), Value::Array(arr));
                    out.push((format!("{k}/0/{ik}:drop"), Value::Object(m)));
                }
            }
        }
    }
    for t in TYPES {
        if record.get("type").and_then(Value::as_str) != Some(t.name) {
            let mut m = record.clone();
            m.insert("type".into(), json!(t.name));
            out.push((format!("type:swap:{}", t.name), Value::Object(m)));
        }
    }
    for key in ["scope", "messageScope"] {
        if record.contains_key(key) {
            for s in ["session", "workflow", "run", "node"] {
                let mut m = record.clone();
                m.insert(key.into(), json!(s));
                out.push((format!("{key}:swap:{s}"), Value::Object(m)));
            }
        }
    }
    if record
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.starts_with("interrupt."))
    {
        for s in ["run", "workflow", "bogus"] {
            let mut m = record.clone();
            m.insert("scope".into(), json!(s));
            out.push((format!("scope:add:{s}"), Value::Object(m.clone())));
            // The workflow-scope shape of §7.6: workflow ordering, no run-tree fields.
            for k in ["rootRunId", "runId", "sequence", "parentRunId"] {
                m.remove(k);
            }
            m.insert("workflowId".into(), json!("wf-added"));
            m.insert("workflowSequence".into(), json!(3));
            out.push((format!("scope:workflow-shape:{s}"), Value::Object(m)));
        }
    }
    for (k, v) in [
        ("eventId", json!("evt-added")),
        ("sessionSequence", json!(9)),
        ("workflowSequence", json!(9)),
        ("sequence", json!(9)),
        ("revision", json!(9)),
        ("workflowId", json!("wf-added")),
        ("rootRunId", json!("run-added")),
        ("runId", json!("run-added")),
        ("nodeId", json!("node-added")),
        ("x-unknown", json!({"nested": [1, 2]})),
    ] {
        if !record.contains_key(k) {
            let mut m = record.clone();
            m.insert(k.into(), v);
            out.push((format!("{k}:add"), Value::Object(m)));
        }
    }
    let mut seen = BTreeSet::new();
    out.retain(|(_, v)| seen.insert(v.to_string()));
    out
}

fn value_mutations(v: &Value) -> Vec<(String, Value)> {
    let mut out: Vec<(&str, Value)> = vec![
        ("null", Value::Null),
        ("bool", json!(true)),
        ("int", json!(7)),
        ("float", json!(1.5)),
        ("string", json!("bogus")),
        ("array", json!([])),
        ("object", json!({})),
    ];
    match v {
        Value::String(s) => {
            out.push(("empty", json!("")));
            out.push(("upper", json!(s.to_uppercase())));
            out.push(("suffix", json!(format!("{s}.x"))));
            if s.len() >= 20 && s.as_bytes().get(4) == Some(&b'-') {
                out.push(("date-only", json!(&s[..10])));
                out.push(("no-zone", json!(&s[..19])));
                out.push(("offset", json!(format!("{}+05:00", &s[..19]))));
                out.push(("zero-offset", json!(format!("{}+00:00", &s[..19]))));
                out.push((
                    "bad-day",
                    json!(format!("{}31{}", &s[..8], &s[10..]).replace("-08-31", "-02-31")),
                ));
            }
        }
        Value::Number(_) => {
            out.push(("zero", json!(0)));
            out.push(("negative", json!(-1)));
            out.push(("next", json!(v.as_u64().unwrap_or(0).saturating_add(1))));
        }
        Value::Array(items) => {
            out.push(("array-of-int", json!([1])));
            out.push(("array-of-empty", json!([""])));
            if let Some(first) = items.first() {
                out.push(("array-dup", json!([first, first])));
            }
        }
        _ => {}
    }
    out.into_iter()
        .filter(|(_, nv)| nv != v)
        .map(|(l, nv)| (l.to_owned(), nv))
        .collect()
}
