//! The fast parse path (narad-core `fast/`) decides nothing on its own:
//! whenever it accepts a record, the strict slow path gives an identical
//! `Parsed` (typed record, class, wire bytes and JSON) and the same content
//! fingerprint; whenever the slow path refuses, so does `parse_bytes`, with
//! the same error. Checked on every record of every published and project
//! trace, on every mutation of those records, and on random records.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use narad_conformance::{load_traces, mutate::mutations, require_spec};
use narad_core::{Limits, Parsed, ProfileSet, Record, Validator, ValidatorConfig};
use proptest::prelude::*;
use std::path::Path;

fn validators() -> Vec<Validator> {
    let tight = Limits {
        max_depth: 3,
        max_string_bytes: 40,
        max_array_len: 2,
        ..Limits::default()
    };
    vec![
        Validator::default(),
        Validator::new(ValidatorConfig {
            profiles: ProfileSet::all(),
            ..ValidatorConfig::default()
        }),
        Validator::new(ValidatorConfig {
            profiles: ProfileSet::core(),
            ..ValidatorConfig::default()
        }),
        Validator::new(ValidatorConfig {
            profiles: ProfileSet::all(),
            limits: tight,
        }),
    ]
}

fn fingerprint(p: &Parsed) -> Option<u64> {
    match p {
        Parsed::Record { record, .. } => Some(record.wire().fingerprint()),
        Parsed::Ignorable { authority, .. } => authority.as_ref().map(|a| a.wire.fingerprint()),
    }
}

/// Checks one record under one validator; true if the fast path took it.
fn same(v: &Validator, bytes: &[u8], what: &str) -> bool {
    let bytes = Bytes::copy_from_slice(bytes);
    let fast = v.parse_fast(&bytes);
    let slow = v.parse_slow(bytes.clone());
    if let Some(fast) = &fast {
        let Ok(slow) = &slow else {
            panic!("{what}: the fast path accepted what the slow path refuses: {slow:?}");
        };
        assert_eq!(fast, slow, "{what}");
        assert_eq!(fingerprint(fast), fingerprint(slow), "{what}: fingerprint");
        assert!(
            matches!(
                fast,
                Parsed::Record {
                    record: Record::Authority(_),
                    ..
                }
            ),
            "{what}"
        );
    }
    // The public entry point equals the slow path, errors included.
    assert_eq!(v.parse_bytes(bytes), slow, "{what}");
    fast.is_some()
}

fn traces(dir: &Path) -> Vec<(String, Vec<u8>)> {
    load_traces(dir)
        .unwrap()
        .into_iter()
        .flat_map(|t| {
            let name = t.name;
            t.lines
                .into_iter()
                .map(move |(n, l)| (format!("{name}:{n}"), l))
        })
        .collect()
}

#[test]
fn every_trace_record_and_its_mutations_agree() {
    let mut lines = traces(&Path::new(env!("CARGO_MANIFEST_DIR")).join("traces"));
    if let Some(spec) = require_spec("every_trace_record_and_its_mutations_agree") {
        lines.extend(traces(&spec.join("conformance")));
    }
    let validators = validators();
    let (mut checked, mut fast) = (0usize, 0usize);
    for (what, line) in &lines {
        let mut variants = vec![(what.clone(), line.clone())];
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(line) {
            for (m, value) in mutations(&map) {
                variants.push((format!("{what} {m}"), serde_json::to_vec(&value).unwrap()));
            }
            // The same record re-encoded: sorted keys, escapes, spacing.
            let pretty = serde_json::to_vec_pretty(&map).unwrap();
            variants.push((format!("{what} pretty"), pretty));
        }
        for (what, bytes) in &variants {
            for v in &validators {
                checked += 1;
                fast += usize::from(same(v, bytes, what));
            }
        }
    }
    eprintln!("fast path: {fast} of {checked} checks");
    assert!(fast > 100, "the fast path took only {fast} records");
}

/// The fast path reads the text on its own terms (one UTF-8 check, then
/// borrowed strings, a pre-scan for the type), so lexical edits matter: at every byte of records the fast path takes, a byte deleted,
/// JSON whitespace, a form feed (not JSON whitespace), a backslash, a
/// digit, a quote, a comma, a brace or a control character inserted, and
/// the byte doubled. Each variant goes through [`same`].
#[test]
fn byte_edits_of_fast_records_agree() {
    let lines = traces(&Path::new(env!("CARGO_MANIFEST_DIR")).join("traces"));
    let v = Validator::default();
    // One record of each fast type and shape (its sorted member names).
    let mut shapes = std::collections::BTreeSet::new();
    let picked: Vec<_> = lines
        .iter()
        .filter(|(_, l)| v.parse_fast(&Bytes::copy_from_slice(l)).is_some())
        .filter(|(_, l)| {
            let Ok(serde_json::Value::Object(m)) = serde_json::from_slice(l) else {
                return false;
            };
            shapes.insert(m.keys().cloned().collect::<Vec<_>>())
        })
        .collect();
    assert!(picked.len() >= 10, "only {} fast records", picked.len());
    let (mut checked, mut fast) = (0usize, 0usize);
    for (what, line) in picked {
        for i in 0..=line.len() {
            let mut edits: Vec<Vec<u8>> = Vec::new();
            if i < line.len() {
                let mut e = line.clone();
                e.remove(i);
                edits.push(e);
                let mut e = line.clone();
                e.insert(i, line[i]);
                edits.push(e);
            }
            for ins in [b' ', b'\t', 0x0c, b'\\', b'0', b'"', b',', b'}', 0x01] {
                let mut e = line.clone();
                e.insert(i, ins);
                edits.push(e);
            }
            for e in &edits {
                checked += 1;
                fast += usize::from(same(&v, e, &format!("{what} edit at {i}")));
            }
        }
    }
    eprintln!("byte edits: the fast path took {fast} of {checked}");
    assert!(fast > 0 && fast < checked);
}

/// Members of the fast types with valid, borderline and invalid values.
fn member() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "type",
        "protocolVersion",
        "eventId",
        "timestamp",
        "sessionId",
        "sessionSequence",
        "workflowId",
        "workflowSequence",
        "rootRunId",
        "runId",
        "sequence",
        "parentRunId",
        "parentToolCallId",
        "nodeId",
        "clientExecutorId",
        "usage",
        "toolCallId",
        "toolName",
        "executor",
        "args",
        "outcome",
        "response",
        "code",
        "message",
        "interruptId",
        "waitId",
        "kind",
        "actions",
        "scope",
        "expiresAt",
        "title",
        "input",
        "decision",
        "reason",
        "members",
        "progressId",
        "category",
        "label",
        "detail",
        "status",
        "privacy",
        "name",
        "value",
        "messageId",
        "delta",
        "role",
        "messageScope",
        "reasoningId",
        "content",
        "resumeMode",
        "retryAt",
        "attachmentIds",
        "x-extra",
        "artifactIds",
        "t\\u0079pe",
        "runI\\u0064",
    ]);
    let value = prop::sample::select(vec![
        r#""r""#,
        r#""""#,
        "null",
        "1",
        "0",
        "-1",
        "1.0",
        "2",
        "18446744073709551616",
        "true",
        r#""narad/v1""#,
        r#""2026-08-05T00:00:01.250Z""#,
        r#""2026-08-05 00:00""#,
        r#""run.started""#,
        r#""run.finished""#,
        r#""tool.call.started""#,
        r#""tool.call.finished""#,
        r#""progress.recorded""#,
        r#""run.custom""#,
        r#""interrupt.requested""#,
        r#""interrupt.resolved""#,
        r#""message.user.recorded""#,
        r#""message.text.delta""#,
        r#""message.text.started""#,
        r#""message.text.completed""#,
        r#""reasoning.delta""#,
        r#""reasoning.started""#,
        r#""state.delta""#,
        r#""backend""#,
        r#""client""#,
        r#""success""#,
        r#""cancelled""#,
        r#""active""#,
        r#""public""#,
        r#""run""#,
        r#""session""#,
        r#""workflow""#,
        r#""assistant""#,
        r#""automatic""#,
        r#""command""#,
        r#""run.paused""#,
        r#""run.resumed""#,
        r#""acme.tokens""#,
        r#""Acme""#,
        r#""\u0072un""#,
        r#"["a","b"]"#,
        r#"["a","a"]"#,
        "[]",
        r#"[""]"#,
        "{}",
        r#"{"q":1,"q":2}"#,
        r#"{"a":{"b":[1,{"c":{"d":{}}}]}}"#,
        r#"{"promptTokens":3}"#,
        r#"{"promptTokens":-3}"#,
        r#"{"totalTokens":1.5,"elapsedMs":2.25}"#,
        r#"{"x":"\ud83d\ude00"}"#,
        r#""0123456789012345678901234567890123456789012""#,
        r#"[1,2,3]"#,
        "01",
        "1e2",
        "-0",
        " 3 ",
        r#""a\nb\"c\\d\/""#,
        r#""\ud800""#,
        r#""\uD83D\uDE00""#,
        r#""\u00e""#,
        "\"a\tb\"",
        r#""\q""#,
    ]);
    (key, value).prop_map(|(k, v)| format!("\"{k}\":{v}"))
}

/// A record body likely to be close to valid: a valid envelope for one of
/// the fast types, then random members (possibly repeating one).
fn record() -> impl Strategy<Value = Vec<u8>> {
    let ty = prop::sample::select(vec![
        "run.started",
        "run.finished",
        "tool.call.started",
        "tool.call.finished",
        "progress.recorded",
        "run.custom",
        "interrupt.requested",
        "interrupt.resolved",
        "message.user.recorded",
        "message.text.delta",
        "message.text.started",
        "message.text.completed",
        "reasoning.delta",
        "reasoning.started",
        "reasoning.completed",
        "run.paused",
        "run.resumed",
    ]);
    let good_body = prop::sample::select(vec![
        "",
        r#","toolCallId":"t1","toolName":"search","executor":"backend","args":{"q":1}"#,
        r#","toolCallId":"t1","outcome":"success","response":null,"code":"","message":"m""#,
        r#","progressId":"p","category":"phase","label":"L","status":"active","privacy":"public""#,
        r#","name":"acme.tokens","value":{"n":17}"#,
        r#","interruptId":"i","waitId":"w","kind":"approval","actions":["approve","deny"],"input":null"#,
        r#","interruptId":"i","waitId":"w","decision":"approve","scope":"run""#,
        r#","messageId":"m","delta":"hi \u00e9""#,
        r#","messageId":"m","role":"assistant","messageScope":"session""#,
        r#","messageId":"m","messageScope":"session","content":"Book it.""#,
        r#","messageId":"m","messageScope":"run","content":"""#,
        r#","reasoningId":"r","delta":"d""#,
        r#","usage":{"promptTokens":1,"completionTokens":2,"totalTokens":3}"#,
        r#","waitId":"w","reason":"interrupt","resumeMode":"command","interruptId":"i""#,
        r#","waitId":"w","reason":"acme.rate","resumeMode":"automatic","retryAt":"2026-08-05T00:00:09Z","message":"m""#,
        r#","waitId":"w""#,
        // Each broken in one place.
        r#","waitId":"w","reason":"r","resumeMode":"automatic","retryAt":"2026-08-05 00:00""#,
        r#","waitId":"w","reason":"r","resumeMode":"later""#,
        r#","waitId":"w","reason":"","resumeMode":"command""#,
        r#","waitId":"w","reason":"r","resumeMode":"command","interruptId":"""#,
    ]);
    let envelope = prop::sample::select(vec![
        r#""protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1"#,
        r#""protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":1"#,
        r#""protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":3,"workflowId":"w","workflowSequence":2,"rootRunId":"r","runId":"c","sequence":4,"parentRunId":"p","parentToolCallId":"t""#,
    ]);
    (
        ty,
        envelope,
        good_body,
        prop::collection::vec(member(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(ty, env, body, extra, front)| {
            let extra: String = extra.iter().map(|m| format!(",{m}")).collect();
            let text = if front {
                format!(r#"{{"type":"{ty}"{extra},{env}{body}}}"#)
            } else {
                format!(r#" {{"type":"{ty}",{env}{body}{extra}}}"#)
            };
            text.into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn random_records_agree(bytes in record()) {
        for v in &validators() {
            same(v, &bytes, &String::from_utf8_lossy(&bytes));
        }
    }
}
