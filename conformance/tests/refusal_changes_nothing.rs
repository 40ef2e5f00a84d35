//! A refused record leaves the checker exactly as it was (the engine relies
//! on this to check commands before appending): for every line of every
//! valid trace, each mutant of that line that is refused leaves the state
//! unchanged, and the original line is still accepted afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_conformance::{load_traces, mutate::mutations, require_spec};
use narad_core::checker::Checker;
use std::path::Path;

#[test]
fn refused_records_leave_the_checker_unchanged() {
    let mut traces = load_traces(&Path::new(env!("CARGO_MANIFEST_DIR")).join("traces")).unwrap();
    if let Some(spec) = require_spec("refusal_changes_nothing over published traces") {
        traces.extend(load_traces(&spec.join("conformance")).unwrap());
    }
    let (mut refused, mut invalid_checked) = (0usize, 0usize);
    for t in &traces {
        let mut c = Checker::default();
        for (line, bytes) in &t.lines {
            let before = c.debug_state();
            if t.invalid {
                if c.push_bytes(bytes).is_err() {
                    assert_eq!(
                        c.debug_state(),
                        before,
                        "{}:{line}: the refusal changed state",
                        t.name
                    );
                    invalid_checked += 1;
                    break;
                }
                continue;
            }
            let value: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            for (label, mutant) in mutations(value.as_object().unwrap()) {
                let mb = serde_json::to_vec(&mutant).unwrap();
                let mut probe = c.clone();
                if probe.push_bytes(&mb).is_err() {
                    refused += 1;
                    assert_eq!(
                        probe.debug_state(),
                        before,
                        "{}:{line} {label}: the refusal changed state",
                        t.name
                    );
                }
            }
            c.push_bytes(bytes)
                .unwrap_or_else(|e| panic!("{}:{line}: {e}", t.name));
        }
    }
    assert!(refused > 10_000, "too few refusals exercised: {refused}");
    assert!(
        invalid_checked >= 30,
        "invalid traces checked: {invalid_checked}"
    );
}
