//! Times the protocol's timestamps cannot name never stop the engine: a
//! deadline of "never" is written as the latest timestamp, a clock set
//! before 1970 stamps the epoch, and a cut-off further back than the
//! epoch prunes nothing. Each used to panic while formatting the time
//! (or adding the duration).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{assert_valid, me, session};
use narad_engine::{
    AllowAll, Clock, Engine, EngineConfig, Interrupt, ManualClock, RetentionPolicy, SequentialIds,
    StartRun, Started,
};
use narad_store_redb::RedbStore;

const LATEST: &str = "9999-12-31T23:59:59.999Z";

async fn engine_at(dir: &std::path::Path, clock: Arc<dyn Clock>) -> Engine<RedbStore> {
    Engine::with_host(
        RedbStore::open(dir.join("engine.redb")).await.unwrap(),
        clock,
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        EngineConfig::default(),
    )
}

fn run_of(s: Started) -> String {
    match s {
        Started::Running(r) => r,
        Started::Queued(r) => panic!("queued {r}"),
    }
}

#[tokio::test]
async fn a_deadline_of_never_is_the_latest_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    let e = engine_at(dir.path(), clock.clone()).await;
    let sid = session(&e).await;
    let run = run_of(e.start_run(&me(), &sid, StartRun::new()).await.unwrap());
    let never = Interrupt::on_run(&run, "approval", ["approve", "deny"]).expires_in(Duration::MAX);
    e.request_interrupt(&me(), &sid, never).await.unwrap();
    let state = e.state(&me(), &sid).await.unwrap();
    let open = state.open_interrupts();
    let (_, open) = open.first().expect("the interrupt is open");
    assert_eq!(open.expires_at.as_deref(), Some(LATEST));
    // A time past the year 9999 given as a time is written the same way.
    let sid = session(&e).await;
    let run = run_of(e.start_run(&me(), &sid, StartRun::new()).await.unwrap());
    let far = UNIX_EPOCH + Duration::from_secs(1 << 40);
    let ask = Interrupt::on_run(&run, "approval", ["approve"]).expires_at(far);
    e.request_interrupt(&me(), &sid, ask).await.unwrap();
    let state = e.state(&me(), &sid).await.unwrap();
    let open = state.open_interrupts();
    assert_eq!(open.first().unwrap().1.expires_at.as_deref(), Some(LATEST));
    // Nothing is due, and the clock moved past what a time holds stops at
    // the latest timestamp rather than panicking.
    assert!(e.expire_due(&me()).await.unwrap().is_empty());
    clock.advance(Duration::MAX);
    assert_eq!(narad_engine::timestamp(clock.now()), LATEST);
    let late = ManualClock::at_unix(u64::MAX);
    assert_eq!(narad_engine::timestamp(late.now()), LATEST);
    assert_valid(&e, &sid).await;
}

/// A clock that reads a day before the epoch.
#[derive(Debug)]
struct BeforeTheEpoch;

impl Clock for BeforeTheEpoch {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH - Duration::from_secs(86_400)
    }
}

#[tokio::test]
async fn a_clock_before_the_epoch_stamps_the_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine_at(dir.path(), Arc::new(BeforeTheEpoch)).await;
    let sid = session(&e).await;
    e.message(&me(), &sid, serde_json::json!("hello"))
        .await
        .unwrap();
    let entry = e.index_entry(&sid).await.unwrap().unwrap();
    assert_eq!(
        entry.updated_at.as_deref(),
        Some("1970-01-01T00:00:00.000Z")
    );
    assert_valid(&e, &sid).await;
}

#[tokio::test]
async fn a_cut_off_before_the_epoch_prunes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine_at(dir.path(), Arc::new(ManualClock::at_unix(1_780_000_000))).await;
    let sid = session(&e).await;
    e.message(&me(), &sid, serde_json::json!("kept"))
        .await
        .unwrap();
    // 10^12 hours before now is long before 1970; Duration::MAX is before
    // any time at all.
    for max_idle in [
        Duration::from_secs(3_600 * 1_000_000_000_000),
        Duration::MAX,
    ] {
        let policy = RetentionPolicy {
            max_idle: Some(max_idle),
            max_sessions_per_workspace: None,
            force: true,
        };
        let report = e.prune(&me(), &policy, false).await.unwrap();
        assert!(
            report.deleted.is_empty() && report.kept.is_empty(),
            "{report:?}"
        );
    }
    assert!(e.index_entry(&sid).await.unwrap().is_some());
}
