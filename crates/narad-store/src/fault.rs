//! A fault-injecting [`Store`] wrapper for tests (feature `test-suite`).
//!
//! [`FaultStore`] passes every call to a real store (and tells an
//! observer, if one is set, when each is made and returns), except the
//! calls its [`Rule`]s pick: the Nth call (1-based, counted per [`Method`]) fails,
//! hangs, or has an unknown outcome. A failed fsync is modelled by the two
//! append faults: the write never happened ([`Fault::Fail`]) or it committed
//! and the caller still got an error ([`Fault::CommitThenFail`]).
//!
//! ```
//! # async fn demo<S: narad_store::Store>(real: S) {
//! use narad_store::fault::{Fault, FaultStore, Method, Rule};
//! let store = FaultStore::new(real);
//! // The second append commits, then reports a backend error.
//! store.add(Rule::nth(Method::Append, 2, Fault::CommitThenFail));
//! // Every read of a journal page, when it is made and when it returns.
//! store.observe(|method, stage| {
//!     if method == Method::ReadSession {
//!         println!("read_session {stage:?}");
//!     }
//! });
//! # }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;

use crate::{
    Appended, Batch, Page, SideSpace, Store, StoreError, StoredEvent, Subscription, WatchPage,
};

/// A store method a [`Rule`] targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// [`Store::append`].
    Append,
    /// [`Store::head`].
    Head,
    /// [`Store::read_session`].
    ReadSession,
    /// [`Store::read_run`].
    ReadRun,
    /// [`Store::read_workflow`].
    ReadWorkflow,
    /// [`Store::list_sessions`].
    ListSessions,
    /// [`Store::side`].
    Side,
    /// [`Store::read_watch`].
    ReadWatch,
    /// [`Store::list_side`].
    ListSide,
    /// [`Store::list_workspaces`].
    ListWorkspaces,
    /// [`Store::find_events`].
    FindEvents,
}

const METHODS: usize = 11;

impl Method {
    const fn slot(self) -> usize {
        match self {
            Self::Append => 0,
            Self::Head => 1,
            Self::ReadSession => 2,
            Self::ReadRun => 3,
            Self::ReadWorkflow => 4,
            Self::ListSessions => 5,
            Self::Side => 6,
            Self::ReadWatch => 7,
            Self::ListSide => 8,
            Self::ListWorkspaces => 9,
            Self::FindEvents => 10,
        }
    }
}

/// What happens to a picked call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The inner store is not called; the caller gets a backend error
    /// (for an append: the fsync failed before anything was written).
    Fail,
    /// The call never returns; the caller's timeout ends it (dropping the
    /// future is safe: the inner store was not called).
    Hang,
    /// The inner store is called and its answer is replaced by a backend
    /// error (for an append: committed, then the caller lost the answer —
    /// an unknown outcome).
    CommitThenFail,
}

/// Picks calls `nth ..= nth + times - 1` of `method` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The method.
    pub method: Method,
    /// The first picked call, counting from 1.
    pub nth: u64,
    /// How many consecutive calls are picked.
    pub times: u64,
    /// What happens to them.
    pub fault: Fault,
}

impl Rule {
    /// The `nth` call of `method` only.
    pub const fn nth(method: Method, nth: u64, fault: Fault) -> Self {
        Self {
            method,
            nth,
            times: 1,
            fault,
        }
    }

    /// Picks `times` consecutive calls from the `nth` on.
    pub const fn times(mut self, times: u64) -> Self {
        self.times = times;
        self
    }
}

/// Where a call is, for an observer ([`FaultStore::observe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The call was made (before its fault, if one is picked).
    Called,
    /// The call returned (a hanging call never does).
    Returned,
}

type ObserverFn = dyn Fn(Method, Stage) + Send + Sync;

/// A test's hook on every call.
#[derive(Clone)]
struct Observer(Arc<ObserverFn>);

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer")
    }
}

/// The error the `n`th injected fault of a wrapper returns (counting
/// from 1), so a test can tell which failure a caller reported.
pub fn injected(n: u64) -> StoreError {
    StoreError::Backend(format!("injected fault {n}"))
}

/// A real store with faults injected on chosen calls.
#[derive(Debug)]
pub struct FaultStore<S> {
    inner: S,
    rules: Mutex<Vec<Rule>>,
    calls: [AtomicU64; METHODS],
    injected: AtomicU64,
    observer: Mutex<Option<Observer>>,
}

impl<S: Store> FaultStore<S> {
    /// Wraps `inner`; no faults until [`FaultStore::add`].
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            rules: Mutex::new(Vec::new()),
            calls: Default::default(),
            injected: AtomicU64::new(0),
            observer: Mutex::new(None),
        }
    }

    /// Calls `f` when each call is made and when it returns, on the
    /// caller's task (to see what a caller does between two calls).
    /// Replaces an earlier observer.
    pub fn observe(&self, f: impl Fn(Method, Stage) + Send + Sync + 'static) {
        if let Ok(mut o) = self.observer.lock() {
            *o = Some(Observer(Arc::new(f)));
        }
    }

    fn notify(&self, method: Method, stage: Stage) {
        let observer = self.observer.lock().ok().and_then(|o| o.clone());
        if let Some(Observer(f)) = observer {
            f(method, stage);
        }
    }

    /// Adds a rule (rules count calls from the wrapper's creation).
    pub fn add(&self, rule: Rule) {
        if let Ok(mut r) = self.rules.lock() {
            r.push(rule);
        }
    }

    /// Removes every rule.
    pub fn clear(&self) {
        if let Ok(mut r) = self.rules.lock() {
            r.clear();
        }
    }

    /// How many calls of `method` were made so far.
    pub fn calls(&self, method: Method) -> u64 {
        self.calls[method.slot()].load(Ordering::SeqCst)
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Counts a call of `method` and returns the fault picked for it, with
    /// its number among the faults injected.
    fn pick(&self, method: Method) -> Option<(Fault, u64)> {
        let n = self.calls[method.slot()].fetch_add(1, Ordering::SeqCst) + 1;
        let rules = self.rules.lock().ok()?;
        let fault = rules
            .iter()
            .find(|r| r.method == method && n >= r.nth && n - r.nth < r.times)
            .map(|r| r.fault)?;
        Some((fault, self.injected.fetch_add(1, Ordering::SeqCst) + 1))
    }

    async fn run<T>(
        &self,
        method: Method,
        call: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.notify(method, Stage::Called);
        let out = match self.pick(method) {
            None => call.await,
            Some((Fault::Fail, k)) => Err(injected(k)),
            Some((Fault::Hang, _)) => std::future::pending().await,
            Some((Fault::CommitThenFail, k)) => {
                let _ = call.await;
                Err(injected(k))
            }
        };
        self.notify(method, Stage::Returned);
        out
    }
}

#[async_trait]
impl<S: Store> Store for FaultStore<S> {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.run(Method::Append, self.inner.append(batch)).await
    }

    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        self.run(Method::Head, self.inner.head(session_id)).await
    }

    async fn read_session(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.run(
            Method::ReadSession,
            self.inner.read_session(session_id, after, limit),
        )
        .await
    }

    async fn find_events(
        &self,
        session_id: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.run(
            Method::FindEvents,
            self.inner.find_events(session_id, event_ids),
        )
        .await
    }

    async fn read_run(
        &self,
        session_id: &str,
        root_run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.run(
            Method::ReadRun,
            self.inner.read_run(session_id, root_run_id, after, limit),
        )
        .await
    }

    async fn read_workflow(
        &self,
        session_id: &str,
        workflow_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.run(
            Method::ReadWorkflow,
            self.inner
                .read_workflow(session_id, workflow_id, after, limit),
        )
        .await
    }

    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.run(Method::ListSessions, self.inner.list_sessions(after, limit))
            .await
    }

    async fn side(&self, space: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        self.run(Method::Side, self.inner.side(space, key)).await
    }

    async fn list_side(
        &self,
        space: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError> {
        self.run(Method::ListSide, self.inner.list_side(space, after, limit))
            .await
    }

    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.run(
            Method::ListWorkspaces,
            self.inner.list_workspaces(after, limit),
        )
        .await
    }

    async fn read_watch(
        &self,
        workspace_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<WatchPage, StoreError> {
        self.run(
            Method::ReadWatch,
            self.inner.read_watch(workspace_id, after, limit),
        )
        .await
    }

    fn subscribe(&self) -> Subscription {
        self.inner.subscribe()
    }

    async fn close(&self) -> Result<(), StoreError> {
        self.inner.close().await
    }
}
