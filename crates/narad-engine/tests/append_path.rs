//! The one append path and the one bounded retry, over a real redb store
//! wrapped to lose an append's outcome after it applied, or to make every
//! executor record write lose its condition.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use common::{me, types};
use narad_engine::{
    AllowAll, Engine, EngineConfig, Interrupt, ManualClock, NewSession, SequentialIds, StartRun,
    Started,
};
use narad_store::{
    Appended, Batch, HistoryQuery, Page, SideSpace, Store, StoreError, StoredEvent, Subscription,
    WatchPage,
};
use narad_store_redb::RedbStore;

/// A real store whose next append applies but answers a backend error (a
/// lost connection), or whose executor record writes all lose.
struct Faulty {
    inner: RedbStore,
    lose_next: AtomicBool,
    conflict_leases: AtomicBool,
}

#[async_trait]
impl Store for Faulty {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        let lease_write = batch
            .side
            .iter()
            .any(|w| w.space == SideSpace::Lease && w.key != "*");
        if lease_write && self.conflict_leases.load(Ordering::SeqCst) {
            return Err(StoreError::SideConflict);
        }
        let r = self.inner.append(batch).await;
        if r.is_ok() && self.lose_next.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Backend("connection lost".into()));
        }
        r
    }
    async fn head(&self, s: &str) -> Result<u64, StoreError> {
        self.inner.head(s).await
    }
    async fn read_session(&self, s: &str, after: u64, limit: usize) -> Result<Page, StoreError> {
        self.inner.read_session(s, after, limit).await
    }
    async fn find_events(&self, s: &str, ids: &[&str]) -> Result<Vec<StoredEvent>, StoreError> {
        self.inner.find_events(s, ids).await
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

async fn engine(dir: &std::path::Path) -> Engine<Faulty> {
    Engine::with_host(
        Faulty {
            inner: RedbStore::open(dir.join("f.redb")).await.unwrap(),
            lose_next: AtomicBool::new(false),
            conflict_leases: AtomicBool::new(false),
        },
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        EngineConfig {
            max_retries: 3,
            ..EngineConfig::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_that_applied_but_lost_its_answer_is_resolved_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    // A side-only batch: the redelivery meets the session record it wrote.
    e.store().lose_next.store(true, Ordering::SeqCst);
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let Started::Running(run) = e.start_run(&me(), &sid, StartRun::default()).await.unwrap() else {
        panic!("queued")
    };
    // Events plus a side record (the interrupt index): the redelivery meets
    // a moved head, and the index holding exactly its bytes.
    e.store().lose_next.store(true, Ordering::SeqCst);
    e.request_interrupt(
        &me(),
        &sid,
        Interrupt::on_run(run, "approval", ["approve", "deny"]),
    )
    .await
    .unwrap();
    assert_eq!(
        types(&e, &sid).await,
        ["run.started", "interrupt.requested", "run.paused"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_record_that_keeps_losing_ends_contended() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    e.store().conflict_leases.store(true, Ordering::SeqCst);
    // It used to re-read and retry without bound.
    let err = e.attach_client(&me(), "desktop-1").await.unwrap_err();
    assert_eq!(err.code(), "contended");
}
