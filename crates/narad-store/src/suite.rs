//! The one backend-agnostic store suite. Every backend's tests call
//! [`store_suite!`](crate::store_suite) with a function that opens a store at a
//! path; each case below then runs against that backend on real files.
//!
//! ```text
//! narad_store::store_suite!(|path| narad_store_redb::RedbStore::open(path));
//! ```
//!
//! Cases: head-guarded atomic batches, contiguity of all three ordering
//! domains, idempotent redelivery, conditional side records, session, run
//! and workflow paging, eight racing writers, a hundred concurrent sessions,
//! byte-identical history after reopen, and 20 SIGKILLs of a real writer
//! process with nothing acknowledged lost.

// Test-support code: a panic here is a test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use narad_core::{Parsed, Record, Validator};
use serde_json::json;

use crate::{Batch, Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};

/// A run-tree event of `session` at `seq` (session and run-tree sequence equal).
pub fn event(session: &str, seq: u64, tag: &str) -> StoredEvent {
    event_at(session, seq, seq, tag)
}

/// A run-tree event at session position `seq` and run-tree position `rseq`.
fn event_at(session: &str, seq: u64, rseq: u64, tag: &str) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": "tool.call.started", "protocolVersion": "narad/v1",
        "eventId": format!("{session}-e{seq}-{tag}"), "timestamp": "2026-08-05T00:00:00Z",
        "sessionId": session, "sessionSequence": seq, "rootRunId": "r", "runId": "r",
        "sequence": rseq, "toolCallId": format!("t{seq}"), "toolName": "x", "executor": "backend", "args": {"tag": tag}
    }))
    .unwrap();
    stored(&bytes)
}

/// Parses authority bytes into what the store is given.
fn stored(bytes: &[u8]) -> StoredEvent {
    match Validator::default().parse(bytes).unwrap() {
        Parsed::Record {
            record: Record::Authority(ev),
            ..
        } => StoredEvent::from(&ev),
        other => panic!("{other:?}"),
    }
}

pub fn batch(session: &str, head: u64, events: Vec<StoredEvent>) -> Batch {
    Batch {
        session_id: session.into(),
        expected_head: head,
        events,
        side: Vec::new(),
    }
}

/// Suite case `history_is_the_exact_bytes_and_survives_reopen`.
pub async fn history_is_the_exact_bytes_and_survives_reopen<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs: Vec<_> = (1..=5).map(|i| event("s", i, "a")).collect();
    let out = s.append(batch("s", 0, evs.clone())).await.unwrap();
    assert_eq!(
        (out.head, out.positions, out.redelivered),
        (5, vec![1, 2, 3, 4, 5], false)
    );
    let page = s.read_session("s", 0, 3).await.unwrap();
    assert_eq!(page.events, evs[..3]);
    assert_eq!(page.next, Some(3));
    let rest = s.read_session("s", 3, 10).await.unwrap();
    assert_eq!((rest.events, rest.next), (evs[3..].to_vec(), None));
    let run = s.read_run("s", "r", 1, 10).await.unwrap();
    assert_eq!(run.events, evs[1..]);
    drop(s);
    let again = open(dir.join("store")).await.unwrap();
    assert_eq!(again.read_session("s", 0, 100).await.unwrap().events, evs);
    assert_eq!(again.head("s").await.unwrap(), 5);
    assert_eq!(
        again.list_sessions(None, 10).await.unwrap(),
        vec!["s".to_owned()]
    );
}

/// Suite case `a_stale_head_conflicts_and_writes_nothing`.
pub async fn a_stale_head_conflicts_and_writes_nothing<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    s.append(batch("s", 0, vec![event("s", 1, "a")]))
        .await
        .unwrap();
    let err = s
        .append(batch("s", 0, vec![event("s", 2, "b")]))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::HeadConflict {
            expected: 0,
            current: 1
        }
    );
    assert_eq!(s.read_session("s", 0, 10).await.unwrap().events.len(), 1);
}

/// Suite case `redelivery_is_idempotent_and_changed_bytes_conflict`.
pub async fn redelivery_is_idempotent_and_changed_bytes_conflict<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs = vec![event("s", 1, "a"), event("s", 2, "a")];
    s.append(batch("s", 0, evs.clone())).await.unwrap();
    // The retry of an append whose outcome was unknown carries the old head.
    let again = s.append(batch("s", 0, evs.clone())).await.unwrap();
    assert_eq!(
        (again.redelivered, again.positions, again.head),
        (true, vec![1, 2], 2)
    );
    let mut changed = evs[1].clone();
    changed.bytes = bytes::Bytes::from(
        String::from_utf8(changed.bytes.to_vec())
            .unwrap()
            .replace("\"a\"}", "\"z\"}"),
    );
    assert_ne!(changed.bytes, evs[1].bytes);
    let err = s.append(batch("s", 2, vec![changed])).await.unwrap_err();
    assert_eq!(err.code(), "duplicate_event_conflict");
    assert_eq!(s.read_session("s", 0, 10).await.unwrap().events, evs);
}

/// Suite case `a_batch_with_one_bad_event_is_refused_whole`.
pub async fn a_batch_with_one_bad_event_is_refused_whole<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let mut bad = event("s", 3, "a");
    bad.position.run = Some(("r".into(), 7)); // run-tree sequence gap
    let err = s
        .append(batch(
            "s",
            0,
            vec![event("s", 1, "a"), event("s", 2, "a"), bad],
        ))
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::Contiguity { domain: "sequence" });
    let gap = s
        .append(batch("s", 0, vec![event("s", 1, "a"), event("s", 3, "a")]))
        .await
        .unwrap_err();
    assert_eq!(
        gap,
        StoreError::Contiguity {
            domain: "sessionSequence"
        }
    );
    assert_eq!(s.head("s").await.unwrap(), 0);
    assert!(s.read_session("s", 0, 10).await.unwrap().events.is_empty());
    assert!(s.list_sessions(None, 10).await.unwrap().is_empty());
}

/// Suite case `side_writes_are_conditional_and_atomic_with_events`.
pub async fn side_writes_are_conditional_and_atomic_with_events<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let accept = |v: &'static str| SideWrite {
        space: SideSpace::Token,
        key: "tok-1".into(),
        expect: Expect::Absent,
        value: Some(bytes::Bytes::from_static(v.as_bytes())),
    };
    let mut b = batch("s", 0, vec![event("s", 1, "a")]);
    b.side.push(accept("first"));
    s.append(b).await.unwrap();
    let mut b = batch("s", 1, vec![event("s", 2, "a")]);
    b.side.push(accept("second"));
    assert_eq!(s.append(b).await.unwrap_err(), StoreError::SideConflict);
    // The event of the refused batch was not written either.
    assert_eq!(s.head("s").await.unwrap(), 1);
    assert_eq!(
        s.side(SideSpace::Token, "tok-1").await.unwrap().as_deref(),
        Some(b"first".as_slice())
    );
}

/// Suite case `eight_racing_writers_leave_no_gap_and_no_duplicate`.
pub async fn eight_racing_writers_leave_no_gap_and_no_duplicate<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let s = Arc::new(s);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            let (mut won, mut lost) = (0, 0);
            while won < 10 {
                let head = s.head("race").await.unwrap();
                let ev = event("race", head + 1, &format!("w{w}"));
                match s.append(batch("race", head, vec![ev])).await {
                    Ok(_) => won += 1,
                    Err(StoreError::HeadConflict { .. }) => lost += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            lost
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let all = s.read_session("race", 0, 1000).await.unwrap().events;
    assert_eq!(all.len(), 80);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.position.session_sequence, i as u64 + 1);
    }
    let ids: std::collections::BTreeSet<_> = all.iter().map(|e| &e.event_id).collect();
    assert_eq!(ids.len(), 80);
    // How often writers collide depends on the schedule; every collision
    // was a typed conflict (anything else panicked above).
    let _ = conflicts;
    // Eight writers appending at the same head: exactly one wins.
    let duel: Vec<_> = (0..8)
        .map(|w| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                s.append(batch("duel", 0, vec![event("duel", 1, &format!("w{w}"))]))
                    .await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in duel {
        outcomes.push(t.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    assert!(outcomes.iter().filter_map(|o| o.as_ref().err()).all(|e| *e
        == StoreError::HeadConflict {
            expected: 0,
            current: 1
        }));
    assert_eq!(s.read_session("duel", 0, 10).await.unwrap().events.len(), 1);
}

/// Suite case `a_hundred_sessions_append_concurrently`.
pub async fn a_hundred_sessions_append_concurrently<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let s = Arc::new(s);
    let tasks: Vec<_> = (0..100)
        .map(|n| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let sid = format!("s{n:03}");
                for i in 1..=5 {
                    s.append(batch(&sid, i - 1, vec![event(&sid, i, "a")]))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let sessions = s.list_sessions(None, 1000).await.unwrap();
    assert_eq!(sessions.len(), 100);
    let page = s.list_sessions(Some("s049"), 10).await.unwrap();
    assert_eq!(page.first().map(String::as_str), Some("s050"));
    for sid in sessions {
        assert_eq!(s.head(&sid).await.unwrap(), 5);
    }
}

fn workflow_event(seq: u64, wseq: u64, ty: &str) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": ty, "protocolVersion": "narad/v1", "eventId": format!("w{seq}"),
        "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": seq,
        "workflowId": "wf", "workflowSequence": wseq
    }))
    .unwrap();
    stored(&bytes)
}

/// Suite case `workflow_history_pages_by_workflow_sequence`.
pub async fn workflow_history_pages_by_workflow_sequence<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs = vec![
        workflow_event(1, 1, "workflow.started"),
        event_at("s", 2, 1, "a"),
        workflow_event(3, 2, "workflow.finished"),
    ];
    let mut skewed = evs.clone();
    skewed[2].position.workflow = Some(("wf".into(), 3));
    assert_eq!(
        s.append(batch("s", 0, skewed)).await.unwrap_err(),
        StoreError::Contiguity {
            domain: "workflowSequence"
        }
    );
    s.append(batch("s", 0, evs.clone())).await.unwrap();
    let first = s.read_workflow("s", "wf", 0, 1).await.unwrap();
    assert_eq!((first.events, first.next), (vec![evs[0].clone()], Some(1)));
    let rest = s.read_workflow("s", "wf", 1, 10).await.unwrap();
    assert_eq!((rest.events, rest.next), (vec![evs[2].clone()], None));
}

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

/// Instantiates every case of [`crate::suite`] as a `#[tokio::test]` for one
/// backend. `$open` is `Fn(PathBuf) -> impl Future<Output = Result<S, StoreError>>`.
/// The calling test crate needs `tokio` (macros, rt-multi-thread) and
/// `tempfile` as dev-dependencies.
#[macro_export]
macro_rules! store_suite {
    ($open:expr) => {
        $crate::store_suite!(@cases $open; history_is_the_exact_bytes_and_survives_reopen, a_stale_head_conflicts_and_writes_nothing, redelivery_is_idempotent_and_changed_bytes_conflict, a_batch_with_one_bad_event_is_refused_whole, side_writes_are_conditional_and_atomic_with_events, eight_racing_writers_leave_no_gap_and_no_duplicate, a_hundred_sessions_append_concurrently, workflow_history_pages_by_workflow_sequence);
    };
    (@cases $open:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                if ::std::env::var_os($crate::suite::CRASH_CHILD_ENV).is_some() {
                    return;
                }
                let dir = ::tempfile::tempdir().unwrap();
                $crate::suite::$name(dir.path(), $open).await;
            }
        )*

        /// Crash-test writer: does work only as the child of
        /// `sigkill_loses_no_acknowledged_event`, which starts it.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn crash_writer_process() {
            if let Some(p) = ::std::env::var_os($crate::suite::CRASH_CHILD_ENV) {
                $crate::suite::crash_writer(::std::path::PathBuf::from(p), $open).await;
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sigkill_loses_no_acknowledged_event() {
            if ::std::env::var_os($crate::suite::CRASH_CHILD_ENV).is_some() {
                return;
            }
            let dir = ::tempfile::tempdir().unwrap();
            $crate::suite::sigkill_loses_no_acknowledged_event(dir.path(), $open, "crash_writer_process").await;
        }
    };
}
