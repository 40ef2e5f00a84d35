//! An import into a session restored from its snapshot, and the
//! snapshots a long import writes, on redb, SQLite and PostgreSQL. The engine's snapshots keep no eventIds (the store
//! does), so the restored checker recalls the stored events an import
//! names: a rerun appends nothing, and an old id with other data is
//! refused as it is by a checker that replayed the whole journal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;

use common::me;
use narad_core::checker::Checker;
use narad_engine::{Engine, EngineError};
use narad_store::{SideSpace, Store};

/// `n` events of session `sid`: back-to-back runs of `run.started` and
/// `run.finished`, one user message after each run.
fn journal(sid: &str, n: u64) -> Vec<Vec<u8>> {
    (1..=n)
        .map(|q| {
            let (root, k) = ((q - 1) / 3 + 1, (q - 1) % 3);
            let body = match k {
                0 => format!(r#""type":"run.started","rootRunId":"r{root}","runId":"r{root}","sequence":1"#),
                1 => format!(r#""type":"run.finished","rootRunId":"r{root}","runId":"r{root}","sequence":2"#),
                _ => format!(r#""type":"message.user.recorded","messageId":"m{root}","messageScope":"session","content":"hello {root}""#),
            };
            format!(
                r#"{{{body},"protocolVersion":"narad/v1","eventId":"{sid}-{q}","timestamp":"2026-08-05T00:00:00Z","sessionId":"{sid}","sessionSequence":{q}}}"#
            )
            .into_bytes()
        })
        .collect()
}

/// What a checker that replayed `records` in full says of `next`.
fn reference(records: &[Vec<u8>], next: &[u8]) -> Result<(), &'static str> {
    let mut c = Checker::default();
    for r in records {
        c.push_bytes(r).unwrap();
    }
    c.push_bytes(next).map(drop).map_err(|r| r.code)
}

fn code(e: EngineError) -> &'static str {
    match e {
        EngineError::Rejected { code, .. } => code,
        other => panic!("{other:?}"),
    }
}

async fn scenario<S, F, Fut>(open: F)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let j = journal("s", 30);
    let e = Engine::new(open().await);
    assert_eq!(e.import(&me(), &j[..24]).await.unwrap().1, 24);
    e.store().close().await.unwrap();
    drop(e);
    // A journal replayed in full keeps no eventId either (the store does):
    // a rerun is still recognized.
    let e = Engine::new(open().await);
    assert_eq!(e.import(&me(), &j[..24]).await.unwrap().1, 0);
    assert_eq!((e.stats().hydrations, e.stats().from_snapshot), (1, 0));
    e.write_snapshot(&me(), "s").await.unwrap();
    // Nor does the cached journal once its snapshot is stored.
    assert_eq!(e.import(&me(), &j[..24]).await.unwrap().1, 0);
    let snapshot = e.store().side(SideSpace::Snapshot, "s").await.unwrap();
    e.store().close().await.unwrap();
    drop(e);

    // Each import below starts from the snapshot: a fresh engine.
    for round in 0..4 {
        let e = Engine::new(open().await);
        let got = match round {
            // A rerun of what the snapshot covers appends nothing.
            0 => e.import(&me(), &j[..24]).await.map(|(_, n)| n),
            // An overlapping slice appends only its new events.
            1 => e.import(&me(), &j[20..27]).await.map(|(_, n)| n),
            // An old eventId with other data is refused, as by the reference.
            2 => {
                let changed = String::from_utf8(j[2].clone())
                    .unwrap()
                    .replace("hello 1", "hello again");
                let want = reference(&j[..27], changed.as_bytes());
                assert_eq!(want, Err("duplicate_event_conflict"));
                let err = e.import(&me(), &[changed.into_bytes()]).await.unwrap_err();
                assert_eq!(code(err), "duplicate_event_conflict");
                Ok(0)
            }
            // An old eventId on a new position is refused the same way.
            _ => {
                let moved = String::from_utf8(j[27].clone())
                    .unwrap()
                    .replace("\"s-28\"", "\"s-5\"");
                assert_eq!(
                    reference(&j[..27], moved.as_bytes()),
                    Err("duplicate_event_conflict")
                );
                let err = e.import(&me(), &[moved.into_bytes()]).await.unwrap_err();
                assert_eq!(code(err), "duplicate_event_conflict");
                e.import(&me(), &j[27..]).await.map(|(_, n)| n)
            }
        };
        let want = [0, 3, 0, 3][round];
        assert_eq!(got.unwrap(), want, "round {round}");
        // Every load was a restore (a refused import drops its journal).
        let stats = e.stats();
        assert!(stats.from_snapshot >= 1, "round {round}");
        assert_eq!(stats.from_snapshot, stats.hydrations, "round {round}");
        e.store().close().await.unwrap();
    }
    let e = Engine::new(open().await);
    let stored = common::journal(&e, "s").await;
    assert_eq!(stored, j);
    common::assert_valid(&e, "s").await;
    // The stored snapshot holds the checker's snapshot without eventIds,
    // not the one with them.
    // (The checker counted the rerun's 24 records too.)
    // Its closed runs are side records written with it (the engine's
    // checker leaves closed history to the store).
    let mut c = Checker::default();
    c.leave_closed_to_store();
    for r in j[..24].iter().chain(&j[..24]) {
        c.push_bytes(r).unwrap();
    }
    let closed = c.take_closed("s", usize::MAX);
    assert_eq!(closed.len(), 8, "eight closed runs");
    let snapshot = snapshot.unwrap();
    let holds = |part: &[u8]| snapshot.windows(part.len()).any(|w| w == part);
    assert!(holds(&c.snapshot_for_store()));
    assert!(!holds(&c.snapshot()));
    e.store().close().await.unwrap();
}

/// An engine over `store` writing a reducer snapshot every 10 events.
fn snapshotting<S: Store + 'static>(store: S) -> Engine<S> {
    use std::sync::Arc;
    Engine::with_host(
        store,
        Arc::new(narad_engine::ManualClock::at_unix(1_780_000_000)),
        Arc::new(narad_engine::SequentialIds::default()),
        Arc::new(narad_engine::AllowAll),
        narad_engine::EngineConfig {
            snapshot_every: 10,
            ..Default::default()
        },
    )
}

/// An import long enough writes reducer snapshots as commands do: a
/// fresh engine hydrates the session from the last one, and a rerun over
/// it appends nothing.
async fn long_import<S, F, Fut>(open: F)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let j = journal("long", 30);
    let e = snapshotting(open().await);
    e.import(&me(), &j[..7]).await.unwrap();
    let snapshot = || async { e.store().side(SideSpace::Snapshot, "long").await.unwrap() };
    assert!(snapshot().await.is_none());
    for slice in j[7..].chunks(7) {
        e.import(&me(), slice).await.unwrap();
    }
    assert!(snapshot().await.is_some());
    e.store().close().await.unwrap();
    drop(e);
    let e = snapshotting(open().await);
    assert_eq!(e.import(&me(), &j).await.unwrap().1, 0);
    let stats = e.stats();
    assert_eq!((stats.hydrations, stats.from_snapshot), (1, 1));
    assert_eq!(common::journal(&e, "long").await, j);
    common::assert_valid(&e, "long").await;
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.redb");
    scenario(|| async { narad_store_redb::RedbStore::open(&path).await.unwrap() }).await;
    let path = dir.path().join("b.redb");
    long_import(|| async { narad_store_redb::RedbStore::open(&path).await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    scenario(|| async { narad_store_sqlite::SqliteStore::open(&path).await.unwrap() }).await;
    let path = dir.path().join("b.db");
    long_import(|| async { narad_store_sqlite::SqliteStore::open(&path).await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    let Some(url) = common::postgres_url() else {
        return;
    };
    let schema = format!("import_snap_{}", std::process::id());
    scenario(|| async {
        narad_store_postgres::PostgresStore::open(&url, &schema)
            .await
            .unwrap()
    })
    .await;
    let schema = format!("import_long_{}", std::process::id());
    long_import(|| async {
        narad_store_postgres::PostgresStore::open(&url, &schema)
            .await
            .unwrap()
    })
    .await;
}
