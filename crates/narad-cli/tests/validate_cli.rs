//! `narad validate` as a real process: output lines and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

mod common;

use common::narad;

use std::path::PathBuf;

fn traces() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/traces")
}

fn path(name: &str) -> String {
    traces().join(name).display().to_string()
}

#[test]
fn accepted_files_print_ok_with_their_record_count_and_exit_0() {
    let f = path("tool-after-stop.jsonl");
    let (code, out, _) = narad(&["validate", &f]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("{f}: ok (3 records)\n"));
}

#[test]
fn a_rejected_file_prints_line_and_code_and_exits_1() {
    let ok = path("tool-after-stop.jsonl");
    let bad = path("tool-after-stop.invalid.jsonl");
    let (code, out, _) = narad(&["validate", &ok, &bad]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[1].starts_with(&format!("{bad}: rejected at line 3: run_stop_requested: ")),
        "{out}"
    );
}

#[test]
fn unreadable_files_and_bad_usage_exit_2() {
    let (code, out, _) = narad(&["validate", "/nonexistent/trace.jsonl"]);
    assert_eq!(code, 2);
    assert_eq!(
        out,
        "/nonexistent/trace.jsonl: error: cannot read: no such file\n"
    );
    assert_eq!(narad(&["validate"]).0, 2);
    assert_eq!(
        narad(&[
            "validate",
            "--profiles",
            "narad.bogus/v1",
            &path("run-started-twice.jsonl")
        ])
        .0,
        2
    );
}

#[test]
fn events_of_inactive_profiles_are_ignored() {
    // A profile list is accepted; core events are checked whatever is listed.
    let f = path("watch-revision-regress.jsonl");
    assert_eq!(
        narad(&["validate", "--profiles", "narad.progress/v1", &f]).0,
        0
    );
    let wf = path("workflow-sequence-gap.invalid.jsonl");
    assert_eq!(narad(&["validate", &wf]).0, 1);
    // With the workflow profile inactive its events are ignored, but their
    // workflowSequence is an ordering domain core run events share (§4.2):
    // a gap in it is still refused.
    let (code, out, _) = narad(&["validate", "--profiles", "narad.progress/v1", &wf]);
    assert_eq!(code, 1);
    assert!(out.contains("workflow_sequence_gap"), "{out}");
}

#[test]
fn an_ignored_event_still_takes_its_place_in_every_ordering() {
    let ev = |seq: u64, ty: &str, body: &str| {
        format!(
            r#"{{"type":"{ty}","protocolVersion":"narad/v1","eventId":"e{seq}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{seq},"rootRunId":"r","runId":"r","sequence":{seq}{body}}}"#
        )
    };
    let progress = r#","progressId":"p","category":"phase","label":"Searching","status":"active","privacy":"public""#;
    let journal = [
        ev(1, "run.started", ""),
        ev(2, "progress.recorded", progress),
        ev(3, "run.finished", ""),
    ]
    .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("progress-in-the-middle.jsonl");
    std::fs::write(&f, journal + "\n").unwrap();
    let f = f.display().to_string();
    for profiles in ["narad.graph/v1", "narad.progress/v1", "all"] {
        let (code, out, err) = narad(&["validate", "--profiles", profiles, &f]);
        assert_eq!(
            (code, out),
            (0, format!("{f}: ok (3 records)\n")),
            "{profiles}: {err}"
        );
    }
}

#[test]
fn every_published_trace_gets_its_expected_verdict() {
    let Some(spec) = narad_conformance::require_spec("narad validate over published traces") else {
        return;
    };
    let dir = spec.join("conformance");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let (code, out, err) = narad(&["validate", &p.display().to_string()]);
        let want = if name.ends_with(".invalid.jsonl") {
            1
        } else {
            0
        };
        assert_eq!(code, want, "{name}: {out}{err}");
    }
}

/// Lines that are not a record say why, by code, each code once: a UTF-8
/// byte order mark (a file some Windows editors save), nesting past what
/// any record may hold, bytes that are not JSON. `import` says the same
/// rather than that the session is missing.
#[test]
fn a_line_that_is_not_json_says_why_in_validate_and_import() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let record = br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;
    let bom = write(
        "bom.jsonl",
        &[b"\xEF\xBB\xBF".as_slice(), record, b"\n"].concat(),
    );
    let deep = write(
        "deep.jsonl",
        format!("{}1{}\n", r#"{"a":"#.repeat(300), "}".repeat(300)).as_bytes(),
    );
    let nul = write("nul.jsonl", &[0u8; 64]);
    let store = format!("sqlite:{}", dir.path().join("s.sqlite").display());
    for (file, code, says) in [
        (&bom, "invalid_json", "byte order mark"),
        (&deep, "nesting_too_deep", "nesting deeper than 64"),
        (&nul, "invalid_json", "not one JSON value"),
    ] {
        let (exit, out, _) = narad(&["validate", file]);
        assert_eq!(exit, 1, "{out}");
        assert!(
            out.starts_with(&format!("{file}: rejected at line 1: {code}: ")),
            "{out}"
        );
        assert!(
            out.contains(says) && out.matches(code).count() == 1,
            "{out}"
        );
        let (exit, _, err) = narad(&["import", "--store", &store, file]);
        assert_eq!(exit, 1, "{err}");
        assert!(
            err.contains(&format!("line 1: {code}: ")) && err.contains(says),
            "{err}"
        );
        assert_eq!(err.matches(code).count(), 1, "{err}");
    }
}
