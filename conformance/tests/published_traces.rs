//! Every published golden trace through the journal checker: `NAME.jsonl`
//! is accepted, `NAME.invalid.jsonl` is rejected at the expected line with
//! the expected code (not merely rejected).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_conformance::{load_traces, require_spec};
use narad_core::checker::Checker;

/// Expected (line, code) for each published invalid trace.
const EXPECTED: &[(&str, usize, &str)] = &[
    ("graph-cursor-ahead.invalid.jsonl", 2, "graph_cursor_ahead"),
    (
        "graph-cursor-regress.invalid.jsonl",
        4,
        "graph_cursor_regress",
    ),
    (
        "graph-has-authority-fields.invalid.jsonl",
        2,
        "forbidden_field",
    ),
    ("graph-unknown-root.invalid.jsonl", 1, "graph_unknown_root"),
    (
        "progress-after-terminal.invalid.jsonl",
        3,
        "progress_run_invalid",
    ),
    ("progress-before-run.invalid.jsonl", 1, "run_not_started"),
    (
        "progress-interrupt-adjacency.invalid.jsonl",
        3,
        "interrupt_pause_adjacency",
    ),
    (
        "workflow-edge-missing-from.invalid.jsonl",
        2,
        "missing_field",
    ),
];

#[test]
fn published_traces_are_accepted_or_rejected_for_the_right_reason() {
    let Some(spec) = require_spec("published_traces") else {
        return;
    };
    let traces = load_traces(&spec.join("conformance")).unwrap();
    assert!(traces.len() >= 20, "expected the published traces");
    let mut checked = 0;
    for t in &traces {
        let mut c = Checker::default();
        let verdict = t
            .lines
            .iter()
            .find_map(|(line, bytes)| c.push_bytes(bytes).err().map(|e| (*line, e)));
        match (t.invalid, verdict) {
            (false, None) => {}
            (false, Some((line, e))) => panic!("{} rejected at line {line}: {e}", t.name),
            (true, None) => panic!("{} was accepted", t.name),
            (true, Some((line, e))) => {
                let (_, want_line, want_code) = EXPECTED
                    .iter()
                    .find(|(n, _, _)| *n == t.name)
                    .unwrap_or_else(|| {
                        panic!("no expectation for {} (rejected at {line}: {e})", t.name)
                    });
                assert_eq!((line, e.code), (*want_line, *want_code), "{}: {e}", t.name);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, traces.len());
    assert_eq!(
        traces.iter().filter(|t| t.invalid).count(),
        EXPECTED.len(),
        "every invalid trace has an expectation"
    );
}

/// The project's own traces: for each rule in `traces/expected.tsv`, the
/// `.jsonl` is accepted and the `.invalid.jsonl` is rejected at the listed
/// line with the listed code. Needs no published spec.
#[test]
fn project_traces_hold_one_accepted_and_one_rejected_case_per_rule() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let table = std::fs::read_to_string(dir.join("expected.tsv")).unwrap();
    let traces = load_traces(&dir).unwrap();
    let mut rules = 0;
    for row in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = row.split('\t').collect();
        let (name, line, code) = (cols[0], cols[1].parse::<usize>().unwrap(), cols[2]);
        for invalid in [false, true] {
            let file = format!("{name}{}.jsonl", if invalid { ".invalid" } else { "" });
            let t = traces
                .iter()
                .find(|t| t.name == file)
                .unwrap_or_else(|| panic!("missing {file}"));
            let mut c = Checker::default();
            let verdict = t
                .lines
                .iter()
                .find_map(|(l, b)| c.push_bytes(b).err().map(|e| (*l, e)));
            match (invalid, verdict) {
                (false, None) => {}
                (false, Some((l, e))) => panic!("{file} rejected at line {l}: {e}"),
                (true, None) => panic!("{file} was accepted"),
                (true, Some((l, e))) => assert_eq!((l, e.code), (line, code), "{file}: {e}"),
            }
        }
        rules += 1;
    }
    assert_eq!(
        traces.len(),
        2 * rules,
        "every trace file is listed in expected.tsv"
    );
}
