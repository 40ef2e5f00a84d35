//! A long session's CPU work runs on tokio's blocking pool, not on the
//! async thread that polls it (a tokio worker serving other sessions, or a
//! Python binding's event loop): a hydrate's snapshot restore from 1 MiB
//! on, each replayed page from 256 events on, the encoding of a periodic
//! snapshot, and the check of a transcript record read back from the
//! store from 1 MiB on.
//!
//! Seen on a current-thread runtime with a ticker task beside the hydrate,
//! through `FaultStore::observe` on a real redb store: between the store
//! read that precedes the work and the one that follows it, the ticker runs
//! only if the hydrate awaited the work elsewhere. Done in place, no task
//! runs in between.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{fixed_host, me};
use narad_engine::{AllowAll, Engine, EngineConfig, ManualClock, NewSession, SequentialIds};
use narad_store::fault::{FaultStore, Method, Stage};
use narad_store::{SideSpace, Store};
use narad_store_redb::RedbStore;

fn writer<S: Store + 'static>(store: S, snapshot_every: u64) -> Engine<S> {
    Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        EngineConfig {
            snapshot_every,
            ..EngineConfig::default()
        },
    )
}

/// Runs `body` on a current-thread runtime over an observed redb store at
/// `path`, with a ticker task beside it whose count `body` is given;
/// `observe` sees each store call (method, made or returned) with the
/// ticker's count at that moment.
fn ticked<T, F: Future<Output = T>>(
    path: &Path,
    observe: impl Fn(Method, Stage, u64) + Send + Sync + 'static,
    body: impl FnOnce(FaultStore<RedbStore>, Arc<AtomicU64>) -> F,
) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = FaultStore::new(RedbStore::open(path).await.unwrap());
        let ticks = Arc::new(AtomicU64::new(0));
        let t = Arc::clone(&ticks);
        store.observe(move |method, stage| observe(method, stage, t.load(Ordering::SeqCst)));
        let t = Arc::clone(&ticks);
        let ticker = tokio::spawn(async move {
            loop {
                t.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        });
        let out = body(store, ticks).await;
        ticker.abort();
        out
    })
}

/// Hydrates `sid` (a read) from `path` beside a ticker and returns the
/// ticker's count when the hydrate's first two `read_session`s were
/// called and returned: `[first called, first returned, second called, ...]`.
fn hydrate_stamped(path: &Path, sid: &str) -> Vec<u64> {
    let stamps = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&stamps);
    let observe = move |method, _stage, ticks| {
        if method == Method::ReadSession {
            s.lock().unwrap().push(ticks);
        }
    };
    ticked(path, observe, |store, _| async move {
        let e = fixed_host(store, Arc::new(AllowAll));
        e.state(&me(), sid).await.unwrap();
        e.close().await.unwrap();
    });
    let stamps = stamps.lock().unwrap().clone();
    assert!(stamps.len() >= 4, "two reads: {stamps:?}");
    stamps
}

/// Ticks between the return of the hydrate's first `read_session` and the
/// call of its second: the work between them (a restore, or the check of
/// the first page) let the ticker run only if it was awaited elsewhere.
fn ticks_between_reads(stamps: &[u64]) -> u64 {
    stamps[2] - stamps[1]
}

#[test]
fn a_long_snapshot_restores_off_the_async_thread_and_a_short_one_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Eight messages of 250 kB: the snapshot (every second event) holds
    // the text of the five or so after those handed to the store with the
    // transcript (`HANDOVER_BYTES`), over 1.25 MB. A second session of
    // short messages has a snapshot of a few hundred bytes.
    let path = dir.path().join("snap.redb");
    let (long, short) = rt.block_on(async {
        let e = writer(RedbStore::open(&path).await.unwrap(), 2);
        let long = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        let short = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        for i in 0..8 {
            let text = format!("{i}{}", "x".repeat(250_000));
            e.message(&me(), &long, text.as_str()).await.unwrap();
            e.message(&me(), &short, "hi").await.unwrap();
        }
        let snap = e.store().side(SideSpace::Snapshot, &long).await.unwrap();
        let n = snap.map_or(0, |s| s.len());
        assert!(n > 1 << 20, "the long snapshot passes 1 MiB: {n}");
        e.close().await.unwrap();
        (long, short)
    });
    // The snapshot covers the head: the hydrate reads the event at the
    // head (a check), restores, then reads the tail after it.
    let stamps = hydrate_stamped(&path, &long);
    assert!(
        ticks_between_reads(&stamps) > 0,
        "the restore ran in place: {stamps:?}"
    );
    let stamps = hydrate_stamped(&path, &short);
    assert_eq!(ticks_between_reads(&stamps), 0, "{stamps:?}");
}

/// A session of `messages` user messages (and no snapshot) written to a
/// fresh redb file at `path` in one import; returns its id.
fn imported_session(path: &Path, messages: u64) -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let e = writer(RedbStore::open(path).await.unwrap(), u64::MAX);
        let sid = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        let first = e.store().head(&sid).await.unwrap();
        let journal = common::journal(&e, &sid).await;
        e.message(&me(), &sid, "hi").await.unwrap();
        let message = common::journal(&e, &sid).await.pop().unwrap();
        e.close().await.unwrap();
        // The same message again and again, each its own event, imported
        // in one batch into a fresh store.
        let mut records = journal;
        let template: serde_json::Value = serde_json::from_slice(&message).unwrap();
        for seq in first + 1..=first + messages {
            let mut m = template.clone();
            m["eventId"] = format!("event-{seq}").into();
            m["messageId"] = format!("message-{seq}").into();
            m["sessionSequence"] = seq.into();
            records.push(serde_json::to_vec(&m).unwrap());
        }
        std::fs::remove_file(path).unwrap();
        let e = writer(RedbStore::open(path).await.unwrap(), u64::MAX);
        let (sid, n) = e.import(&me(), &records).await.unwrap();
        assert_eq!(n as usize, records.len());
        e.close().await.unwrap();
        sid
    })
}

#[test]
fn a_long_replay_checks_each_page_off_the_async_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replay.redb");
    // 1,100 messages and no snapshot: a first page of 1,024 events, then
    // the rest.
    let sid = imported_session(&path, 1_100);
    let stamps = hydrate_stamped(&path, &sid);
    assert!(
        ticks_between_reads(&stamps) > 0,
        "the first page was checked in place: {stamps:?}"
    );
}

/// Reads `sid`'s state twice from `path` beside a ticker (the first read
/// hydrates it) and returns the ticks from the second read's `head` check
/// to its end: its copy of the state let the ticker run only if it was
/// awaited elsewhere.
fn ticks_after_a_cached_read(path: &Path, sid: &str) -> u64 {
    let at_head = Arc::new(AtomicU64::new(0));
    let h = Arc::clone(&at_head);
    let observe = move |method, stage, ticks| {
        if method == Method::Head && stage == Stage::Returned {
            h.store(ticks, Ordering::SeqCst);
        }
    };
    ticked(path, observe, |store, ticks| async move {
        let e = writer(store, u64::MAX);
        e.state(&me(), sid).await.unwrap();
        let s = e.state(&me(), sid).await.unwrap();
        let end = ticks.load(Ordering::SeqCst);
        assert!(
            s.transcript.messages.len() > 100,
            "{}",
            s.transcript.messages.len()
        );
        e.close().await.unwrap();
        end - at_head.load(Ordering::SeqCst)
    })
}

#[test]
fn a_long_sessions_state_is_copied_off_the_async_thread_and_a_short_ones_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.redb");
    let sid = imported_session(&long, 10_100);
    let ticks = ticks_after_a_cached_read(&long, &sid);
    assert!(ticks > 0, "the copy ran in place: {ticks}");
    let short = dir.path().join("short.redb");
    let sid = imported_session(&short, 200);
    assert_eq!(ticks_after_a_cached_read(&short, &sid), 0);
}

/// Runs `messages` message commands on one session beside a ticker and
/// returns for each `append` the ticks since the store call observed
/// before it: the work of a command between its last store call and its
/// append let the ticker run only if it was awaited elsewhere.
fn ticks_before_each_append(path: &Path, snapshot_every: u64, messages: usize) -> Vec<u64> {
    let gaps = Arc::new(Mutex::new(Vec::new()));
    let last = AtomicU64::new(0);
    let g = Arc::clone(&gaps);
    let observe = move |method, stage, ticks| {
        if method == Method::Append && stage == Stage::Called {
            g.lock().unwrap().push(ticks - last.load(Ordering::SeqCst));
        }
        last.store(ticks, Ordering::SeqCst);
    };
    ticked(path, observe, |store, _| async {
        let e = writer(store, snapshot_every);
        let sid = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        gaps.lock().unwrap().clear();
        // Messages of 250 kB: a snapshot holds a MB of text, so its
        // encoding outlasts the blocking thread's wake-up (a snapshot of a
        // few bytes could be done before its handle is first polled).
        for i in 0..messages {
            let text = format!("{i}{}", "x".repeat(250_000));
            e.message(&me(), &sid, text.as_str()).await.unwrap();
        }
        let snap = e.store().side(SideSpace::Snapshot, &sid).await.unwrap();
        assert_eq!(snap.is_some(), snapshot_every < u64::MAX);
        e.close().await.unwrap();
    });
    let gaps = gaps.lock().unwrap().clone();
    gaps
}

#[test]
fn a_periodic_snapshot_is_encoded_off_the_async_thread() {
    let dir = tempfile::tempdir().unwrap();
    // Without snapshots, no command yields between its last store call
    // and its append: the ticker never runs there.
    let none = ticks_before_each_append(&dir.path().join("none.redb"), u64::MAX, 8);
    assert_eq!(none.len(), 8, "{none:?}");
    assert!(none.iter().all(|&t| t == 0), "{none:?}");
    // With one every four events, the commands that carry one awaited its
    // encoding on the blocking pool, and only those.
    let some = ticks_before_each_append(&dir.path().join("some.redb"), 4, 8);
    assert_eq!(some.len(), 8, "{some:?}");
    let yielded = some.iter().filter(|&&t| t > 0).count();
    assert!((1..=3).contains(&yielded), "{some:?}");
}

/// Writes a session of ten messages of `size` bytes with a snapshot every
/// ten events to `path` (the one at the tenth hands the transcript over), then reads its whole state beside a ticker (the
/// read gives the checker the transcript record its snapshot left to the
/// store) and returns the ticks from the `list_side` that read the record
/// to the `head` call made right after the read.
fn ticks_after_the_transcript_is_read(path: &Path, size: usize) -> u64 {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sid = rt.block_on(async {
        let e = writer(RedbStore::open(path).await.unwrap(), 10);
        let sid = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        for i in 0..10 {
            let text = format!("{i}{}", "x".repeat(size));
            e.message(&me(), &sid, text.as_str()).await.unwrap();
        }
        e.close().await.unwrap();
        sid
    });
    drop(rt);
    let listed = Arc::new(AtomicU64::new(u64::MAX));
    let after = Arc::new(AtomicU64::new(0));
    let (l, a) = (Arc::clone(&listed), Arc::clone(&after));
    let observe = move |method, stage, ticks| match (method, stage) {
        (Method::ListSide, Stage::Returned) => l.store(ticks, Ordering::SeqCst),
        (Method::Head, Stage::Called) => a.store(ticks, Ordering::SeqCst),
        _ => {}
    };
    ticked(path, observe, |store, _| async move {
        let e = fixed_host(store, Arc::new(AllowAll));
        e.state(&me(), &sid).await.unwrap();
        e.store().head(&sid).await.unwrap();
        e.close().await.unwrap();
    });
    let (listed, after) = (listed.load(Ordering::SeqCst), after.load(Ordering::SeqCst));
    assert_ne!(listed, u64::MAX, "no closed record was read");
    after - listed
}

#[test]
fn a_long_transcript_record_is_checked_off_the_async_thread() {
    let dir = tempfile::tempdir().unwrap();
    // 2.5 MB of messages, past `OFF_THREAD_BYTES`.
    let long = ticks_after_the_transcript_is_read(&dir.path().join("long.redb"), 250_000);
    assert!(long > 0, "the record was checked in place");
    // 400 kB: handed over too, and checked in place.
    let short = ticks_after_the_transcript_is_read(&dir.path().join("short.redb"), 40_000);
    assert_eq!(short, 0);
}
