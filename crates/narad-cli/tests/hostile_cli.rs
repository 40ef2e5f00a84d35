//! Issue 13, the CLI's findings, as real processes on generated hostile
//! files. Every child runs under `prlimit --as` (1 GiB) and every child's
//! peak RSS, read with `getrusage(RUSAGE_CHILDREN)`, must stay under
//! 64 MiB (`common::RSS_LIMIT_KIB`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs::File;
use std::process::Stdio;

use common::{assert_children_rss_bounded, bounded, run, write_long_line, write_sessions};

fn url(dir: &tempfile::TempDir, name: &str) -> String {
    format!("sqlite:{}", dir.path().join(name).display())
}

fn no_panic(err: &str) {
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("RUST_BACKTRACE"), "{err}");
}

/// Finding 1: a 200 MB line is refused by `validate` and `import` before
/// anything is allocated in proportion to it.
#[test]
fn a_200_mb_line_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.jsonl");
    write_long_line(&file, 200_000_000);
    let f = file.display().to_string();
    let (code, out, err) = run(bounded(&["validate", &f]));
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        out,
        format!(
            "{f}: rejected at line 2: record_too_large: record larger than 512000 bytes (§5)\n"
        )
    );
    let store = url(&dir, "s.sqlite");
    let (code, out, err) = run(bounded(&["import", "--store", &store, &f]));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(
        err,
        format!("narad: {f} line 2: record_too_large: record larger than 512000 bytes; nothing imported\n")
    );
    // Nothing of the file was imported.
    let (_, out, _) = run(bounded(&["verify", "--store", &store]));
    assert_eq!(out, "0 sessions: 0 valid, 0 refused, 0 damaged\n");
    assert_children_rss_bounded("200 MB line");
}

/// Finding 2: `validate` and `import` stream. 2,000 records of 100 KB each
/// (200 MB): reading the file whole would break the RSS bound.
#[test]
fn validate_and_import_stream_a_200_mb_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.jsonl");
    write_sessions(&file, 20, 100, 100_000);
    let f = file.display().to_string();
    let (code, out, err) = run(bounded(&["validate", &f]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, format!("{f}: ok (2000 records)\n"));
    let store = url(&dir, "s.sqlite");
    let (code, out, err) = run(bounded(&["import", "--store", &store, &f]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches(": imported 100 events").count(), 20, "{out}");
    let (code, out, _) = run(bounded(&["verify", "--store", &store]));
    assert_eq!(
        (code, out.as_str()),
        (0, "20 sessions: 20 valid, 0 refused, 0 damaged\n")
    );
    assert_children_rss_bounded("200 MB file");
}

/// Finding 3: 20,000 one-event sessions import (grouping is a hash map,
/// not a linear search) and all verify.
#[test]
fn import_of_20k_one_event_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sessions.jsonl");
    write_sessions(&file, 20_000, 1, 0);
    let store = url(&dir, "s.sqlite");
    let (code, out, err) = run(bounded(&[
        "import",
        "--store",
        &store,
        &file.display().to_string(),
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches(": imported 1 events\n").count(), 20_000);
    let (code, out, _) = run(bounded(&["verify", "--store", &store]));
    assert_eq!(
        (code, out.as_str()),
        (0, "20000 sessions: 20000 valid, 0 refused, 0 damaged\n")
    );
    assert_children_rss_bounded("20k sessions");
}

/// A store holding two sessions, and the file they came from.
fn small_store(dir: &tempfile::TempDir) -> (String, String) {
    let file = dir.path().join("two.jsonl");
    write_sessions(&file, 2, 4, 0);
    let f = file.display().to_string();
    let store = url(dir, "small.sqlite");
    assert_eq!(run(bounded(&["import", "--store", &store, &f])).0, 0);
    (store, f)
}

fn every_command<'a>(store: &'a str, file: &'a str) -> Vec<Vec<&'a str>> {
    vec![
        vec!["sessions", "--store", store],
        vec!["show", "--store", store, "--session", "s0"],
        vec!["verify", "--store", store],
        vec!["export", "--store", store, "--all"],
        vec!["import", "--store", store, file],
        vec!["validate", file],
        vec!["bench", "replay", "--store", store],
    ]
}

/// Finding 5: a closed pipe ends every command quietly with status 2.
#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (store, file) = small_store(&dir);
    for args in every_command(&store, &file) {
        // The reader is closed before the child starts, so its first write
        // fails however soon it comes. (Closing it after the spawn raced:
        // under load the child could finish writing into the pipe's buffer
        // first and exit 0.) Alone: no other test's starting child may hold
        // a copy of the reader between its fork and exec.
        let out = common::alone(|| {
            let (reader, writer) = nix::unistd::pipe().unwrap();
            drop(reader);
            bounded(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::from(writer))
                .stderr(Stdio::piped())
                .output()
                .unwrap()
        });
        let err = String::from_utf8_lossy(&out.stderr);
        no_panic(&err);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
    assert_children_rss_bounded("closed pipe");
}

/// Finding 5: a full disk is one typed line and status 2, never a panic.
#[test]
fn a_full_disk_is_one_typed_line() {
    let dir = tempfile::tempdir().unwrap();
    let (store, file) = small_store(&dir);
    let mut commands = every_command(&store, &file);
    let empty = url(&dir, "bench.sqlite");
    commands.push(vec!["bench", "engine", "--store", &empty]);
    for args in commands {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let (code, _, err) = run({
            let mut c = bounded(&args);
            c.stdout(full);
            c
        });
        no_panic(&err);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("narad: write_failed: cannot write the output: "),
            "{args:?}: {err}"
        );
    }
    assert_children_rss_bounded("full disk");
}

/// Finding 10: the writing benchmarks refuse a store with sessions (which
/// still verifies after), and a missing TMPDIR is a typed error.
#[test]
fn bench_refuses_user_data_and_a_missing_tmpdir() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = small_store(&dir);
    let (_, before, _) = run(bounded(&["export", "--all", "--store", &store]));
    for which in ["append", "engine"] {
        let (code, out, err) = run(bounded(&["bench", which, "--store", &store]));
        no_panic(&err);
        assert_eq!((code, out.as_str()), (1, ""), "{which}: {err}");
        assert_eq!(
            err,
            "narad: bench_store_not_empty: the store holds sessions; a benchmark writes only to an empty store\n"
        );
    }
    let (code, out, _) = run(bounded(&["verify", "--store", &store]));
    assert_eq!(
        (code, out.as_str()),
        (0, "2 sessions: 2 valid, 0 refused, 0 damaged\n")
    );
    let (_, after, _) = run(bounded(&["export", "--all", "--store", &store]));
    assert_eq!(before, after);

    let empty = url(&dir, "empty.sqlite");
    let missing = dir.path().join("no-such-dir");
    let (code, _, err) = run({
        let mut c = bounded(&["bench", "append", "--store", &empty]);
        c.env("TMPDIR", &missing);
        c
    });
    no_panic(&err);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("narad: bench_scratch_failed: cannot write scratch data: "),
        "{err}"
    );
    assert_children_rss_bounded("bench");
}

/// Finding 11: two identical imports into one SQLite file at once both
/// succeed, and the store holds the journals once.
#[test]
fn two_concurrent_identical_imports_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("j.jsonl");
    // Long sessions cross batch boundaries (1,000 events) too.
    write_sessions(&file, 300, 8, 0);
    let mut long = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    for q in 1..=2_500 {
        use std::io::Write;
        writeln!(long, "{}", common::event("long", q, 0)).unwrap();
    }
    drop(long);
    let f = file.display().to_string();
    let store = url(&dir, "s.sqlite");
    for round in 0..3 {
        let spawn = || {
            common::spawn(
                bounded(&["import", "--store", &store, &f])
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
            )
        };
        let (a, b) = (spawn(), spawn());
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "round {round}: {stdout}{err}");
        }
        let (code, out, _) = run(bounded(&["verify", "--store", &store]));
        assert_eq!(
            (code, out.as_str()),
            (0, "301 sessions: 301 valid, 0 refused, 0 damaged\n")
        );
    }
    let (_, exported, _) = run(bounded(&["export", "--all", "--store", &store]));
    assert_eq!(exported.lines().count(), 300 * 8 + 2_500);
    assert_children_rss_bounded("concurrent imports");
}

/// Whether `c` would act on a terminal rather than show: C0 and C1
/// controls but the line break and the tab (the CLI's own separators),
/// and the bidirectional overrides and isolates.
fn acts_on_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A journal whose ids, tool name, interrupt title and message text carry
/// terminal escapes (ESC and C1 CSI sequences, a bell, a carriage return,
/// a right-to-left override, newlines that would forge report lines),
/// imported by the real binary: every command that prints them as text
/// prints them escaped, each on its one line.
#[test]
fn stored_text_cannot_drive_the_operators_terminal() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let (s, r) = ("s\u{1b}[31mRED\u{7}\nforged", "r\u{9b}2J");
    let (t, i) = ("t\u{202e}lave", "i\rx");
    let base = |seq: u64, ty: &str| {
        json!({"protocolVersion": "narad/v1", "eventId": format!("e{seq}"),
               "timestamp": "2026-08-05T00:00:00Z", "sessionId": s,
               "sessionSequence": seq, "type": ty})
    };
    let in_run = |seq: u64, ty: &str, n: u64| {
        let mut v = base(seq, ty);
        v["rootRunId"] = json!(r);
        v["runId"] = json!(r);
        v["sequence"] = json!(n);
        v
    };
    let mut message = base(1, "message.user.recorded");
    message["messageId"] = json!("m1");
    message["messageScope"] = json!("session");
    message["content"] = json!("hi \u{1b}[2J\nuser: forged\r\u{1b}]0;title\u{7}");
    let mut tool = in_run(3, "tool.call.started", 2);
    tool["toolCallId"] = json!(t);
    tool["toolName"] = json!("to\u{1b}[8mol");
    tool["executor"] = json!("backend");
    tool["args"] = json!({});
    let mut interrupt = in_run(4, "interrupt.requested", 3);
    interrupt["interruptId"] = json!(i);
    interrupt["waitId"] = json!("w\u{1b}c");
    interrupt["kind"] = json!("approval");
    interrupt["title"] = json!("ok?\u{1b}[1m");
    interrupt["actions"] = json!(["approve", "deny"]);
    let mut paused = in_run(5, "run.paused", 4);
    paused["waitId"] = json!("w\u{1b}c");
    paused["interruptId"] = json!(i);
    paused["reason"] = json!("interrupt");
    paused["resumeMode"] = json!("command");
    let events = [
        message,
        in_run(2, "run.started", 1),
        tool,
        interrupt,
        paused,
    ];
    let file = dir.path().join("hostile.jsonl");
    let lines: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let store = url(&dir, "h.sqlite");
    let f = file.display().to_string();

    let (code, out, err) = run(bounded(&["import", "-v", "--store", &store, &f]));
    assert_eq!(code, 0, "{out}{err}");
    let shown_s = "s\\u{1b}[31mRED\\u{7}\\nforged";
    assert!(
        out.contains(&format!("{shown_s}: imported 5 events")),
        "{out}"
    );
    let (code, shown, err) = run(bounded(&["show", "--store", &store, "--session", s]));
    assert_eq!(code, 0, "{err}");
    // session, active, run, tool call, interrupt, usage, "transcript:",
    // the message and its one continuation line.
    assert_eq!(shown.lines().count(), 9, "{shown}");
    assert!(
        shown.contains("\n  user: hi \\u{1b}[2J\n    user: forged\\r"),
        "{shown}"
    );
    for args in [
        vec!["show", "--store", &store, "--session", s],
        vec!["sessions", "--store", &store],
        vec!["interrupts", "--store", &store],
        vec!["import", "-v", "--store", &store, &f],
    ] {
        let (code, out, err) = run(bounded(&args));
        assert_eq!(code, 0, "{args:?}: {err}");
        let bad: Vec<char> = out.chars().filter(|c| acts_on_a_terminal(*c)).collect();
        assert!(bad.is_empty(), "{args:?} printed {bad:?}:\n{out}");
        assert!(out.contains(shown_s), "{args:?}: {out}");
    }
    assert_children_rss_bounded("show of a hostile journal");
}

/// A file that holds no store (another application's SQLite database, an
/// empty file): every command that reads a store answers that it is not
/// one, in one line, and the file is left byte for byte as it was. A read
/// command used to add this layout's tables to the other database and
/// switch it to WAL. `import` may create a store in an empty file, never
/// inside another database.
#[test]
fn a_file_that_holds_no_store_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let crm = dir.path().join("crm.db");
    rusqlite::Connection::open(&crm)
        .unwrap()
        .execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO customers (name) VALUES ('alice');",
        )
        .unwrap();
    let (empty_redb, empty_sqlite) = (dir.path().join("empty.redb"), dir.path().join("empty.db"));
    std::fs::write(&empty_redb, b"").unwrap();
    std::fs::write(&empty_sqlite, b"").unwrap();
    let lines = dir.path().join("one.jsonl");
    std::fs::write(&lines, common::event("s", 1, 0) + "\n").unwrap();
    let lines = lines.display().to_string();
    for (path, backend) in [
        (&crm, "sqlite"),
        (&empty_redb, "redb"),
        (&empty_sqlite, "sqlite"),
    ] {
        let before = std::fs::read(path).unwrap();
        let url = format!("{backend}:{}", path.display());
        let want = format!("narad: {} is not a {backend} store", path.display());
        for args in [
            vec!["sessions", "--store", &url],
            vec!["verify", "--store", &url],
            vec!["export", "--store", &url, "--all"],
            vec!["show", "--store", &url, "--session", "s"],
        ] {
            let (code, out, err) = run(bounded(&args));
            no_panic(&err);
            assert_eq!(
                (code, out.as_str(), err.trim()),
                (1, "", want.as_str()),
                "{args:?}"
            );
            assert_eq!(
                std::fs::read(path).unwrap(),
                before,
                "{args:?} wrote to {url}"
            );
        }
    }
    let url = format!("sqlite:{}", crm.display());
    let before = std::fs::read(&crm).unwrap();
    let (code, _, err) = run(bounded(&["import", "--store", &url, &lines]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("crm.db is not a sqlite store"), "{err}");
    assert_eq!(std::fs::read(&crm).unwrap(), before);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["crm.db", "empty.db", "empty.redb", "one.jsonl"],
        "no WAL file"
    );
    for (path, backend) in [(&empty_redb, "redb"), (&empty_sqlite, "sqlite")] {
        let url = format!("{backend}:{}", path.display());
        let (code, _, err) = run(bounded(&["import", "--store", &url, &lines]));
        assert_eq!(code, 0, "{err}");
        let (code, out, err) = run(bounded(&["sessions", "--store", &url]));
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("s\thead=1"), "{out}");
    }
    assert_children_rss_bounded("files that hold no store");
}

/// A refusal quotes the record it refuses (here an eventId): `validate`
/// and `import` print it escaped, as `verify` does, so a hostile file
/// cannot drive the operator's terminal through its refusal. Both printed
/// the raw escape sequence and bell.
#[test]
fn a_refusal_quotes_a_hostile_record_escaped() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let id = "e\u{1b}[31mRED\u{7}";
    let event = |seq: u64, at: &str| {
        json!({"type": "run.started", "protocolVersion": "narad/v1", "eventId": id,
               "timestamp": at, "sessionId": "s", "sessionSequence": seq,
               "rootRunId": "r", "runId": "r", "sequence": seq})
        .to_string()
    };
    // The same eventId with other data: `duplicate_event_conflict`.
    let file = dir.path().join("conflict.jsonl");
    let lines = [
        event(1, "2026-08-05T00:00:00Z"),
        event(2, "2026-08-05T00:00:01Z"),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let f = file.display().to_string();
    let store = url(&dir, "c.sqlite");
    for args in [vec!["validate", &f], vec!["import", "--store", &store, &f]] {
        let (code, out, err) = run(bounded(&args));
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        let both = format!("{out}{err}");
        let bad: Vec<char> = both.chars().filter(|c| acts_on_a_terminal(*c)).collect();
        assert!(bad.is_empty(), "{args:?} printed {bad:?}:\n{both}");
        assert!(
            both.contains("eventId e\\u{1b}[31mRED\\u{7} was delivered before"),
            "{both}"
        );
    }
    // An error line quotes what it was given escaped too.
    let (code, out, err) = run(bounded(&["show", "--store", &store, "--session", id]));
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(
        err,
        "narad: no session `e\\u{1b}[31mRED\\u{7}` in this store\n"
    );
}
