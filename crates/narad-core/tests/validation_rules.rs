//! One test per structural rule narad-core enforces beyond (or alongside)
//! the schemas. Each builds a valid record, shows it is accepted, breaks the
//! rule, and asserts the rule's code, so a broken rule fails its test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::{
    Limits, Profile, ProfileSet, ValidationCode as C, Validator, ValidatorConfig, Verdict,
};
use serde_json::{json, Value};

fn run_event(ty: &str, extra: Value) -> Value {
    let mut v = json!({
        "type": ty, "protocolVersion": "narad/v1", "eventId": "e1",
        "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s1", "sessionSequence": 1,
        "rootRunId": "r1", "runId": "r1", "sequence": 1
    });
    merge(&mut v, extra);
    v
}

fn session_event(ty: &str, extra: Value) -> Value {
    let mut v = json!({
        "type": ty, "protocolVersion": "narad/v1", "eventId": "e1",
        "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s1", "sessionSequence": 1
    });
    merge(&mut v, extra);
    v
}

fn merge(v: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        for (k, x) in e {
            if x.is_null() {
                o.remove(&k);
            } else {
                o.insert(k, x);
            }
        }
    }
}

fn code(v: &Value) -> Option<C> {
    Validator::default().check(v).err().map(|e| e.code)
}

fn valid(v: &Value) {
    assert!(
        matches!(Validator::default().check(v), Ok(Verdict::Valid { .. })),
        "{v}: {:?}",
        Validator::default().check(v)
    );
}

#[test]
fn unknown_protocol_version_is_rejected() {
    valid(&run_event("run.started", json!({})));
    assert_eq!(
        code(&run_event(
            "run.started",
            json!({"protocolVersion": "narad/v2"})
        )),
        Some(C::UnsupportedProtocolVersion)
    );
    assert_eq!(
        code(&run_event("run.started", json!({"protocolVersion": null}))),
        Some(C::MissingField)
    );
}

#[test]
fn type_must_be_dotted_lowercase() {
    for bad in [
        "Run.started",
        "run",
        "run..started",
        "run.Started",
        "1run.started",
        "run.started.",
    ] {
        assert_eq!(
            code(&run_event(bad, json!({}))),
            Some(C::InvalidTypeName),
            "{bad}"
        );
    }
}

#[test]
fn timestamps_must_be_utc() {
    assert_eq!(
        code(&run_event(
            "run.started",
            json!({"timestamp": "2026-08-05T00:00:00+02:00"})
        )),
        Some(C::InvalidTimestamp)
    );
    assert_eq!(
        code(&run_event("run.started", json!({"timestamp": "yesterday"}))),
        Some(C::InvalidTimestamp)
    );
    valid(&run_event(
        "run.started",
        json!({"timestamp": "2026-08-05T00:00:00.123456+00:00"}),
    ));
}

#[test]
fn workflow_scope_interrupt_carries_no_run_tree_fields() {
    let wf = |extra| {
        session_event(
            "interrupt.requested",
            merge_into(
                json!({"scope": "workflow", "workflowId": "w1", "workflowSequence": 2, "interruptId": "i1", "waitId": "w", "kind": "approval", "actions": ["approve"]}),
                extra,
            ),
        )
    };
    valid(&wf(json!({})));
    assert_eq!(code(&wf(json!({"runId": "r1"}))), Some(C::ForbiddenField));
    assert_eq!(
        code(&wf(json!({"workflowSequence": null}))),
        Some(C::DependentFieldMissing)
    );
    assert_eq!(
        code(&wf(json!({"workflowSequence": null, "workflowId": null}))),
        Some(C::MissingField)
    );
    // Default scope is run: run-tree fields are then required.
    assert_eq!(code(&wf(json!({"scope": null}))), Some(C::MissingField));
}

fn merge_into(mut base: Value, extra: Value) -> Value {
    merge(&mut base, extra);
    base
}

#[test]
fn workflow_pause_names_wait_and_interrupt() {
    let p = |extra| {
        session_event(
            "workflow.paused",
            merge_into(
                json!({"workflowId": "w1", "workflowSequence": 3, "waitId": "w", "interruptId": "i1"}),
                extra,
            ),
        )
    };
    valid(&p(json!({})));
    assert_eq!(
        code(&p(json!({"interruptId": null}))),
        Some(C::MissingField)
    );
    assert_eq!(
        code(&p(json!({"workflowId": null}))),
        Some(C::DependentFieldMissing)
    );
}

#[test]
fn delta_revision_is_base_plus_one() {
    let d = |rev| {
        session_event(
            "state.delta",
            json!({"scope": "session", "baseRevision": 4, "revision": rev, "patch": []}),
        )
    };
    valid(&d(5));
    assert_eq!(code(&d(6)), Some(C::RevisionMismatch));
    assert_eq!(code(&d(4)), Some(C::RevisionMismatch));
}

#[test]
fn patch_operations_follow_rfc6902() {
    let d = |op: Value| {
        session_event(
            "ui.state.delta",
            json!({"scope": "session", "baseRevision": 0, "revision": 1, "patch": [op]}),
        )
    };
    valid(&d(json!({"op": "add", "path": "/a", "value": null})));
    valid(&d(json!({"op": "move", "path": "/a", "from": "/b"})));
    assert_eq!(
        code(&d(json!({"op": "add", "path": "/a"}))),
        Some(C::InvalidPatch)
    );
    assert_eq!(
        code(&d(json!({"op": "copy", "path": "/a"}))),
        Some(C::InvalidPatch)
    );
    assert_eq!(
        code(&d(json!({"op": "merge", "path": "/a", "value": 1}))),
        Some(C::InvalidPatch)
    );
    assert_eq!(
        code(&d(json!({"op": "remove", "path": "a"}))),
        Some(C::InvalidPatch)
    );
    assert_eq!(
        code(&d(json!({"op": "remove", "path": "/a~2"}))),
        Some(C::InvalidPatch)
    );
}

#[test]
fn message_and_state_scopes_require_their_ordering_fields() {
    let m = |scope: &str| {
        session_event(
            "message.user.recorded",
            json!({"messageId": "m", "messageScope": scope, "content": "hi"}),
        )
    };
    valid(&m("session"));
    assert_eq!(code(&m("run")), Some(C::MissingField));
    assert_eq!(code(&m("workflow")), Some(C::MissingField));
    let s = |scope: &str| {
        session_event(
            "state.snapshot",
            json!({"scope": scope, "revision": 1, "state": {}}),
        )
    };
    valid(&s("session"));
    assert_eq!(code(&s("run")), Some(C::MissingField));
}

#[test]
fn graph_records_carry_no_authority_sequence() {
    let g = |extra| {
        merge_into(
            json!({"type": "graph.snapshot", "protocolVersion": "narad/v1", "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "scope": "run", "rootRunId": "r", "graphSchemaVersion": "narad.graph/v1", "revision": 1, "sourceRunCursor": {"sequence": 2}, "rootNodeId": "n", "nodes": [], "edges": []}),
            extra,
        )
    };
    valid(&g(json!({})));
    for k in ["sessionSequence", "sequence", "workflowSequence"] {
        assert_eq!(code(&g(json!({k: 3}))), Some(C::ForbiddenField), "{k}");
    }
    assert_eq!(code(&g(json!({"eventId": "e"}))), Some(C::ForbiddenField));
    assert_eq!(
        code(&g(json!({"workflowId": "w"}))),
        Some(C::ForbiddenField)
    );
    assert_eq!(
        code(&g(json!({"sourceRunCursor": {"sequence": 2, "extra": 1}}))),
        Some(C::ForbiddenField)
    );
}

#[test]
fn control_messages_carry_no_identity_or_ordering() {
    let hb = |extra| {
        merge_into(
            json!({"type": "client.heartbeat", "protocolVersion": "narad/v1", "clientExecutorId": "c", "leaseId": "l"}),
            extra,
        )
    };
    valid(&hb(json!({})));
    for k in ["eventId", "sessionSequence", "sequence", "revision"] {
        assert_eq!(code(&hb(json!({k: 1}))), Some(C::ForbiddenField), "{k}");
    }
}

#[test]
fn watch_cursors_are_typed() {
    let w = |cursor: Value| json!({"type": "session.revision", "protocolVersion": "narad/v1", "eventId": "w", "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "revision": 2, "cursor": cursor});
    valid(&w(json!({"kind": "session", "sessionSequence": 4})));
    valid(&w(json!({"kind": "run", "rootRunId": "r", "sequence": 4})));
    assert_eq!(
        code(&w(json!({"kind": "tab", "sessionSequence": 4}))),
        Some(C::InvalidCursor)
    );
    assert_eq!(
        code(&w(json!({"kind": "workflow", "workflowSequence": 4}))),
        Some(C::InvalidCursor)
    );
    assert_eq!(
        code(&w(json!({"kind": "session", "sessionSequence": 0}))),
        Some(C::InvalidCursor)
    );
}

#[test]
fn inactive_profile_events_are_ignorable_and_unknown_types_fail_closed() {
    let core_only = Validator::new(ValidatorConfig {
        profiles: ProfileSet::core(),
        ..ValidatorConfig::default()
    });
    let progress = run_event(
        "progress.recorded",
        json!({"progressId": "p", "category": "c", "label": "l", "status": "active", "privacy": "public"}),
    );
    assert_eq!(
        core_only.check(&progress),
        Ok(Verdict::Ignorable {
            profile: Profile::Progress
        })
    );
    valid(&progress);
    // An unknown type of an inactive profile is ignorable; of an active one it fails closed.
    let unknown = run_event("progress.exploded", json!({}));
    assert_eq!(
        core_only.check(&unknown),
        Ok(Verdict::Ignorable {
            profile: Profile::Progress
        })
    );
    assert_eq!(code(&unknown), Some(C::UnknownType));
    assert_eq!(
        core_only
            .check(&run_event("run.exploded", json!({})))
            .err()
            .map(|e| e.code),
        Some(C::UnknownType)
    );
    // The version is checked even for ignorable events.
    assert_eq!(
        core_only
            .check(&run_event(
                "progress.recorded",
                json!({"protocolVersion": "narad/v9"})
            ))
            .err()
            .map(|e| e.code),
        Some(C::UnsupportedProtocolVersion)
    );
}

#[test]
fn extensions_with_unknown_names_are_accepted() {
    valid(&session_event(
        "session.custom",
        json!({"name": "acme.never.heard.of", "value": {"x": 1}}),
    ));
    assert_eq!(
        code(&session_event(
            "session.custom",
            json!({"name": "NoDots", "value": 1})
        )),
        Some(C::InvalidValue)
    );
    assert_eq!(
        code(&session_event(
            "run.custom",
            json!({"name": "a.b", "value": 1})
        )),
        Some(C::MissingField)
    );
}

#[test]
fn hostile_input_is_refused_without_crashing() {
    let v = Validator::default();
    // Well-formed, but nested past what the parser follows: too deep, not
    // a syntax error.
    let deep = "[".repeat(200_000) + &"]".repeat(200_000);
    assert_eq!(
        v.parse(deep.as_bytes()).err().map(|e| e.code),
        Some(C::NestingTooDeep)
    );
    let broken = "[".repeat(200_000);
    assert_eq!(
        v.parse(broken.as_bytes()).err().map(|e| e.code),
        Some(C::NestingTooDeep)
    );
    let mut nested = json!(1);
    for _ in 0..70 {
        nested = json!([nested]);
    }
    assert_eq!(
        v.check(&run_event("run.started", json!({"x": nested})))
            .err()
            .map(|e| e.code),
        Some(C::NestingTooDeep)
    );
    let long = "a".repeat(300_000);
    assert_eq!(
        v.check(&run_event("run.started", json!({"x": long})))
            .err()
            .map(|e| e.code),
        Some(C::StringTooLong)
    );
    let wide: Vec<u8> = vec![0; 10_001];
    assert_eq!(
        v.check(&run_event("run.started", json!({"x": wide})))
            .err()
            .map(|e| e.code),
        Some(C::ArrayTooLong)
    );
    let huge = vec![b' '; 600_000];
    assert_eq!(
        v.parse(&huge).err().map(|e| e.code),
        Some(C::RecordTooLarge)
    );
    assert_eq!(
        v.parse(b"not json").err().map(|e| e.code),
        Some(C::InvalidJson)
    );
    assert_eq!(
        v.parse(b"[1,2]").err().map(|e| e.code),
        Some(C::NotAnObject)
    );
    let tiny = Validator::new(ValidatorConfig {
        limits: Limits {
            max_depth: 2,
            ..Limits::default()
        },
        ..ValidatorConfig::default()
    });
    assert_eq!(
        tiny.check(&run_event("run.started", json!({"x": {"y": {}}})))
            .err()
            .map(|e| e.code),
        Some(C::NestingTooDeep)
    );
}

#[test]
fn errors_name_the_record_field_and_code_without_echoing_values() {
    let secret = "sk-live-SECRET";
    let err = Validator::default()
        .check(&run_event(
            "tool.call.started",
            json!({"toolCallId": "t", "toolName": "x", "executor": secret, "args": {}}),
        ))
        .expect_err("bad executor");
    assert_eq!(err.code, C::InvalidValue);
    assert_eq!(err.field.as_deref(), Some("/executor"));
    assert_eq!(err.record_type.as_deref(), Some("tool.call.started"));
    assert!(!err.to_string().contains(secret), "{err}");
    assert_eq!(err.code.as_str(), "invalid_value");
}
