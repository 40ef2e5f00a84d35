//! Records an adversary writes: repeated member names (RFC 7493 §2.3),
//! events of profiles the reader did not negotiate (§2.1) in the middle of
//! the ordering domains, and very long unique-item arrays.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::{Applied, Checker};
use narad_core::{Parsed, ProfileSet, ValidationCode as C, Validator, ValidatorConfig};
use serde_json::json;

const RUN_STARTED: &str = r#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;

/// Parses `text` and returns the refusal's code and field.
fn refused(text: &str) -> (C, Option<String>) {
    let err = Validator::default().parse(text.as_bytes()).unwrap_err();
    assert!(!err.message.contains("SECRET"), "{}", err.message);
    (err.code, err.field)
}

#[test]
fn repeated_member_names_are_refused_everywhere() {
    assert!(matches!(
        Validator::default().parse(RUN_STARTED.as_bytes()),
        Ok(Parsed::Record { .. })
    ));
    let cases = [
        // Two `type`: a first-wins reader sees run.finished.
        (
            r#"{"type":"run.finished","type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#,
            "/type",
        ),
        (
            r#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":9,"sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#,
            "/sessionSequence",
        ),
        (
            r#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"SECRET","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#,
            "/eventId",
        ),
        // Deep inside a payload.
        (
            r#"{"type":"tool.call.started","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2,"toolCallId":"t1","toolName":"search","executor":"backend","args":{"q":[{"deep":{"k":"SECRET","k":"x"}}]}}"#,
            "/args/q/0/deep/k",
        ),
        // Control, watch and hydrate records.
        (
            r#"{"type":"client.attached","protocolVersion":"narad/v1","clientExecutorId":"c","leaseId":"l","leaseId":"m","heartbeatIntervalMs":1000,"leaseExpiresAt":"2026-08-05T00:00:00Z"}"#,
            "/leaseId",
        ),
        (
            r#"{"type":"session.revision","protocolVersion":"narad/v1","eventId":"w1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","revision":3,"revision":4}"#,
            "/revision",
        ),
        (
            r#"{"type":"messages.snapshot","protocolVersion":"narad/v1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","snapshotId":"x","coversThroughSessionSequence":0,"messages":[{"id":"m","id":"n"}]}"#,
            "/messages/0/id",
        ),
    ];
    for (text, field) in cases {
        assert_eq!(
            refused(text),
            (C::DuplicateKey, Some(field.to_owned())),
            "{text}"
        );
        // The same verdict through the checker, which changes nothing.
        let mut c = Checker::default();
        let err = c.push_bytes(text.as_bytes()).unwrap_err();
        assert_eq!(err.code, "duplicate_key", "{text}");
        assert_eq!(c.debug_state(), Checker::default().debug_state());
    }
}

#[test]
fn a_repeated_name_is_refused_even_when_both_values_agree() {
    let text = r#"{"type":"run.started","type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;
    assert_eq!(refused(text).0, C::DuplicateKey);
    assert_eq!(
        Validator::default().parse(b"{\"a\":").unwrap_err().code,
        C::InvalidJson
    );
}

#[test]
fn ten_arrays_of_ten_thousand_unique_items_are_checked() {
    let ids: Vec<String> = (0..10_000).map(|i| format!("artifact-{i}")).collect();
    for round in 0..10 {
        let mut ev = json!({
            "type": "run.finished", "protocolVersion": "narad/v1", "eventId": format!("e{round}"),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": 2,
            "rootRunId": "r", "runId": "r", "sequence": 2, "artifactIds": ids,
        });
        let bytes = serde_json::to_vec(&ev).unwrap();
        assert!(matches!(
            Validator::default().parse(&bytes),
            Ok(Parsed::Record { .. })
        ));
        // The last item repeats the first.
        ev["artifactIds"][9_999] = json!("artifact-0");
        let err = Validator::default()
            .parse(&serde_json::to_vec(&ev).unwrap())
            .unwrap_err();
        assert_eq!(
            (err.code, err.field.as_deref()),
            (C::DuplicateItems, Some("/artifactIds/9999"))
        );
    }
}

fn event(seq: u64, run_seq: u64, ty: &str, body: serde_json::Value) -> Vec<u8> {
    let mut ev = json!({
        "type": ty, "protocolVersion": "narad/v1", "eventId": format!("e{seq}"),
        "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": seq,
        "rootRunId": "r", "runId": "r", "sequence": run_seq,
    });
    for (k, v) in body.as_object().cloned().unwrap_or_default() {
        ev[k] = v;
    }
    serde_json::to_vec(&ev).unwrap()
}

fn progress_journal() -> Vec<Vec<u8>> {
    vec![
        event(1, 1, "run.started", json!({})),
        event(
            2,
            2,
            "progress.recorded",
            json!({"progressId": "p", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
        ),
        event(3, 3, "run.finished", json!({})),
    ]
}

#[test]
fn an_ignored_profile_event_still_advances_every_cursor() {
    let all = Checker::default();
    let core_only = Checker::new(Validator::new(ValidatorConfig {
        profiles: ProfileSet::core(),
        ..ValidatorConfig::default()
    }));
    for mut c in [all, core_only.clone()] {
        for bytes in progress_journal() {
            c.push_bytes(&bytes).unwrap();
        }
        assert_eq!(c.session_head("s"), Some(3));
        assert_eq!(c.run_head("s", "r"), 3);
    }
    let mut c = core_only.clone();
    let journal = progress_journal();
    assert_eq!(c.push_bytes(&journal[0]), Ok(Applied::Applied));
    assert_eq!(c.push_bytes(&journal[1]), Ok(Applied::Skipped));
    // A redelivery of the ignored event is still a no-op, a changed one is refused.
    assert_eq!(c.push_bytes(&journal[1]), Ok(Applied::Skipped));
    let changed = event(
        2,
        2,
        "progress.recorded",
        json!({"progressId": "p", "category": "phase", "label": "Other", "status": "active", "privacy": "public"}),
    );
    assert_eq!(
        c.push_bytes(&changed).unwrap_err().code,
        "duplicate_event_conflict"
    );
    assert_eq!(c.push_bytes(&journal[2]), Ok(Applied::Applied));
    assert_eq!(c.run_state("s", "r").map(|s| s.is_terminal()), Some(true));

    // Gaps are still refused: an ignored event that skips a position.
    let mut c = core_only.clone();
    c.push_bytes(&journal[0]).unwrap();
    let gap = event(
        3,
        2,
        "progress.recorded",
        json!({"progressId": "p", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
    );
    assert_eq!(c.push_bytes(&gap).unwrap_err().code, "session_sequence_gap");
    let run_gap = event(
        2,
        5,
        "progress.recorded",
        json!({"progressId": "p", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
    );
    assert_eq!(c.push_bytes(&run_gap).unwrap_err().code, "run_sequence_gap");
    // An unknown type of an inactive profile is skipped the same way.
    let unknown = event(2, 2, "progress.exploded", json!({}));
    assert_eq!(c.push_bytes(&unknown), Ok(Applied::Skipped));
    assert_eq!(c.push_bytes(&journal[2]), Ok(Applied::Applied));
}

#[test]
fn an_ignored_workflow_event_still_counts_in_its_workflow_domain() {
    let wf = |seq: u64, wseq: u64, ty: &str| {
        format!(
            r#"{{"type":"{ty}","protocolVersion":"narad/v1","eventId":"e{seq}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{seq},"workflowId":"w","workflowSequence":{wseq}}}"#
        )
    };
    let mut c = Checker::new(Validator::new(ValidatorConfig {
        profiles: ProfileSet::core(),
        ..ValidatorConfig::default()
    }));
    assert_eq!(
        c.push_bytes(wf(1, 1, "workflow.started").as_bytes()),
        Ok(Applied::Skipped)
    );
    assert_eq!(c.workflow_head("s", "w"), 1);
    let gap = c.push_bytes(wf(2, 3, "workflow.finished").as_bytes());
    assert_eq!(gap.unwrap_err().code, "workflow_sequence_gap");
    assert_eq!(
        c.push_bytes(wf(2, 2, "workflow.finished").as_bytes()),
        Ok(Applied::Skipped)
    );
    assert_eq!(
        (c.session_head("s"), c.workflow_head("s", "w")),
        (Some(2), 2)
    );
}

/// A refusal's message never repeats its code: the code travels beside it
/// (the `Rejection`'s own field), and its Display names it once. Both a
/// record that does not parse and one the rules refuse.
#[test]
fn a_rejection_names_its_code_once() {
    let mut c = Checker::default();
    let not_json = c.push_bytes(b"{\"type\":").unwrap_err();
    assert_eq!(not_json.code, "invalid_json");
    let missing = c.push_bytes(RUN_STARTED.replace(r#""runId":"r","#, "").as_bytes());
    let missing = missing.unwrap_err();
    assert_eq!(missing.code, "missing_field");
    c.push_bytes(RUN_STARTED.as_bytes()).unwrap();
    let again = RUN_STARTED.replace(r#""eventId":"e1""#, r#""eventId":"e2""#);
    let again = again.replace(r#""sessionSequence":1"#, r#""sessionSequence":2"#);
    let rule = c.push_bytes(again.as_bytes()).unwrap_err();
    for e in [not_json, missing, rule] {
        assert!(!e.message.contains(e.code), "{e:?}");
        assert_eq!(e.to_string().matches(e.code).count(), 1, "{e}");
    }
}
