//! One long session through the read commands, as real processes under
//! the memory bound of `common` (`prlimit --as` 1 GiB, peak RSS 64 MiB):
//! `export`, `verify` and `show` read the journal a page at a time, so a
//! session larger than the bound is read, checked and shown whole.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs::File;
use std::io::{BufReader, Read};
use std::process::Stdio;

use common::{assert_children_rss_bounded, bounded, run, write_sessions};

fn url(dir: &tempfile::TempDir, name: &str) -> String {
    format!("sqlite:{}", dir.path().join(name).display())
}

fn redb_url(dir: &tempfile::TempDir, name: &str) -> String {
    format!("redb:{}", dir.path().join(name).display())
}

/// `narad show --json` of session `s0`, parsed (it must succeed).
fn show_json(store: &str) -> serde_json::Value {
    let (code, out, err) = run(bounded(&[
        "show",
        "--store",
        store,
        "--session",
        "s0",
        "--json",
    ]));
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Whether two files hold the same bytes, read a chunk at a time.
fn same_bytes(a: &std::path::Path, b: &std::path::Path) -> bool {
    let (mut a, mut b) = (
        BufReader::new(File::open(a).unwrap()),
        BufReader::new(File::open(b).unwrap()),
    );
    let (mut x, mut y) = (vec![0; 1 << 16], vec![0; 1 << 16]);
    loop {
        let n = a.read(&mut x).unwrap();
        let mut m = 0;
        while m < n {
            let k = b.read(&mut y[m..n]).unwrap();
            if k == 0 {
                return false;
            }
            m += k;
        }
        if n == 0 {
            return b.read(&mut y).unwrap() == 0;
        }
        if x[..n] != y[..n] {
            return false;
        }
    }
}

/// A 100 MB session (1,000 events of 100 KB, 500 runs): exported byte
/// for byte, verified and shown, each within the bound that reading the
/// journal whole would break.
#[test]
fn a_100_mb_session_is_exported_verified_and_shown_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    a_100_mb_session_round_trips(&dir, &url(&dir, "s.sqlite"));
    assert_children_rss_bounded("100 MB session, SQLite");
}

/// The same on redb, the embedded default, whose page cache would keep
/// every page a command touched (redb's default ceiling is 1 GiB): each
/// command caps it, so each stays within the bound too.
#[test]
fn a_100_mb_session_on_redb_is_imported_exported_verified_and_shown_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    a_100_mb_session_round_trips(&dir, &redb_url(&dir, "s.redb"));
    assert_children_rss_bounded("100 MB session, redb");
}

fn a_100_mb_session_round_trips(dir: &tempfile::TempDir, store: &str) {
    let file = dir.path().join("long.jsonl");
    write_sessions(&file, 1, 1000, 100_000);
    let f = file.display().to_string();
    let (code, out, err) = run(bounded(&["import", "--store", store, &f]));
    assert_eq!(
        (code, out.as_str()),
        (0, "s0: imported 1000 events\n"),
        "{err}"
    );

    let exported = dir.path().join("export.jsonl");
    let status = bounded(&["export", "--store", store, "--session", "s0"])
        .stdin(Stdio::null())
        .stdout(File::create(&exported).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        same_bytes(&file, &exported),
        "export differs from the import"
    );

    let (code, out, _) = run(bounded(&["verify", "--store", store]));
    assert_eq!(
        (code, out.as_str()),
        (0, "1 session: 1 valid, 0 refused, 0 damaged\n")
    );
    let (code, out, err) = run(bounded(&["show", "--store", store, "--session", "s0"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("session s0: 1000 events\n"), "{out:.200}");
    let v = show_json(store);
    assert_eq!(v["events"], 1000);
    assert_eq!(v["runs"].as_array().unwrap().len(), 500);
}

/// 20,000 top-level runs: `show` lists each once, in id order (the tree
/// is grouped once, not scanned per run).
#[test]
fn show_lists_twenty_thousand_runs_in_id_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runs.jsonl");
    write_sessions(&file, 1, 40_000, 0);
    let store = url(&dir, "s.sqlite");
    let f = file.display().to_string();
    let (code, _, err) = run(bounded(&["import", "--store", &store, &f]));
    assert_eq!(code, 0, "{err}");
    let v = show_json(&store);
    let ids: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut want: Vec<String> = (1..=20_000).map(|i| format!("r{i}")).collect();
    want.sort();
    assert_eq!(ids, want);
    assert!(v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["depth"] == 0 && r["terminal"]["type"] == "run.finished"));
    assert_children_rss_bounded("20k runs");
}
