//! §4.2, §9.1: every event of a workflow-owned run carries that workflow's
//! `workflowId` and `workflowSequence`, and a run outside a workflow has
//! none. The project trace pair `workflow-run-event-without-workflow-fields`
//! covers the missing fields; these cover the other ways to break the rule,
//! and that a refusal leaves the checker able to take the right event.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_core::checker::Checker;
use serde_json::{json, Value};

/// Builds a journal event by event, assigning every applicable sequence.
#[derive(Default)]
struct J {
    n: u64,
    run_seq: std::collections::BTreeMap<String, u64>,
    wf_seq: std::collections::BTreeMap<String, u64>,
}

impl J {
    fn ev(&mut self, ty: &str, run: Option<&str>, wf: Option<&str>, body: Value) -> Vec<u8> {
        self.n += 1;
        let mut e = json!({
            "type": ty, "protocolVersion": "narad/v1", "eventId": format!("evt-{}", self.n),
            "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s-1", "sessionSequence": self.n,
        });
        if let Some(wf) = wf {
            let s = self.wf_seq.entry(wf.to_owned()).or_default();
            *s += 1;
            e["workflowId"] = wf.into();
            e["workflowSequence"] = (*s).into();
        }
        if let Some(run) = run {
            let s = self.run_seq.entry(run.to_owned()).or_default();
            *s += 1;
            e["rootRunId"] = run.into();
            e["runId"] = run.into();
            e["sequence"] = (*s).into();
        }
        if let (Value::Object(e), Value::Object(b)) = (&mut e, body) {
            e.extend(b);
        }
        serde_json::to_vec(&e).unwrap()
    }
}

fn accept(c: &mut Checker, bytes: &[u8]) {
    if let Err(r) = c.push_bytes(bytes) {
        panic!("refused: {r}");
    }
}

/// Refused with the rule's code; the journal builder's counters are rolled
/// back so the next event takes the refused one's positions.
fn refuse(c: &mut Checker, j: &mut J, run: &str, wf: Option<&str>, bytes: &[u8]) {
    let r = c.push_bytes(bytes).unwrap_err();
    assert_eq!((r.code, r.section), ("run_workflow_mismatch", "4.2"), "{r}");
    j.n -= 1;
    *j.run_seq.get_mut(run).unwrap() -= 1;
    if let Some(wf) = wf {
        *j.wf_seq.get_mut(wf).unwrap() -= 1;
    }
}

#[test]
fn a_workflow_runs_events_carry_its_workflow_fields_and_no_others() {
    let (mut c, mut j) = (Checker::default(), J::default());
    accept(
        &mut c,
        &j.ev("workflow.started", None, Some("w2"), json!({})),
    );
    accept(
        &mut c,
        &j.ev("workflow.finished", None, Some("w2"), json!({})),
    );
    accept(
        &mut c,
        &j.ev("workflow.started", None, Some("w1"), json!({})),
    );
    accept(
        &mut c,
        &j.ev("run.started", Some("a"), Some("w1"), json!({})),
    );
    // Without the fields.
    let bad = j.ev("run.finished", Some("a"), None, json!({}));
    refuse(&mut c, &mut j, "a", None, &bad);
    // With another workflow's fields (its next position, so only the
    // ownership is wrong).
    let bad = j.ev("run.finished", Some("a"), Some("w2"), json!({}));
    refuse(&mut c, &mut j, "a", Some("w2"), &bad);
    // The refusals changed nothing: the right event is accepted.
    accept(
        &mut c,
        &j.ev("run.finished", Some("a"), Some("w1"), json!({})),
    );

    // A run outside any workflow: its events claim none.
    let (mut c, mut j) = (Checker::default(), J::default());
    accept(
        &mut c,
        &j.ev("workflow.started", None, Some("w1"), json!({})),
    );
    accept(
        &mut c,
        &j.ev("workflow.finished", None, Some("w1"), json!({})),
    );
    accept(&mut c, &j.ev("run.started", Some("b"), None, json!({})));
    let bad = j.ev("run.finished", Some("b"), Some("w1"), json!({}));
    refuse(&mut c, &mut j, "b", Some("w1"), &bad);
    accept(&mut c, &j.ev("run.finished", Some("b"), None, json!({})));
}
