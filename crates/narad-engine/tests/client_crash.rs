//! The client crash test: a real executor process (this test binary re-run
//! as a child) is killed with SIGKILL between recording acceptance and the
//! side effect, between the side effect and the finish, and at timed
//! moments — at least 20 kills. Each restart gets every unfinished
//! execution again (duplicate delivery). No side effect ever runs twice
//! (they are counted in a file) and every call ends with exactly one
//! `tool.call.finished`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{assert_valid, journal, me, session};
use narad_engine::executor::{ClientExecutor, Handled};
use narad_engine::{AllowAll, Engine, EngineConfig, ManualClock, RandomIds, StartRun};
use narad_store_redb::RedbStore;
use serde_json::Value;

const CHILD: &str = "NARAD_CLIENT_CHILD";
const DIE: &str = "NARAD_CLIENT_DIE";

fn kill_self() -> ! {
    let pid = std::process::id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status();
    std::thread::sleep(Duration::from_secs(60));
    std::process::exit(3)
}

/// Child side: executes what arrives on stdin, prints finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_child_process() {
    let Some(dir) = std::env::var_os(CHILD).map(PathBuf::from) else {
        return;
    };
    // `before:ID` dies after acceptance, before the effect; `after:ID` after
    // the effect, before the finish is recorded; `hang` waits to be killed.
    let die = std::env::var(DIE).unwrap_or_default();
    let exec = ClientExecutor::new(
        RedbStore::open(dir.join("ledger.redb")).await.unwrap(),
        "worker",
    );
    let effects = dir.join("effects.log");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let msg: Value = serde_json::from_str(&line).unwrap();
        let id = msg["toolCallId"].as_str().unwrap_or_default().to_owned();
        let (die, effects) = (die.clone(), effects.clone());
        let handled = exec
            .handle(line.as_bytes(), move |_name, _args| async move {
                if die == format!("before:{id}") {
                    kill_self();
                }
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&effects)
                    .unwrap();
                writeln!(f, "{id}").unwrap();
                f.sync_all().unwrap();
                if die == format!("after:{id}") {
                    kill_self();
                }
                ("success", serde_json::json!({"done": id}))
            })
            .await
            .unwrap();
        match handled {
            Handled::Finish(b) => writeln!(out, "finish {}", String::from_utf8_lossy(&b)).unwrap(),
            Handled::AcceptedBefore => writeln!(out, "accepted-before").unwrap(),
            other => writeln!(out, "other {other:?}").unwrap(),
        }
        out.flush().unwrap();
    }
    if die == "hang" {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Runs one child over `executes`; returns its finish lines and whether it
/// died by a signal.
fn run_child(
    dir: &Path,
    executes: &[Vec<u8>],
    die: &str,
    kill_after: Option<Duration>,
) -> (Vec<String>, bool) {
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "client_child_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, dir)
        .env(DIE, die)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for e in executes {
            stdin.write_all(e).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
    }
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("finish ").map(str::to_owned))
            .collect::<Vec<_>>()
    });
    if let Some(d) = kill_after {
        std::thread::sleep(d);
        let _ = child.kill(); // SIGKILL
    }
    let status = child.wait().unwrap();
    let finishes = reader.join().unwrap();
    use std::os::unix::process::ExitStatusExt;
    (finishes, status.signal() == Some(9))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_executors_never_repeat_a_side_effect() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    let e = Engine::with_host(
        RedbStore::open(dir.path().join("host.redb")).await.unwrap(),
        clock.clone(),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            lease_ttl: Duration::from_secs(3600),
            token_ttl: Duration::from_secs(3600),
            ..EngineConfig::default()
        },
    );
    e.attach_client(&me(), "worker").await.unwrap();
    let sid = session(&e).await;
    let run = common::running_with(
        &e,
        &sid,
        StartRun {
            client_executor_id: Some("worker".into()),
            ..StartRun::default()
        },
    )
    .await;
    let outbox = e.client_outbox("worker");
    let mut unfinished: BTreeMap<String, Vec<u8>> = BTreeMap::new(); // token -> execute
    let mut calls = BTreeSet::new();
    let mut kills = 0;
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for round in 0..24 {
        let mut fresh = Vec::new();
        for _ in 0..2 {
            let t = e
                .start_client_tool_call(
                    &me(),
                    &sid,
                    &run,
                    "effect",
                    serde_json::json!({"round": round}),
                )
                .await
                .unwrap();
            calls.insert(t.clone());
            fresh.push(t);
        }
        while let Some(m) = outbox.try_next() {
            let v: Value = serde_json::from_slice(&m).unwrap();
            if v["type"] == "client.tool.execute" {
                unfinished.insert(v["executionToken"].as_str().unwrap().to_owned(), m.to_vec());
            }
        }
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let (die, kill_after) = match round % 3 {
            0 => (format!("before:{}", fresh[0]), None),
            1 => (format!("after:{}", fresh[1]), None),
            _ => (
                "hang".to_owned(),
                Some(Duration::from_micros((x >> 33) % 30_000)),
            ),
        };
        // Every unfinished execution, old ones again: duplicate delivery.
        let batch: Vec<Vec<u8>> = unfinished.values().cloned().collect();
        let (dir_path, die2) = (dir.path().to_owned(), die.clone());
        let (finishes, killed) =
            tokio::task::spawn_blocking(move || run_child(&dir_path, &batch, &die2, kill_after))
                .await
                .unwrap();
        kills += usize::from(killed);
        for f in finishes {
            e.client_finish(&me(), f.as_bytes()).await.unwrap();
            let v: Value = serde_json::from_str(&f).unwrap();
            unfinished.remove(v["executionToken"].as_str().unwrap());
        }
    }
    // One clean run: everything not accepted before finishes now.
    let batch: Vec<Vec<u8>> = unfinished.values().cloned().collect();
    let dir_path = dir.path().to_owned();
    let (finishes, _) = tokio::task::spawn_blocking(move || run_child(&dir_path, &batch, "", None))
        .await
        .unwrap();
    for f in finishes {
        e.client_finish(&me(), f.as_bytes()).await.unwrap();
    }
    // Calls accepted by a process that died are never re-run: they expire.
    clock.advance(Duration::from_secs(3601));
    e.attach_client(&me(), "worker").await.unwrap();
    let report = e.client_tick(&me()).await.unwrap();

    assert!(kills >= 20, "only {kills} kills");
    let effects = std::fs::read_to_string(dir.path().join("effects.log")).unwrap_or_default();
    let mut seen = BTreeSet::new();
    for id in effects.lines() {
        assert!(seen.insert(id.to_owned()), "side effect of {id} ran twice");
    }
    let mut finished: BTreeMap<String, usize> = BTreeMap::new();
    for b in journal(&e, &sid).await {
        let v: Value = serde_json::from_slice(&b).unwrap();
        if v["type"] == "tool.call.finished" {
            *finished
                .entry(v["toolCallId"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    for c in &calls {
        assert_eq!(
            finished.get(c),
            Some(&1),
            "{c} finished {:?} times",
            finished.get(c)
        );
    }
    assert_valid(&e, &sid).await;
    let _ = writeln!(
        std::io::stderr(),
        "client crash test: {kills} SIGKILLs, {} calls, {} side effects, {} expired after a crash mid-call",
        calls.len(),
        seen.len(),
        report.expired_calls.len()
    );
}
