//! Durable timers on real redb and SQLite files: each kind of deadline
//! survives the engine that set it. A new engine over the same file, with
//! its clock past the deadline, that never touches the session, fires the
//! timer from the due index, once; clearing events remove their timers;
//! late resolutions are refused as `interrupt_expired`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use common::me;
use narad_engine::{
    AllowAll, Clock, Engine, EngineConfig, Interrupt, InterruptScope, ManualClock, NewSession,
    RandomIds, Resolve, StartRun, Started, TimerKind,
};
use narad_store::{SideSpace, Store};
use narad_store_redb::RedbStore;
use narad_store_sqlite::SqliteStore;
use serde_json::{json, Value};

const T0: u64 = 1_780_000_000;

type Open<S> = fn(PathBuf) -> Pin<Box<dyn Future<Output = S>>>;

fn redb(dir: PathBuf) -> Pin<Box<dyn Future<Output = RedbStore>>> {
    Box::pin(async move { RedbStore::open(dir.join("t.redb")).await.unwrap() })
}

fn sqlite(dir: PathBuf) -> Pin<Box<dyn Future<Output = SqliteStore>>> {
    Box::pin(async move { SqliteStore::open(dir.join("t.sqlite")).await.unwrap() })
}

/// An engine over `store` whose clock stands `after` past `T0`. Tokens
/// live 30 s, leases 45 s (tokens 300 s when the lease kind is tested).
fn engine<S: Store + 'static>(
    store: S,
    after: Duration,
    kind: TimerKind,
) -> (Engine<S>, Arc<ManualClock>) {
    let token = if kind == TimerKind::Lease { 300 } else { 30 };
    let clock = Arc::new(ManualClock::at_unix(T0));
    clock.advance(after);
    let e = Engine::with_host(
        store,
        clock.clone(),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            lease_ttl: Duration::from_secs(45),
            token_ttl: Duration::from_secs(token),
            ..EngineConfig::default()
        },
    );
    (e, clock)
}

async fn run<S: Store + 'static>(e: &Engine<S>, sid: &str, executor: Option<&str>) -> String {
    let start = StartRun {
        client_executor_id: executor.map(str::to_owned),
        ..StartRun::default()
    };
    match e.start_run(&me(), sid, start).await.unwrap() {
        Started::Running(r) => r,
        other => panic!("{other:?}"),
    }
}

async fn events<S: Store + 'static>(e: &Engine<S>, sid: &str) -> Vec<Value> {
    common::journal(e, sid)
        .await
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap())
        .collect()
}

fn count(evs: &[Value], ty: &str, field: &str, value: &str) -> usize {
    evs.iter()
        .filter(|v| v["type"] == ty && v[field] == value)
        .count()
}

async fn timers<S: Store + 'static>(e: &Engine<S>) -> Vec<String> {
    e.store()
        .list_side(SideSpace::Timer, None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

fn interrupt(run: &str, expires: std::time::SystemTime) -> Interrupt {
    Interrupt {
        scope: InterruptScope::Run(run.into()),
        kind: "approval".into(),
        actions: vec!["approve".into(), "deny".into()],
        input: None,
        expires_at: Some(expires.into()),
        title: None,
    }
}

/// Sets up one deadline of `kind` in a fresh session; answers the session
/// and how long until the deadline.
async fn set_deadline<S: Store + 'static>(
    e: &Engine<S>,
    clock: &ManualClock,
    kind: TimerKind,
) -> String {
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    match kind {
        TimerKind::Interrupt => {
            let r = run(e, &sid, None).await;
            let at = clock.now() + Duration::from_secs(60);
            e.request_interrupt(&me(), &sid, interrupt(&r, at))
                .await
                .unwrap();
        }
        TimerKind::Resume => {
            let r = run(e, &sid, None).await;
            let at = clock.now() + Duration::from_secs(60);
            e.pause_run_until(&me(), &sid, &r, "rate_limited", at)
                .await
                .unwrap();
        }
        TimerKind::Token | TimerKind::Lease => {
            e.attach_client(&me(), "desktop-1").await.unwrap();
            let r = run(e, &sid, Some("desktop-1")).await;
            e.start_client_tool_call(&me(), &sid, &r, "open.file", json!({}))
                .await
                .unwrap();
        }
    }
    sid
}

/// The deadline of `kind` fires once from a new engine after a restart.
async fn fires_once_after_restart<S: Store + 'static>(open: Open<S>, kind: TimerKind) {
    let dir = tempfile::tempdir().unwrap();
    let sid = {
        let (e, clock) = engine(open(dir.path().to_owned()).await, Duration::ZERO, kind);
        set_deadline(&e, &clock, kind).await
    };
    // Token: 30 s; lease: 45 s (its token lives 300 s); the others: 60 s.
    let after = match kind {
        TimerKind::Token => 31,
        TimerKind::Lease => 46,
        _ => 61,
    };
    let store = open(dir.path().to_owned()).await;
    let (e, _) = engine(store, Duration::from_secs(after), kind);
    assert_eq!(e.cached_sessions(), 0);
    let report = e.fire_due_timers().await.unwrap();
    assert_eq!(report.fired.len(), 1, "{kind:?}: {report:?}");
    assert_eq!(report.fired[0].kind, kind);
    assert!(report.failed.is_empty(), "{report:?}");
    let evs = events(&e, &sid).await;
    let fired = match kind {
        TimerKind::Interrupt => count(&evs, "interrupt.resolved", "decision", "expired"),
        TimerKind::Resume => count(&evs, "run.resumed", "type", "run.resumed"),
        TimerKind::Token => count(
            &evs,
            "tool.call.finished",
            "code",
            "client_execution_expired",
        ),
        TimerKind::Lease => count(&evs, "run.paused", "reason", "client_executor_unavailable"),
    };
    assert_eq!(fired, 1, "{kind:?}: {evs:#?}");
    if kind == TimerKind::Interrupt {
        assert_eq!(count(&evs, "run.resumed", "type", "run.resumed"), 1);
    }
    let again = e.fire_due_timers().await.unwrap();
    assert!(again.fired.is_empty(), "{kind:?}: {again:?}");
    assert_eq!(events(&e, &sid).await.len(), evs.len());
    common::assert_valid(&e, &sid).await;
}

macro_rules! restart_tests {
    ($($name:ident: $open:ident, $kind:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            fires_once_after_restart($open as Open<_>, $kind).await;
        }
    )*};
}

restart_tests! {
    interrupt_expiry_fires_after_restart_redb: redb, TimerKind::Interrupt;
    interrupt_expiry_fires_after_restart_sqlite: sqlite, TimerKind::Interrupt;
    token_expiry_fires_after_restart_redb: redb, TimerKind::Token;
    token_expiry_fires_after_restart_sqlite: sqlite, TimerKind::Token;
    lease_expiry_fires_after_restart_redb: redb, TimerKind::Lease;
    lease_expiry_fires_after_restart_sqlite: sqlite, TimerKind::Lease;
    retry_at_resumes_after_restart_redb: redb, TimerKind::Resume;
    retry_at_resumes_after_restart_sqlite: sqlite, TimerKind::Resume;
}

/// `expire_due` used to see only cached sessions: after a restart it
/// returned nothing until the session was touched.
#[tokio::test]
async fn expire_due_sees_sessions_not_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sid = {
        let (e, clock) = engine(
            redb(dir.path().to_owned()).await,
            Duration::ZERO,
            TimerKind::Interrupt,
        );
        set_deadline(&e, &clock, TimerKind::Interrupt).await
    };
    let (e, _) = engine(
        redb(dir.path().to_owned()).await,
        Duration::from_secs(61),
        TimerKind::Interrupt,
    );
    assert_eq!(e.cached_sessions(), 0);
    assert_eq!(e.expire_due(&me()).await.unwrap().len(), 1);
    let evs = events(&e, &sid).await;
    assert_eq!(count(&evs, "interrupt.resolved", "decision", "expired"), 1);
}

/// The events that clear a deadline remove its timer in their batch; a
/// heartbeat moves the lease's.
#[tokio::test]
async fn clearing_events_remove_their_timers() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = engine(
        sqlite(dir.path().to_owned()).await,
        Duration::ZERO,
        TimerKind::Interrupt,
    );
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let r = run(&e, &sid, None).await;
    let at = clock.now() + Duration::from_secs(60);
    let (iid, _) = e
        .request_interrupt(&me(), &sid, interrupt(&r, at))
        .await
        .unwrap();
    assert_eq!(timers(&e).await.len(), 1);
    e.resolve_interrupt(
        &me(),
        Resolve {
            interrupt_id: iid,
            decision: "approve".into(),
            reason: None,
            expected_revision: None,
            members: None,
        },
    )
    .await
    .unwrap();
    assert!(timers(&e).await.is_empty());
    let wait = e
        .pause_run_until(&me(), &sid, &r, "rate_limited", at)
        .await
        .unwrap();
    assert_eq!(timers(&e).await.len(), 1);
    e.resume_run(&me(), &sid, &r, &wait).await.unwrap();
    assert!(timers(&e).await.is_empty());

    // Lease: attach records it, a heartbeat moves it.
    let lease = e.attach_client(&me(), "w").await.unwrap();
    let first = timers(&e).await;
    assert_eq!(first.len(), 1);
    clock.advance(Duration::from_secs(30));
    e.client_heartbeat(&me(), "w", &lease).await.unwrap();
    let moved = timers(&e).await;
    assert_eq!(moved.len(), 1);
    assert_ne!(moved, first);
    // Past the first expiry, before the renewed one: nothing is due.
    clock.advance(Duration::from_secs(20));
    assert!(e.fire_due_timers().await.unwrap().fired.is_empty());
    // A delivery failure closes the call and removes its token's timer.
    let r2 = {
        let sid2 = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        let r2 = run(&e, &sid2, Some("w")).await;
        e.start_client_tool_call(&me(), &sid2, &r2, "t", json!({}))
            .await
            .unwrap();
        r2
    };
    let _ = r2;
    assert_eq!(timers(&e).await.len(), 2);
    let out = e.client_outbox("w");
    let exec = std::iter::from_fn(|| out.try_next())
        .map(|b| serde_json::from_slice::<Value>(&b).unwrap())
        .find(|m| m["type"] == "client.tool.execute")
        .unwrap();
    e.client_delivery_failed(&me(), exec["executionToken"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(timers(&e).await, moved);
}

#[tokio::test]
async fn late_requests_and_resolutions_are_refused_as_interrupt_expired() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = engine(
        redb(dir.path().to_owned()).await,
        Duration::ZERO,
        TimerKind::Interrupt,
    );
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let r = run(&e, &sid, None).await;
    let before = common::journal(&e, &sid).await.len();
    let err = e
        .request_interrupt(&me(), &sid, interrupt(&r, clock.now()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "interrupt_expired");
    assert_eq!(common::journal(&e, &sid).await.len(), before);

    let at = clock.now() + Duration::from_secs(10);
    let (iid, _) = e
        .request_interrupt(&me(), &sid, interrupt(&r, at))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(10));
    let resolve = |decision: &str| Resolve {
        interrupt_id: iid.clone(),
        decision: decision.into(),
        reason: None,
        expected_revision: None,
        members: None,
    };
    let before = common::journal(&e, &sid).await.len();
    let err = e
        .resolve_interrupt(&me(), resolve("approve"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "interrupt_expired");
    assert_eq!(common::journal(&e, &sid).await.len(), before);
    e.resolve_interrupt(&me(), resolve("expired"))
        .await
        .unwrap();
    assert!(timers(&e).await.is_empty());
}

/// The task a host spawns fires due timers without being asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spawned_driver_fires_due_timers() {
    let dir = tempfile::tempdir().unwrap();
    let (e, clock) = engine(
        redb(dir.path().to_owned()).await,
        Duration::ZERO,
        TimerKind::Resume,
    );
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let r = run(&e, &sid, None).await;
    let at = clock.now() + Duration::from_secs(5);
    e.pause_run_until(&me(), &sid, &r, "rate_limited", at)
        .await
        .unwrap();
    let task = tokio::spawn(e.clone().run_timers(Duration::from_millis(5)));
    clock.advance(Duration::from_secs(5));
    // Waits for the resume (the test harness bounds the wait).
    while count(
        &events(&e, &sid).await,
        "run.resumed",
        "type",
        "run.resumed",
    ) == 0
    {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    task.abort();
    assert!(timers(&e).await.is_empty());
    assert_eq!(
        count(
            &events(&e, &sid).await,
            "run.resumed",
            "type",
            "run.resumed"
        ),
        1
    );
}
