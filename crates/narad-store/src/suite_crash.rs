//! The store suite's crash case: a real writer process killed twenty times
//! with SIGKILL, after which every acknowledged event must be intact.

// Test-support code: a panic here is a test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};

use crate::suite::{batch, event};
use crate::{Store, StoreError};

/// Environment variable that turns a test binary into a crash-test writer.
pub const CRASH_CHILD_ENV: &str = "NARAD_STORE_CRASH_CHILD";

const CRASH_BATCH: u64 = 5;

/// Child side of the crash test: appends batches of five to session
/// `crash` forever, printing `ack HEAD` after each acknowledged append.
pub async fn crash_writer<S, F, Fut>(path: PathBuf, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    use std::io::Write;
    let s = open(path).await.unwrap();
    let mut out = std::io::stdout().lock();
    for _ in 0..1_000_000 {
        let head = s.head("crash").await.unwrap();
        let evs = (head + 1..=head + CRASH_BATCH)
            .map(|q| event("crash", q, "c"))
            .collect();
        let done = s.append(batch("crash", head, evs)).await.unwrap();
        writeln!(out, "ack {}", done.head).unwrap();
        out.flush().unwrap();
    }
}

/// Runs one writer child, kills it with SIGKILL a pseudo-random moment after
/// its first acknowledgement, and returns the last head it acknowledged.
fn run_and_kill(exe: &Path, child_test: &str, path: &Path, delay_us: u64) -> u64 {
    use std::io::BufRead;
    let mut child = std::process::Command::new(exe)
        .args(["--exact", child_test, "--nocapture", "--test-threads", "1"])
        .env(CRASH_CHILD_ENV, path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut acked = 0;
    // Wait for the first acknowledgement so the kill lands mid-work.
    for line in lines.by_ref() {
        if let Some(h) = line.unwrap().strip_prefix("ack ") {
            acked = h.parse().unwrap();
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_micros(delay_us));
    child.kill().unwrap(); // SIGKILL on Unix
                           // Every line written before death is still in the pipe.
    for line in lines {
        let Ok(line) = line else { break };
        if let Some(h) = line.strip_prefix("ack ") {
            acked = h.parse().unwrap();
        }
    }
    child.wait().unwrap();
    acked
}

/// Parent side of the crash test: 20 SIGKILLs at pseudo-random moments;
/// after each, the reopened store holds every acknowledged event byte for
/// byte, no partial batch, and a contiguous journal. `child_test` is the
/// name of the test that calls [`crash_writer`] when [`CRASH_CHILD_ENV`] is set.
pub async fn sigkill_loses_no_acknowledged_event<S, F, Fut>(dir: &Path, open: F, child_test: &str)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let path = dir.join("store");
    drop(open(path.clone()).await.unwrap());
    let exe = std::env::current_exe().unwrap();
    // Kill moments from a fixed LCG: reproducible, yet spread over 0-20 ms.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut last_head = 0;
    for kill in 0..20 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let delay_us = (x >> 33) % 20_000;
        let (e, c, p) = (exe.clone(), child_test.to_owned(), path.clone());
        let acked = tokio::task::spawn_blocking(move || run_and_kill(&e, &c, &p, delay_us))
            .await
            .unwrap();
        let s = open(path.clone()).await.unwrap();
        let head = s.head("crash").await.unwrap();
        let ctx = format!("kill {kill} after {delay_us} us: acked {acked}, head {head}");
        assert!(
            acked > 0,
            "the writer acknowledged nothing before the kill: {ctx}"
        );
        assert!(head >= acked, "lost acknowledged events: {ctx}");
        assert_eq!(head % CRASH_BATCH, 0, "partial batch: {ctx}");
        let all = s.read_session("crash", 0, usize::MAX).await.unwrap().events;
        assert_eq!(all.len() as u64, head, "journal length: {ctx}");
        for (i, got) in all.iter().enumerate() {
            let want = event("crash", i as u64 + 1, "c");
            assert_eq!(got.bytes, want.bytes, "event {} differs: {ctx}", i + 1);
        }
        last_head = head;
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "crash test: 20 SIGKILLs, {last_head} events survived, all acknowledged ones intact"
    );
}
