//! Shared test set-up: engines over real redb files, journal checks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use narad_core::checker::Checker;
use narad_engine::{
    AllowAll, Authorizer, Engine, EngineConfig, ManualClock, NewSession, Principal, SequentialIds,
};
use narad_store::{Batch, Expect, SideSpace, SideWrite, Store};
use narad_store_redb::RedbStore;

pub fn me() -> Principal {
    Principal::new("tester")
}

pub async fn engine(dir: &Path) -> Engine<RedbStore> {
    let store = RedbStore::open(dir.join("engine.redb")).await.unwrap();
    fixed_host(store, Arc::new(AllowAll))
}

/// An engine over `store` on the tests' fixed clock and sequential ids,
/// asking `auth`.
pub fn fixed_host<S: Store + 'static>(store: S, auth: Arc<dyn Authorizer>) -> Engine<S> {
    Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        auth,
        EngineConfig::default(),
    )
}

/// [`configured`] writing a reducer snapshot every 10 events.
pub fn snapshotting<S: Store + 'static>(store: S) -> Engine<S> {
    let config = EngineConfig {
        snapshot_every: 10,
        ..Default::default()
    };
    configured(store, config)
}

/// An engine over `store` on the tests' fixed clock, random ids (a
/// restarted engine must not reuse an earlier one's) and `config`.
pub fn configured<S: Store + 'static>(store: S, config: EngineConfig) -> Engine<S> {
    Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(narad_engine::RandomIds),
        Arc::new(AllowAll),
        config,
    )
}

/// An engine whose clock the test moves.
pub async fn engine_with_clock(dir: &Path) -> (Engine<RedbStore>, Arc<ManualClock>) {
    let store = RedbStore::open(dir.join("engine.redb")).await.unwrap();
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    // Random ids: a restarted engine must not reuse an earlier one's ids.
    let e = Engine::with_host(
        store,
        clock.clone(),
        Arc::new(narad_engine::RandomIds),
        Arc::new(AllowAll),
        EngineConfig::default(),
    );
    (e, clock)
}

pub async fn session<S: Store + 'static>(e: &Engine<S>) -> String {
    e.create_session(&me(), NewSession::default())
        .await
        .unwrap()
}

/// The whole stored journal of a session, as bytes.
pub async fn journal<S: Store + 'static>(e: &Engine<S>, sid: &str) -> Vec<Vec<u8>> {
    // Page by page: a page stops at `PAGE_BYTES`, so one read of a journal
    // of several MiB returns only its start.
    let mut pages = narad_store::JournalPages::new(e.store(), sid, 0, usize::MAX);
    let mut out = Vec::new();
    while let Some(page) = pages.next().await.unwrap() {
        out.extend(page.into_iter().map(|ev| ev.bytes.to_vec()));
    }
    out
}

/// A fresh checker accepts every stored event of the session, in order.
pub async fn assert_valid<S: Store + 'static>(e: &Engine<S>, sid: &str) -> Checker {
    let mut c = Checker::default();
    for (i, b) in journal(e, sid).await.iter().enumerate() {
        if let Err(r) = c.push_bytes(b) {
            panic!(
                "event {} refused: {r}: {}",
                i + 1,
                String::from_utf8_lossy(b)
            );
        }
    }
    c
}

/// The `type` of every stored event of the session.
pub async fn types<S: Store + 'static>(e: &Engine<S>, sid: &str) -> Vec<String> {
    journal(e, sid)
        .await
        .iter()
        .map(|b| {
            let v: serde_json::Value = serde_json::from_slice(b).unwrap();
            v["type"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// The published schemas as validators (`None`, with a printed notice,
/// when `../shared/narad-spec` is absent outside CI).
pub fn schemas(test: &str) -> Option<Vec<jsonschema::Validator>> {
    let spec = narad_conformance::require_spec(test)?;
    Some(
        narad_conformance::load_schemas(&spec)
            .unwrap()
            .iter()
            .map(|(_, s)| {
                jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .build(s)
                    .unwrap()
            })
            .collect(),
    )
}

/// Asserts one of the schemas accepts `bytes` (when the schemas are loaded).
pub fn schema_valid(schemas: &Option<Vec<jsonschema::Validator>>, bytes: &[u8]) {
    if let Some(s) = schemas {
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert!(s.iter().any(|x| x.is_valid(&v)), "schema-invalid: {v}");
    }
}

/// The test PostgreSQL server's URL (`NARAD_TEST_POSTGRES_URL`). Without
/// one the caller skips with a printed notice; under CI, which must start
/// a server (`.ci/postgres`), its absence is a failure.
pub fn postgres_url() -> Option<String> {
    let url = std::env::var("NARAD_TEST_POSTGRES_URL").ok();
    if url.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "NARAD_TEST_POSTGRES_URL is not set (CI must start a server: .ci/postgres start DIR)"
        );
        eprintln!(
            "SKIPPED: NARAD_TEST_POSTGRES_URL is not set (start one with .ci/postgres start DIR)"
        );
    }
    url
}

/// A `run.finished` terminal with nothing attached.
pub fn finished() -> narad_engine::Terminal {
    narad_engine::Terminal::Finished {
        usage: None,
        artifact_ids: vec![],
    }
}

/// Starts a top-level run that must start now.
pub async fn running<S: Store + 'static>(e: &Engine<S>, sid: &str) -> String {
    running_with(e, sid, narad_engine::StartRun::default()).await
}

/// Starts a child run of `parent` that must start now.
pub async fn child_of<S: Store + 'static>(e: &Engine<S>, sid: &str, parent: &str) -> String {
    let opts = narad_engine::StartRun {
        parent_run_id: Some(parent.to_owned()),
        ..narad_engine::StartRun::default()
    };
    running_with(e, sid, opts).await
}

/// Starts a run with `opts` as `me()` and returns its id (it must run, not queue).
pub async fn running_with<S: Store + 'static>(
    e: &Engine<S>,
    sid: &str,
    opts: narad_engine::StartRun,
) -> String {
    match e.start_run(&me(), sid, opts).await.unwrap() {
        narad_engine::Started::Running(r) => r,
        other => panic!("{other:?}"),
    }
}

/// Runs `refused`, asserts its code, and that the journal did not change.
pub async fn refused<S, F>(e: &Engine<S>, sid: &str, code: &str, f: F)
where
    S: Store + 'static,
    F: std::future::Future<Output = Result<(), narad_engine::EngineError>>,
{
    let before = journal(e, sid).await;
    let err = f.await.expect_err("the command must be refused");
    assert_eq!(err.code(), code, "{err}");
    assert_eq!(journal(e, sid).await, before, "a refused command wrote");
}

/// [`refused`] for one event of type `ty` that `who` appends in `scope`.
pub async fn refused_append<S: Store + 'static>(
    e: &Engine<S>,
    who: &Principal,
    sid: &str,
    code: &str,
    ty: &str,
    scope: narad_engine::EventScope,
    data: serde_json::Value,
) {
    refused(e, sid, code, async {
        e.append(who, sid, ty, scope, data).await.map(|_| ())
    })
    .await;
}

/// Opens an approval interrupt on `run`: its interrupt and wait ids.
pub async fn interrupted<S: Store + 'static>(
    e: &Engine<S>,
    sid: &str,
    run: &str,
) -> (String, String) {
    e.request_interrupt(
        &me(),
        sid,
        narad_engine::Interrupt::on_run(run, "approval", ["approve", "deny"]),
    )
    .await
    .unwrap()
}

/// The stored reducer snapshot record of `sid`.
pub async fn snapshot_of<S: Store>(store: &S, sid: &str) -> Vec<u8> {
    store
        .side(SideSpace::Snapshot, sid)
        .await
        .unwrap()
        .unwrap()
        .to_vec()
}

/// Writes the closed record `key` of session `sid` straight to the store
/// (`None` deletes it).
pub async fn put_closed<S: Store>(store: &S, sid: &str, key: String, value: Option<Bytes>) {
    store
        .append(Batch {
            session_id: sid.to_owned(),
            expected_head: store.head(sid).await.unwrap(),
            side: vec![SideWrite {
                space: SideSpace::Closed,
                key,
                expect: Expect::Any,
                value,
            }],
            ..Batch::default()
        })
        .await
        .unwrap();
}

/// Closes `e`, then checks that a [`snapshotting`] engine restarted on
/// `open()`'s store restores `sid` from its snapshot and reads the whole
/// state `e` read.
pub async fn restarts_to_same_state<S, F, Fut>(e: Engine<S>, open: &F, sid: &str)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let state = e.state_json(&me(), sid).await.unwrap();
    e.store().close().await.unwrap();
    drop(e);
    let e = snapshotting(open().await);
    assert_eq!(e.state_json(&me(), sid).await.unwrap(), state);
    assert_eq!(e.stats().from_snapshot, 1);
    e.store().close().await.unwrap();
}

/// Replaces the stored reducer snapshot record of `sid` with `bytes`.
pub async fn put_snapshot<S: Store>(store: &S, sid: &str, bytes: Vec<u8>) {
    store
        .append(Batch {
            session_id: sid.to_owned(),
            expected_head: store.head(sid).await.unwrap(),
            side: vec![SideWrite {
                space: SideSpace::Snapshot,
                key: sid.to_owned(),
                expect: Expect::Any,
                value: Some(Bytes::from(bytes)),
            }],
            ..Batch::default()
        })
        .await
        .unwrap();
}

/// The record with its checker part labelled as layout 9 (what the
/// previous build wrote) and its body digest made to match: intact, but
/// of an earlier layout.
pub fn earlier_layout(record: &[u8]) -> Vec<u8> {
    let mut out = record.to_vec();
    let magic = out.windows(8).position(|w| w == b"narad.ck").unwrap();
    assert_eq!(out[magic + 8], 12, "a snapshot for a store is format 12");
    out[magic + 8] = 9;
    let n = u32::from_be_bytes(out[8..12].try_into().unwrap()) as usize;
    let old = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&record[12 + n..]));
    let new = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&out[12 + n..]));
    let at = out.windows(32).position(|w| w == old.as_bytes()).unwrap();
    out[at..at + 32].copy_from_slice(new.as_bytes());
    out
}
