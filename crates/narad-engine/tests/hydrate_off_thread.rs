//! A long session's hydrate checks on tokio's blocking pool, not on the
//! async thread that polls it (a tokio worker serving other sessions, or a
//! Python binding's event loop): its snapshot's restore from 1 MiB on, and
//! each replayed page from 256 events on.
//!
//! Seen on a current-thread runtime with a ticker task beside the hydrate:
//! between the store read that precedes the work and the one that follows
//! it, the ticker runs only if the hydrate awaited the work elsewhere. Done
//! in place, no task runs in between.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use common::{fixed_host, me};
use narad_engine::{AllowAll, Engine, EngineConfig, ManualClock, NewSession, SequentialIds};
use narad_store::{
    Appended, Batch, HistoryQuery, Page, SideSpace, Store, StoreError, Subscription, WatchPage,
};
use narad_store_redb::RedbStore;

/// A real store that notes the ticker's count when each `read_session`
/// is called and when it returns.
struct Stamped {
    inner: RedbStore,
    ticks: Arc<AtomicU64>,
    /// `(after, called, returned)` per `read_session`.
    reads: Mutex<Vec<(u64, u64, u64)>>,
}

#[async_trait]
impl Store for Stamped {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.inner.append(batch).await
    }
    async fn head(&self, s: &str) -> Result<u64, StoreError> {
        self.inner.head(s).await
    }
    async fn read_session(&self, s: &str, after: u64, limit: usize) -> Result<Page, StoreError> {
        let called = self.ticks.load(Ordering::SeqCst);
        let page = self.inner.read_session(s, after, limit).await;
        let returned = self.ticks.load(Ordering::SeqCst);
        self.reads.lock().unwrap().push((after, called, returned));
        page
    }
    async fn read_run(
        &self,
        s: &str,
        root: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.inner.read_run(s, root, after, limit).await
    }
    async fn read_workflow(
        &self,
        s: &str,
        wf: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.inner.read_workflow(s, wf, after, limit).await
    }
    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.list_sessions(after, limit).await
    }
    async fn side(&self, space: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        self.inner.side(space, key).await
    }
    async fn list_side(
        &self,
        space: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError> {
        self.inner.list_side(space, after, limit).await
    }
    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.list_workspaces(after, limit).await
    }
    async fn read_watch(
        &self,
        ws: &str,
        after: u64,
        limit: usize,
    ) -> Result<WatchPage, StoreError> {
        self.inner.read_watch(ws, after, limit).await
    }
    async fn read_history(&self, s: &str, q: &HistoryQuery) -> Result<Page, StoreError> {
        self.inner.read_history(s, q).await
    }
    fn subscribe(&self) -> Subscription {
        self.inner.subscribe()
    }
    async fn close(&self) -> Result<(), StoreError> {
        self.inner.close().await
    }
}

fn writer(store: RedbStore, snapshot_every: u64) -> Engine<RedbStore> {
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

/// Opens `path` behind [`Stamped`], hydrates `sid` (a read) on a
/// current-thread runtime with a ticker beside it, and returns the stamps
/// of the hydrate's `read_session`s.
fn hydrate_stamped(path: &std::path::Path, sid: &str) -> Vec<(u64, u64, u64)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ticks = Arc::new(AtomicU64::new(0));
        let store = Stamped {
            inner: RedbStore::open(path).await.unwrap(),
            ticks: Arc::clone(&ticks),
            reads: Mutex::new(Vec::new()),
        };
        let e = fixed_host(store, Arc::new(AllowAll));
        let t = Arc::clone(&ticks);
        let ticker = tokio::spawn(async move {
            loop {
                t.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        });
        e.state(&me(), sid).await.unwrap();
        ticker.abort();
        let reads = e.store().reads.lock().unwrap().clone();
        e.close().await.unwrap();
        reads
    })
}

/// Ticks between the return of the read at `after` and the call of the
/// read that follows it.
fn ticks_after(reads: &[(u64, u64, u64)], after: u64) -> u64 {
    let i = reads
        .iter()
        .position(|r| r.0 == after)
        .unwrap_or_else(|| panic!("no read after {after}: {reads:?}"));
    let next = reads
        .get(i + 1)
        .unwrap_or_else(|| panic!("no read follows the one after {after}: {reads:?}"));
    next.1 - reads[i].2
}

#[test]
fn a_long_snapshot_restores_off_the_async_thread_and_a_short_one_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Six messages of 250 kB: the snapshot (every second event) holds the
    // text of five or six, over 1.25 MB. A
    // second session of short messages has a snapshot of a few hundred bytes.
    let path = dir.path().join("snap.redb");
    let (long, short, heads) = rt.block_on(async {
        let e = writer(RedbStore::open(&path).await.unwrap(), 2);
        let long = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        let short = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        for i in 0..6 {
            let text = format!("{i}{}", "x".repeat(250_000));
            e.message(&me(), &long, text.as_str()).await.unwrap();
            e.message(&me(), &short, "hi").await.unwrap();
        }
        let snap = e.store().side(SideSpace::Snapshot, &long).await.unwrap();
        let n = snap.map_or(0, |s| s.len());
        assert!(
            n > 1 << 20,
            "the long snapshot passes 1 MiB: {n} at head {}",
            e.store().head(&long).await.unwrap()
        );
        let heads = (
            e.store().head(&long).await.unwrap(),
            e.store().head(&short).await.unwrap(),
        );
        e.close().await.unwrap();
        (long, short, heads)
    });
    // The snapshot covers the head: the hydrate reads the event at the
    // head (a check), restores, then reads the tail after it.
    let reads = hydrate_stamped(&path, &long);
    assert!(
        ticks_after(&reads, heads.0 - 1) > 0,
        "the restore ran in place: {reads:?}"
    );
    let reads = hydrate_stamped(&path, &short);
    assert_eq!(ticks_after(&reads, heads.1 - 1), 0, "{reads:?}");
}

#[test]
fn a_long_replay_checks_each_page_off_the_async_thread() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let path = dir.path().join("replay.redb");
    // 1,100 messages and no snapshot: a first page of 1,024 events, then
    // the rest.
    let sid = rt.block_on(async {
        let e = writer(RedbStore::open(&path).await.unwrap(), u64::MAX);
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
        for seq in first + 1..=first + 1_100 {
            let mut m = template.clone();
            m["eventId"] = format!("event-{seq}").into();
            m["messageId"] = format!("message-{seq}").into();
            m["sessionSequence"] = seq.into();
            records.push(serde_json::to_vec(&m).unwrap());
        }
        std::fs::remove_file(&path).unwrap();
        let e = writer(RedbStore::open(&path).await.unwrap(), u64::MAX);
        let (sid, n) = e.import(&me(), &records).await.unwrap();
        assert_eq!(n as usize, records.len());
        e.close().await.unwrap();
        sid
    });
    let reads = hydrate_stamped(&path, &sid);
    assert!(
        ticks_after(&reads, 0) > 0,
        "the first page was checked in place: {reads:?}"
    );
}
