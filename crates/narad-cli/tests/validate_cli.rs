//! `narad validate` as a real process: output lines and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use std::path::PathBuf;
use std::process::Command;

fn narad(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_narad"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

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
    assert!(out.contains("error: cannot read"), "{out}");
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
    // With the workflow profile inactive, every workflow event is ignored.
    assert_eq!(
        narad(&["validate", "--profiles", "narad.progress/v1", &wf]).0,
        0
    );
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
