//! Exactly once across processes: two real engine processes (this test
//! binary re-run as children) run the timer driver concurrently over one
//! SQLite file, and over one PostgreSQL schema, holding 90 due timers of
//! every kind (interrupt expiry, `retryAt`, token expiry, and the lease
//! expiry that pauses 30 runs). Every timer fires exactly once: one firing
//! event per deadline in the journals, one report of it across both
//! processes, an empty due index.
//!
//! `driver_process` does its work only when `NARAD_TIMERS_CHILD` names a
//! store, and is otherwise a no-op entry point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::me;
use narad_engine::{
    AllowAll, Clock, Engine, EngineConfig, Interrupt, InterruptScope, ManualClock, NewSession,
    RandomIds, StartRun, Started, TimerKind,
};
use narad_store::{SideSpace, Store};
use narad_store_postgres::PostgresStore;
use narad_store_sqlite::SqliteStore;
use serde_json::Value;

const T0: u64 = 1_780_000_000;
/// Sessions per kind of timer (interrupt expiry, automatic resume, client
/// token expiry; the one executor's lease expiry pauses the last kind).
const SESSIONS: usize = 30;
const CHILD: &str = "NARAD_TIMERS_CHILD";
/// A directory: each child marks itself ready there, then waits for `go`
/// to appear, so both fire at once.
const GATE: &str = "NARAD_TIMERS_GATE";

fn engine<S: Store + 'static>(store: S, after: Duration) -> Engine<S> {
    let clock = Arc::new(ManualClock::at_unix(T0));
    clock.advance(after);
    Engine::with_host(
        store,
        clock,
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig::default(),
    )
}

/// `sqlite:PATH` or `postgres:SCHEMA` (the server from the environment).
async fn run_child<S: Store + 'static>(store: S) {
    let e = engine(store, Duration::from_secs(400));
    if let Some(gate) = std::env::var_os(GATE).map(std::path::PathBuf::from) {
        std::fs::write(gate.join(format!("ready-{}", std::process::id())), b"").unwrap();
        while !gate.join("go").exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let mut fired = 0;
    loop {
        let report = e.fire_due_timers().await.unwrap();
        assert!(report.failed.is_empty(), "{report:?}");
        // An executor's lapse pauses runs in several sessions: it is
        // checked in the journals, not counted here.
        fired += report
            .fired
            .iter()
            .filter(|f| f.kind != TimerKind::Lease)
            .count();
        let left = e
            .store()
            .list_side(SideSpace::Timer, None, 1)
            .await
            .unwrap();
        if left.is_empty() {
            break;
        }
    }
    println!("FIRED {fired}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_process() {
    let Ok(target) = std::env::var(CHILD) else {
        return;
    };
    if let Some(path) = target.strip_prefix("sqlite:") {
        run_child(SqliteStore::open(path).await.unwrap()).await;
    } else if let Some(schema) = target.strip_prefix("postgres:") {
        let url = std::env::var("NARAD_TEST_POSTGRES_URL").unwrap();
        run_child(PostgresStore::open(&url, schema).await.unwrap()).await;
    }
}

/// Fills the store with `SESSIONS` interrupts and `SESSIONS` automatic
/// pauses due 60 s after `T0`, and `SESSIONS` client calls of executor
/// `w` (its lease expires at 45 s, their tokens at 300 s); answers the
/// sessions.
async fn fill<S: Store + 'static>(store: S) -> Vec<String> {
    let e = engine(store, Duration::ZERO);
    let clock = ManualClock::at_unix(T0);
    let due = clock.now() + Duration::from_secs(60);
    let mut sids = Vec::new();
    e.attach_client(&me(), "w").await.unwrap();
    for i in 0..3 * SESSIONS {
        let sid = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        let start = StartRun {
            client_executor_id: (i % 3 == 2).then(|| "w".to_owned()),
            ..StartRun::default()
        };
        let Started::Running(run) = e.start_run(&me(), &sid, start).await.unwrap() else {
            panic!("not started")
        };
        if i % 3 == 2 {
            e.start_client_tool_call(&me(), &sid, &run, "t", serde_json::json!({}))
                .await
                .unwrap();
        } else if i % 3 == 0 {
            let interrupt = Interrupt {
                scope: InterruptScope::Run(run),
                kind: "approval".into(),
                actions: vec!["approve".into()],
                input: None,
                expires_at: Some(due.into()),
                title: None,
            };
            e.request_interrupt(&me(), &sid, interrupt).await.unwrap();
        } else {
            e.pause_run_until(&me(), &sid, &run, "rate_limited", due)
                .await
                .unwrap();
        }
        sids.push(sid);
    }
    sids
}

/// Runs two driver processes on `target` and checks every timer fired once.
async fn two_drivers<S: Store + 'static>(target: &str, store: S, sids: &[String]) {
    let exe = std::env::current_exe().unwrap();
    let gate = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "driver_process",
                    "--test-threads",
                    "1",
                    "--nocapture",
                ])
                .env(CHILD, target)
                .env(GATE, gate.path())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Both children opened the store before either fires.
    while std::fs::read_dir(gate.path()).unwrap().count() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    std::fs::write(gate.path().join("go"), b"").unwrap();
    let mut reported = 0;
    let mut each = Vec::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "a driver process failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let n: usize = text
            .lines()
            .find_map(|l| l.split_once("FIRED ").map(|(_, n)| n))
            .and_then(|n| n.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no report in {text}"));
        reported += n;
        each.push(n);
    }
    eprintln!("timers fired by each process: {each:?}");
    assert_eq!(
        reported,
        sids.len(),
        "each timer is reported by one process"
    );
    let e = engine(store, Duration::from_secs(400));
    for (i, sid) in sids.iter().enumerate() {
        let evs: Vec<Value> = common::journal(&e, sid)
            .await
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect();
        let of = |ty: &str| evs.iter().filter(|v| v["type"] == ty).count();
        match i % 3 {
            0 => {
                assert_eq!(of("interrupt.resolved"), 1, "{sid}");
                assert_eq!(of("run.resumed"), 1, "{sid}");
            }
            1 => assert_eq!(of("run.resumed"), 1, "{sid}"),
            _ => {
                let closed = evs
                    .iter()
                    .filter(|v| v["code"] == "client_execution_expired")
                    .count();
                assert_eq!(closed, 1, "{sid}");
                let paused = evs
                    .iter()
                    .filter(|v| v["reason"] == "client_executor_unavailable")
                    .count();
                assert_eq!(paused, 1, "{sid}");
            }
        }
        common::assert_valid(&e, sid).await;
    }
    let left = e
        .store()
        .list_side(SideSpace::Timer, None, 10)
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_fire_each_timer_once_on_sqlite() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timers.sqlite");
    let sids = fill(SqliteStore::open(&path).await.unwrap()).await;
    let target = format!("sqlite:{}", path.display());
    two_drivers(&target, SqliteStore::open(&path).await.unwrap(), &sids).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_fire_each_timer_once_on_postgres() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let Some(url) = common::postgres_url() else {
        return;
    };
    let schema = format!("timers_{}_{}", std::process::id(), T0);
    let sids = fill(PostgresStore::open(&url, &schema).await.unwrap()).await;
    let target = format!("postgres:{schema}");
    two_drivers(
        &target,
        PostgresStore::open(&url, &schema).await.unwrap(),
        &sids,
    )
    .await;
}
