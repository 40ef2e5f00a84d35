//! Running the real binary on generated files, under a memory bound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `narad ARGS`: exit code (-1 if killed), stdout and stderr.
pub fn narad(args: &[&str]) -> (i32, String, String) {
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

/// The path of the project's conformance trace `name`.
pub fn trace(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/traces")
        .join(name)
        .display()
        .to_string()
}

/// Address space a child may map (`prlimit --as`): far below what reading
/// a hostile file whole costs, far above what streaming it needs.
pub const AS_LIMIT: u64 = 1 << 30;
/// Peak resident set every child spawned by these tests must stay under.
pub const RSS_LIMIT_KIB: i64 = 64 * 1024;

/// `narad ARGS` under `prlimit --as=AS_LIMIT` (glibc malloc arenas capped,
/// so the address-space bound does not depend on the core count).
pub fn bounded(args: &[&str]) -> Command {
    let mut c = Command::new("prlimit");
    c.arg(format!("--as={AS_LIMIT}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_narad"))
        .args(args)
        .env("MALLOC_ARENA_MAX", "2");
    c
}

/// Held (shared) while a test of this process starts or runs a child, and
/// (exclusive) by a test whose child must be the only holder of its pipes.
/// Between fork and exec a starting child holds a copy of every open
/// descriptor, so a pipe whose reader a test closed can still have one
/// there, and a write the test expects to fail with EPIPE succeeds.
static SPAWNING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Starts `c` while no test holds [`SPAWNING`] alone.
pub fn spawn(c: &mut Command) -> std::process::Child {
    let _shared = SPAWNING.read().unwrap_or_else(|e| e.into_inner());
    c.spawn().unwrap()
}

/// Runs `f` while no other test of this process starts a child.
pub fn alone<T>(f: impl FnOnce() -> T) -> T {
    let _alone = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
    f()
}

/// Runs `c` to its end: `(exit code, stdout, stderr)`.
pub fn run(mut c: Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = {
        let _shared = SPAWNING.read().unwrap_or_else(|e| e.into_inner());
        c.stdin(Stdio::null()).output().unwrap()
    };
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// The largest peak RSS (KiB) of any child this test process has waited
/// for: `getrusage(RUSAGE_CHILDREN)`.
pub fn children_peak_rss_kib() -> i64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .unwrap()
        .max_rss()
}

/// Asserts every child so far stayed under [`RSS_LIMIT_KIB`].
pub fn assert_children_rss_bounded(what: &str) {
    assert_children_rss_under(what, RSS_LIMIT_KIB);
}

/// Asserts every child so far stayed under `limit` KiB of peak RSS.
pub fn assert_children_rss_under(what: &str, limit: i64) {
    let peak = children_peak_rss_kib();
    eprintln!("{what}: children's peak RSS so far {peak} KiB (bound {limit} KiB)");
    assert!(
        peak <= limit,
        "{what}: a child peaked at {peak} KiB RSS, over the bound of {limit} KiB"
    );
}

/// One authority event of `sid`, padded with `pad` bytes of JSON
/// whitespace (valid, cheap to check, large on disk).
pub fn event(sid: &str, seq: u64, pad: usize) -> String {
    let (root, k) = ((seq - 1) / 2 + 1, (seq - 1) % 2);
    let ty = if k == 0 {
        "run.started"
    } else {
        "run.finished"
    };
    format!(
        r#"{{"type":"{ty}",{}"protocolVersion":"narad/v1","eventId":"{sid}-e{seq}","timestamp":"2026-08-05T00:00:00Z","sessionId":"{sid}","sessionSequence":{seq},"rootRunId":"r{root}","runId":"r{root}","sequence":{}}}"#,
        " ".repeat(pad),
        k + 1
    )
}

/// Writes `sessions` sessions of `per` events each, one session after
/// another, streaming.
pub fn write_sessions(path: &Path, sessions: usize, per: u64, pad: usize) {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    for s in 0..sessions {
        for q in 1..=per {
            writeln!(w, "{}", event(&format!("s{s}"), q, pad)).unwrap();
        }
    }
    w.flush().unwrap();
}

/// Writes a valid line, then one line of `len` bytes, then a valid line,
/// streaming (the long line is never in memory).
pub fn write_long_line(path: &Path, len: usize) {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(w, "{}", event("s", 1, 0)).unwrap();
    let head = br#"{"type":"run.finished","pad":""#;
    w.write_all(head).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut left = len - head.len() - 2;
    while left > 0 {
        let n = left.min(chunk.len());
        w.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    w.write_all(b"\"}\n").unwrap();
    writeln!(w, "{}", event("s", 2, 0)).unwrap();
    w.flush().unwrap();
}
