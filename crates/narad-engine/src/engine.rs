//! The engine: per-session serialization, the command → check → append
//! loop, optimistic-concurrency retry, and the bounded session cache.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use narad_core::checker::Slot;
use narad_core::ProfileSet;
use narad_store::{
    Batch, Expect, HistoryQuery, Page, SideSpace, SideWrite, Store, StoreError, StoredEvent,
};
use serde_json::{json, Value};

use crate::error::EngineError;
use crate::host::{timestamp, Action, AllowAll, Authorizer, Clock, IdSource, Principal};
use crate::host::{RandomIds, SystemClock};
use crate::journal::{At, Draft, Journal, Meta};
use crate::subscribe::Follow;

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How many sessions stay hydrated in memory; colder ones are dropped
    /// and rebuilt from the store on their next command.
    pub cached_sessions: usize,
    /// How long a client lease lives without a heartbeat.
    pub lease_ttl: std::time::Duration,
    /// The heartbeat interval negotiated on attach.
    pub heartbeat_interval: std::time::Duration,
    /// How long an execution token is valid.
    pub token_ttl: std::time::Duration,
    /// How often a command is re-checked after another writer moved the
    /// session head before it gives up with `contended`.
    pub max_retries: usize,
    /// The largest history page a read returns.
    pub history_limit: usize,
    /// Write a reducer snapshot (in the same batch) once this many events
    /// were appended since the last one; cold sessions then hydrate from it
    /// plus the tail. `0` turns automatic snapshots off.
    pub snapshot_every: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            cached_sessions: 1024,
            lease_ttl: std::time::Duration::from_secs(45),
            heartbeat_interval: std::time::Duration::from_secs(15),
            token_ttl: std::time::Duration::from_secs(300),
            max_retries: 16,
            history_limit: 1000,
            snapshot_every: 10_000,
        }
    }
}

/// A new session.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Its id; a fresh unguessable one when `None`.
    pub session_id: Option<String>,
    /// Its active profiles, fixed for its life (default: all).
    pub profiles: Option<ProfileSet>,
    /// The workspace whose watch stream announces it (`session.created`).
    pub workspace_id: Option<String>,
}

/// A run to start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartRun {
    /// Its id; fresh when `None`.
    pub run_id: Option<String>,
    /// The parent, for a nested run (its tree and workflow are inherited).
    pub parent_run_id: Option<String>,
    /// The workflow of a top-level workflow run.
    pub workflow_id: Option<String>,
    /// The client executor bound to the run (§3.3), recorded explicitly.
    pub client_executor_id: Option<String>,
    /// When the session slot is busy: wait for it instead of refusing.
    pub queue_if_busy: bool,
}

/// What `start_run` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// `run.started` is durable.
    Running(String),
    /// The slot is busy; the run starts when it frees (held in memory by
    /// this engine: a restart forgets queued starts, never started runs).
    Queued(String),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    /// `run.finished`, with optional usage and artifacts.
    Finished {
        /// Token usage object.
        usage: Option<Value>,
        /// Produced artifacts.
        artifact_ids: Vec<String>,
    },
    /// `run.error`; the message must be user-safe (it is journaled).
    Error {
        /// Error code.
        code: String,
        /// User-safe message.
        message: String,
        /// Token usage so far.
        usage: Option<Value>,
    },
    /// `run.cancelled`.
    Cancelled {
        /// Optional code.
        code: Option<String>,
        /// Optional user-safe message.
        message: Option<String>,
        /// Token usage so far.
        usage: Option<Value>,
    },
}

/// A tool call's outcome (§7.9).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// `success`, `error` or `cancelled`.
    pub outcome: &'static str,
    /// Any JSON value.
    pub response: Value,
    /// Optional code.
    pub code: Option<String>,
    /// Optional user-safe message.
    pub message: Option<String>,
}

impl ToolOutcome {
    /// A successful result.
    pub fn success(response: Value) -> Self {
        Self {
            outcome: "success",
            response,
            code: None,
            message: None,
        }
    }
}

/// Where an interrupt waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterruptScope {
    /// On a run (the run pauses).
    Run(String),
    /// On a workflow (the workflow pauses).
    Workflow(String),
}

/// An interrupt to request.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupt {
    /// Run or workflow.
    pub scope: InterruptScope,
    /// Kind, e.g. `approval`.
    pub kind: String,
    /// Offered actions.
    pub actions: Vec<String>,
    /// Optional `input` object (HITL `members` live here).
    pub input: Option<Value>,
    /// When the engine resolves it as `expired` ([`Engine::expire_due`]).
    pub expires_at: Option<std::time::SystemTime>,
}

/// A resolution of an open interrupt, by `interruptId` alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolve {
    /// The interrupt.
    pub interrupt_id: String,
    /// One of its actions (or `expired`).
    pub decision: String,
    /// Optional reason.
    pub reason: Option<String>,
    /// The owning journal's position the caller saw: run-tree `sequence` for
    /// a run interrupt, `workflowSequence` for a workflow one.
    pub expected_revision: Option<u64>,
    /// HITL members' decisions.
    pub members: Option<Value>,
}

/// What to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopTarget {
    /// The session's active top-level run (`stop-active-root`).
    ActiveRoot,
    /// One run and everything under it.
    Run(String),
}

/// The capability record of §10.4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// `narad/v1`.
    pub protocol_version: &'static str,
    /// The session's active profiles (core first).
    pub active_profiles: Vec<&'static str>,
    /// The largest history page.
    pub history_limit: usize,
    /// The current `sessionSequence`.
    pub session_sequence: u64,
    /// The active top-level execution.
    pub active_execution: Option<Slot>,
}

type Cell = Arc<tokio::sync::Mutex<Option<Journal>>>;

/// Counters of what the engine did, for tests and operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineStats {
    /// Sessions rebuilt from the store.
    pub hydrations: u64,
    /// Of those, how many started from a reducer snapshot.
    pub from_snapshot: u64,
    /// Commands re-checked after another writer moved the head.
    pub retries: u64,
}

#[derive(Debug, Default)]
struct Counters {
    hydrations: AtomicU64,
    from_snapshot: AtomicU64,
    retries: AtomicU64,
}

pub(crate) struct Inner<S> {
    pub(crate) store: Arc<S>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdSource>,
    auth: Arc<dyn Authorizer>,
    pub(crate) config: EngineConfig,
    cells: Mutex<HashMap<String, Cell>>,
    counters: Counters,
    /// The newest watch revision this engine wrote or was told of, per
    /// workspace (a hint; the store decides).
    workspace_revisions: Mutex<HashMap<String, u64>>,
    pub(crate) clients: crate::client::Clients,
}

/// The embedded Narad host over a [`Store`]. Cheap to clone.
///
/// ```
/// # async fn demo() -> Result<(), narad_engine::EngineError> {
/// use narad_engine::{Engine, NewSession, Principal, StartRun, Started, Terminal};
/// let dir = std::env::temp_dir().join(format!("narad-doc-{}", std::process::id()));
/// let store = narad_store_redb::RedbStore::open(dir.with_extension("redb")).await?;
/// let engine = Engine::new(store);
/// let me = Principal::new("me");
/// let sid = engine.create_session(&me, NewSession::default()).await?;
/// let Started::Running(run) = engine.start_run(&me, &sid, StartRun::default()).await? else {
///     unreachable!()
/// };
/// // A second top-level start while the first runs breaks §3.1:
/// let err = engine.start_run(&me, &sid, StartRun::default()).await.unwrap_err();
/// assert_eq!(err.code(), "session_slot_busy");
/// engine
///     .end_run(&me, &sid, &run, Terminal::Finished { usage: None, artifact_ids: vec![] })
///     .await?;
/// # Ok(()) }
/// ```
pub struct Engine<S> {
    pub(crate) inner: Arc<Inner<S>>,
}

impl<S> Clone for Engine<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S> std::fmt::Debug for Engine<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

pub(crate) fn side(space: SideSpace, key: &str, expect: Expect, value: Vec<u8>) -> SideWrite {
    SideWrite {
        space,
        key: key.to_owned(),
        expect,
        value: Some(Bytes::from(value)),
    }
}

/// The drafts and side writes of one command, and what it returns.
pub(crate) struct Plan<T> {
    pub(crate) drafts: Vec<Draft>,
    pub(crate) side: Vec<SideWrite>,
    pub(crate) out: T,
}

impl<T> Plan<T> {
    pub(crate) fn of(drafts: Vec<Draft>, out: T) -> Self {
        Self {
            drafts,
            side: Vec::new(),
            out,
        }
    }
}

impl<S: Store + 'static> Engine<S> {
    /// An engine with the system clock, random ids and no authorization.
    pub fn new(store: S) -> Self {
        Self::with_host(
            store,
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            Arc::new(AllowAll),
            EngineConfig::default(),
        )
    }

    /// An engine with an injected clock, id source and authorizer.
    pub fn with_host(
        store: S,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
        auth: Arc<dyn Authorizer>,
        config: EngineConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: Arc::new(store),
                clock,
                ids,
                auth,
                config,
                cells: Mutex::new(HashMap::new()),
                counters: Counters::default(),
                workspace_revisions: Mutex::new(HashMap::new()),
                clients: crate::client::Clients::default(),
            }),
        }
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        &self.inner.store
    }

    pub(crate) fn authorize(&self, p: &Principal, action: Action<'_>) -> Result<(), EngineError> {
        if !self.inner.auth.allows(p, action) {
            return Err(EngineError::NotAuthorized);
        }
        if let Action::Write { event_type, .. } = action {
            if (event_type.starts_with("trace.") || event_type.starts_with("debug."))
                && !self.inner.auth.may_debug(p)
            {
                return Err(EngineError::NotAuthorized);
            }
        }
        Ok(())
    }

    fn cell(&self, session_id: &str) -> Cell {
        let mut cells = match self.inner.cells.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(c) = cells.get(session_id) {
            return Arc::clone(c);
        }
        if cells.len() >= self.inner.config.cached_sessions {
            // Drop idle sessions (nobody holds their lock) until under the bound.
            let idle: Vec<String> = cells
                .iter()
                .filter(|(_, c)| {
                    // Idle (only the map holds it) and no queued start to lose.
                    Arc::strong_count(c) == 1
                        && c.try_lock()
                            .is_ok_and(|j| j.as_ref().is_none_or(|j| j.queue.is_empty()))
                })
                .map(|(k, _)| k.clone())
                .take(cells.len() + 1 - self.inner.config.cached_sessions)
                .collect();
            for k in idle {
                cells.remove(&k);
            }
        }
        let c: Cell = Arc::new(tokio::sync::Mutex::new(None));
        cells.insert(session_id.to_owned(), Arc::clone(&c));
        c
    }

    /// Whether a refusal `e` was decided on a journal older than the store's
    /// (another writer appended since we loaded it).
    async fn stale(
        &self,
        held: u64,
        session_id: &str,
        e: &EngineError,
    ) -> Result<bool, EngineError> {
        let decided_on_state = matches!(
            e,
            EngineError::Rejected { .. }
                | EngineError::UnknownRun
                | EngineError::UnknownToolCall
                | EngineError::UnknownInterrupt
                | EngineError::RevisionConflict { .. }
        );
        if !decided_on_state {
            return Ok(false);
        }
        let current = self.inner.store.head(session_id).await?;
        if current != held {
            self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
        }
        Ok(current != held)
    }

    /// Appends; when the outcome is unknown (the backend failed, e.g. a
    /// lost connection) redelivers the **same** batch — same event ids — a
    /// few times: the store recognizes it if it was applied, or applies it
    /// now, and never twice. Nothing is guessed.
    async fn append_resolving(&self, batch: Batch) -> Result<narad_store::Appended, StoreError> {
        let mut backoff = std::time::Duration::from_millis(20);
        let mut outcome = self.inner.store.append(batch.clone()).await;
        for _ in 0..4 {
            match outcome {
                Err(StoreError::Backend(_)) => {
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                    outcome = self.inner.store.append(batch.clone()).await;
                }
                done => return done,
            }
        }
        outcome
    }

    async fn hydrate(&self, session_id: &str) -> Result<Journal, EngineError> {
        let meta = self.meta(session_id).await?;
        let j = Journal::hydrate(&*self.inner.store, session_id, meta).await?;
        let c = &self.inner.counters;
        c.hydrations.fetch_add(1, Ordering::Relaxed);
        if j.from_snapshot {
            c.from_snapshot.fetch_add(1, Ordering::Relaxed);
        }
        Ok(j)
    }

    /// What the engine did so far.
    pub fn stats(&self) -> EngineStats {
        let c = &self.inner.counters;
        EngineStats {
            hydrations: c.hydrations.load(Ordering::Relaxed),
            from_snapshot: c.from_snapshot.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
        }
    }

    /// How many sessions are hydrated in memory now.
    pub fn cached_sessions(&self) -> usize {
        self.inner.cells.lock().map_or(0, |c| c.len())
    }

    async fn meta(&self, session_id: &str) -> Result<Meta, EngineError> {
        match self
            .inner
            .store
            .side(SideSpace::Session, session_id)
            .await?
        {
            Some(b) => Meta::decode(&b),
            None => Err(EngineError::UnknownSession),
        }
    }

    /// Creates a session with its profiles fixed.
    pub async fn create_session(
        &self,
        p: &Principal,
        new: NewSession,
    ) -> Result<String, EngineError> {
        self.authorize(p, Action::CreateSession)?;
        let sid = new
            .session_id
            .unwrap_or_else(|| self.inner.ids.next_id("session"));
        if sid.is_empty() {
            return Err(EngineError::InvalidCommand("empty session id".into()));
        }
        let meta = Meta {
            profiles: new.profiles.unwrap_or_default(),
            workspace_id: new.workspace_id,
        };
        let batch = Batch {
            session_id: sid.clone(),
            expected_head: 0,
            side: vec![side(
                SideSpace::Session,
                &sid,
                Expect::Absent,
                meta.encode(),
            )],
            ..Batch::default()
        };
        match self
            .append_watch(batch, meta.workspace_id.as_deref(), "session.created", &sid)
            .await
        {
            Ok(_) => Ok(sid),
            Err(StoreError::SideConflict) => Err(EngineError::SessionExists),
            Err(e) => Err(e.into()),
        }
    }

    /// A workspace watch event for `sid` at `revision`, or else at the one
    /// after the newest this engine knows for the workspace. A guess that is
    /// not newer is refused by the store with the current revision, which
    /// the caller retries after ([`Engine::append_watch`]), so no scan of
    /// the stream is needed.
    fn workspace_notice(
        &self,
        ws: &str,
        ty: &str,
        sid: &str,
        revision: Option<u64>,
    ) -> Result<narad_store::WatchWrite, EngineError> {
        let revision = revision.unwrap_or_else(|| {
            self.inner
                .workspace_revisions
                .lock()
                .map_or(0, |m| m.get(ws).copied().unwrap_or(0))
                + 1
        });
        let event_id = self.inner.ids.next_id("evt");
        let bytes = serde_json::to_vec(&json!({
            "type": ty, "protocolVersion": narad_core::PROTOCOL_VERSION,
            "eventId": event_id, "timestamp": timestamp(self.inner.clock.now()),
            "workspaceId": ws, "sessionId": sid, "revision": revision
        }))
        .map_err(|e| EngineError::InvalidCommand(e.to_string()))?;
        Ok(narad_store::WatchWrite {
            workspace_id: ws.to_owned(),
            event: narad_store::StoredWatch {
                event_id,
                revision,
                bytes: Bytes::from(bytes),
            },
        })
    }

    /// Appends `batch` plus a workspace watch event `ty` for `sid` (when
    /// the session has a workspace), moving the revision past another
    /// writer's when the store reports one. Returns the revision used.
    async fn append_watch(
        &self,
        batch: Batch,
        ws: Option<&str>,
        ty: &str,
        sid: &str,
    ) -> Result<u64, StoreError> {
        let mut revision = None;
        for _ in 0..=self.inner.config.max_retries {
            let mut b = batch.clone();
            let mut rev = 0;
            if let Some(ws) = ws {
                let w = self
                    .workspace_notice(ws, ty, sid, revision)
                    .map_err(|e| StoreError::Backend(e.to_string()))?;
                rev = w.event.revision;
                b.watch.push(w);
            }
            match self.inner.store.append(b).await {
                Ok(_) => {
                    if let (Some(ws), Ok(mut m)) = (ws, self.inner.workspace_revisions.lock()) {
                        let known = m.entry(ws.to_owned()).or_default();
                        *known = (*known).max(rev);
                    }
                    return Ok(rev);
                }
                // Another session of the workspace took that revision.
                Err(StoreError::RevisionRegression { current }) => revision = Some(current + 1),
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Backend("workspace revision kept moving".into()))
    }

    /// The command loop: hydrate if needed, plan from the reduced state,
    /// check every drafted event, append atomically; when another writer
    /// moved the head, reload and plan again.
    pub(crate) async fn command<T>(
        &self,
        p: &Principal,
        session_id: &str,
        plan: impl Fn(&Journal) -> Result<Plan<T>, EngineError>,
    ) -> Result<(T, Vec<StoredEvent>), EngineError> {
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        for _ in 0..=self.inner.config.max_retries {
            if slot.is_none() {
                *slot = Some(self.hydrate(session_id).await?);
            }
            let Some(j) = slot.as_mut() else {
                continue;
            };
            let planned = plan(j);
            let Plan { drafts, side, out } = match planned {
                Ok(p) => p,
                Err(e) => {
                    // Refused on what we hold: make sure it is current.
                    if self.stale(j.head, session_id, &e).await? {
                        *slot = None;
                        continue;
                    }
                    return Err(e);
                }
            };
            let Some(first) = drafts.first() else {
                if side.is_empty() {
                    // A read: answer from the current journal, not a cache
                    // another engine has moved past.
                    if self.inner.store.head(session_id).await? != j.head {
                        *slot = None;
                        continue;
                    }
                    return Ok((out, Vec::new()));
                }
                // Side records only, still guarded by the head the plan saw.
                let batch = Batch {
                    session_id: session_id.to_owned(),
                    expected_head: j.head,
                    side,
                    ..Batch::default()
                };
                match self.inner.store.append(batch).await {
                    Ok(_) => return Ok((out, Vec::new())),
                    Err(StoreError::HeadConflict { .. }) => {
                        *slot = None;
                        self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            self.authorize(
                p,
                Action::Write {
                    session_id,
                    event_type: first.ty,
                },
            )?;
            for d in &drafts {
                let profile = narad_core::registry::lookup(d.ty).map(|t| t.profile);
                if profile.is_some_and(|pr| !j.meta.profiles.contains(pr)) {
                    return Err(EngineError::ProfileInactive {
                        event_type: d.ty.to_owned(),
                    });
                }
            }
            let now = timestamp(self.inner.clock.now());
            let events = match j.apply(drafts, &*self.inner.ids, &now) {
                Ok(evs) => evs,
                Err((e, dirty)) => {
                    let head = j.head;
                    if dirty {
                        *slot = None;
                    }
                    // Another engine may have moved the session on: a rule
                    // refusal is final only against the current journal.
                    if self.stale(head, session_id, &e).await? {
                        *slot = None;
                        continue;
                    }
                    return Err(e);
                }
            };
            let mut side = side;
            let new_head = j.head + events.len() as u64;
            let every = self.inner.config.snapshot_every;
            let snapshot = every > 0 && new_head - j.snapshot_head >= every;
            if snapshot {
                side.push(SideWrite {
                    space: SideSpace::Snapshot,
                    key: session_id.to_owned(),
                    expect: Expect::Any,
                    value: Some(Bytes::from(j.encode_snapshot(new_head))),
                });
            }
            let batch = Batch {
                session_id: session_id.to_owned(),
                expected_head: j.head,
                events: events.clone(),
                side,
                watch: Vec::new(),
            };
            // The journal already applied the events. Until the store answers,
            // the slot holds nothing: a caller that gives up mid-append
            // (drops this future) leaves the session to rehydrate from the
            // store, not a journal ahead of it.
            let mut held = slot.take();
            match self.append_resolving(batch).await {
                Ok(done) => {
                    if let Some(j) = held.as_mut() {
                        j.head = done.head;
                        if snapshot {
                            j.snapshot_head = done.head;
                        }
                    }
                    *slot = held;
                    return Ok((out, events));
                }
                Err(StoreError::HeadConflict { .. }) => {
                    // Another engine wrote first: reload and re-check.
                    self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(EngineError::Contended)
    }

    /// Starts a run: top-level (independent or in a workflow) or nested.
    pub async fn start_run(
        &self,
        p: &Principal,
        session_id: &str,
        start: StartRun,
    ) -> Result<Started, EngineError> {
        let run_id = start
            .run_id
            .clone()
            .unwrap_or_else(|| self.inner.ids.next_id("run"));
        let result = self
            .command(p, session_id, |j| {
                let sid = &j.session_id;
                let (root, workflow, inherited) = match &start.parent_run_id {
                    Some(parent) => {
                        let pr = j.checker.run(sid, parent).ok_or(EngineError::UnknownRun)?;
                        (
                            pr.root.clone(),
                            pr.workflow.clone(),
                            pr.client_executor.clone(),
                        )
                    }
                    None => (run_id.clone(), start.workflow_id.clone(), None),
                };
                // A nested run records its executor binding explicitly: the
                // one asked for, else its parent's.
                let executor = start.client_executor_id.clone().or(inherited);
                if start.parent_run_id.is_none() && start.queue_if_busy && slot_busy(j, &start) {
                    return Ok(Plan::of(Vec::new(), false));
                }
                let body = json!({
                    "parentRunId": start.parent_run_id,
                    "clientExecutorId": executor,
                });
                let draft = Draft::new(
                    "run.started",
                    At::Run {
                        run: run_id.clone(),
                        root,
                        workflow,
                    },
                    strip_nulls(body),
                );
                Ok(Plan::of(vec![draft], true))
            })
            .await?;
        if result.0 {
            return Ok(Started::Running(run_id));
        }
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        if let Some(j) = slot.as_mut() {
            j.queue.push_back(StartRun {
                run_id: Some(run_id.clone()),
                queue_if_busy: false,
                ..start
            });
        }
        Ok(Started::Queued(run_id))
    }

    /// Starts the next queued top-level run if the slot is free.
    async fn drain_queue(&self, p: &Principal, session_id: &str) -> Result<(), EngineError> {
        let next = {
            let cell = self.cell(session_id);
            let mut slot = cell.lock().await;
            match slot.as_mut() {
                Some(j) if j.checker.slot(session_id).is_none() => j.queue.pop_front(),
                _ => None,
            }
        };
        if let Some(start) = next {
            Box::pin(self.start_run(p, session_id, start)).await?;
        }
        Ok(())
    }

    /// Starts a tool call on a running run; returns its `toolCallId`.
    pub async fn start_tool_call(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        let id = self.inner.ids.next_id("tool");
        self.command(p, session_id, |j| {
            let body = json!({"toolCallId": id, "toolName": tool_name, "executor": "backend", "args": args});
            Ok(Plan::of(
                vec![Draft::new("tool.call.started", j.run_at(run_id)?, body)],
                (),
            ))
        })
        .await?;
        Ok(id)
    }

    /// Finishes a tool call (exactly once, §7.9).
    pub async fn finish_tool_call(
        &self,
        p: &Principal,
        session_id: &str,
        tool_call_id: &str,
        outcome: ToolOutcome,
    ) -> Result<(), EngineError> {
        self.command(p, session_id, |j| {
            let (run, _) = j
                .checker
                .tool_call(&j.session_id, tool_call_id)
                .ok_or(EngineError::UnknownToolCall)?;
            let mut body = strip_nulls(json!({
                "toolCallId": tool_call_id, "outcome": outcome.outcome,
                "code": outcome.code, "message": outcome.message.as_deref().map(sanitize)
            }));
            // `response` is required and may be null (§7.9).
            body["response"] = outcome.response.clone();
            Ok(Plan::of(
                vec![Draft::new("tool.call.finished", j.run_at(run)?, body)],
                (),
            ))
        })
        .await
        .map(|_| ())
    }

    /// Pauses a run without an interrupt; returns the `waitId`.
    pub async fn pause_run(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        reason: &str,
        automatic: bool,
    ) -> Result<String, EngineError> {
        let wait = self.inner.ids.next_id("wait");
        let mode = if automatic { "automatic" } else { "command" };
        self.command(p, session_id, |j| {
            let body = json!({"waitId": wait, "reason": reason, "resumeMode": mode});
            Ok(Plan::of(
                vec![Draft::new("run.paused", j.run_at(run_id)?, body)],
                (),
            ))
        })
        .await?;
        Ok(wait)
    }

    /// Resumes a paused run; `wait_id` must be its active pause's.
    pub async fn resume_run(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        wait_id: &str,
    ) -> Result<(), EngineError> {
        self.command(p, session_id, |j| {
            Ok(Plan::of(
                vec![Draft::new(
                    "run.resumed",
                    j.run_at(run_id)?,
                    json!({ "waitId": wait_id }),
                )],
                (),
            ))
        })
        .await
        .map(|_| ())
    }

    /// Ends a run. Open work (tool calls, children, a pause) must be closed
    /// first; the checker refuses otherwise (`open_work`, `run_paused`).
    pub async fn end_run(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        terminal: Terminal,
    ) -> Result<(), EngineError> {
        self.command(p, session_id, |j| {
            Ok(Plan::of(
                vec![terminal_draft(j.run_at(run_id)?, &terminal)],
                (),
            ))
        })
        .await?;
        self.drain_queue(p, session_id).await
    }

    /// Requests an interrupt; the matching pause is appended in the same
    /// atomic batch, so adjacency (§7.6) holds by construction. Returns
    /// `(interruptId, waitId)`.
    pub async fn request_interrupt(
        &self,
        p: &Principal,
        session_id: &str,
        interrupt: Interrupt,
    ) -> Result<(String, String), EngineError> {
        let iid = self.inner.ids.next_id("interrupt");
        let wait = self.inner.ids.next_id("wait");
        let (out, _) = self
            .command(p, session_id, |j| {
                let mut body = json!({
                    "interruptId": iid, "waitId": wait, "kind": interrupt.kind,
                    "actions": interrupt.actions, "input": interrupt.input,
                    "expiresAt": interrupt.expires_at.map(timestamp),
                });
                let drafts = match &interrupt.scope {
                    InterruptScope::Run(run) => {
                        let at = j.run_at(run)?;
                        vec![
                            Draft::new("interrupt.requested", at.clone(), strip_nulls(body)),
                            Draft::new(
                                "run.paused",
                                at,
                                json!({"waitId": wait, "reason": "interrupt",
                                       "resumeMode": "command", "interruptId": iid}),
                            ),
                        ]
                    }
                    InterruptScope::Workflow(wf) => {
                        body["scope"] = "workflow".into();
                        let at = At::Workflow(wf.clone());
                        vec![
                            Draft::new("interrupt.requested", at.clone(), strip_nulls(body)),
                            Draft::new(
                                "workflow.paused",
                                at,
                                json!({"waitId": wait, "interruptId": iid}),
                            ),
                        ]
                    }
                };
                let mut plan = Plan::of(drafts, ());
                // The global index that lets resolve-interrupt find the
                // owning session from the interrupt id alone.
                plan.side.push(side(
                    SideSpace::Interrupt,
                    &iid,
                    Expect::Absent,
                    j.session_id.clone().into_bytes(),
                ));
                Ok(plan)
            })
            .await?;
        let () = out;
        Ok((iid, wait))
    }

    /// `resolve-interrupt` (§2.2) by `interruptId` alone: finds the owning
    /// session and journal, checks `expectedRevision`, appends
    /// `interrupt.resolved` and the resume of the run or workflow.
    pub async fn resolve_interrupt(
        &self,
        p: &Principal,
        resolve: Resolve,
    ) -> Result<String, EngineError> {
        let sid = match self
            .inner
            .store
            .side(SideSpace::Interrupt, &resolve.interrupt_id)
            .await?
        {
            Some(b) => String::from_utf8(b.to_vec()).map_err(|_| EngineError::UnknownInterrupt)?,
            None => return Err(EngineError::UnknownInterrupt),
        };
        self.command(p, &sid, |j| {
            let s = &j.session_id;
            let owner = j
                .checker
                .runs(s)
                .find(|(_, r)| {
                    r.open_interrupt
                        .as_ref()
                        .is_some_and(|i| i.id == resolve.interrupt_id)
                })
                .map(|(id, r)| {
                    (
                        InterruptScope::Run(id.clone()),
                        r.open_interrupt.clone(),
                        r.root.clone(),
                    )
                })
                .or_else(|| {
                    j.checker
                        .workflows(s)
                        .find(|(_, w)| {
                            w.open_interrupt
                                .as_ref()
                                .is_some_and(|i| i.id == resolve.interrupt_id)
                        })
                        .map(|(id, w)| {
                            (
                                InterruptScope::Workflow(id.clone()),
                                w.open_interrupt.clone(),
                                id.clone(),
                            )
                        })
                });
            let Some((scope, Some(open), key)) = owner else {
                return Err(EngineError::UnknownInterrupt);
            };
            let (at, current) = match &scope {
                InterruptScope::Run(run) => (j.run_at(run)?, j.checker.run_head(s, &key)),
                InterruptScope::Workflow(wf) => {
                    (At::Workflow(wf.clone()), j.checker.workflow_head(s, wf))
                }
            };
            if let Some(expected) = resolve.expected_revision {
                if expected != current {
                    return Err(EngineError::RevisionConflict { expected, current });
                }
            }
            let mut body = strip_nulls(json!({
                "interruptId": open.id, "waitId": open.wait_id, "decision": resolve.decision,
                "reason": resolve.reason, "members": resolve.members,
            }));
            let resume = match &scope {
                InterruptScope::Run(_) => "run.resumed",
                InterruptScope::Workflow(_) => {
                    body["scope"] = "workflow".into();
                    "workflow.resumed"
                }
            };
            Ok(Plan::of(
                vec![
                    Draft::new("interrupt.resolved", at.clone(), body),
                    Draft::new(resume, at, json!({ "waitId": open.wait_id })),
                ],
                (),
            ))
        })
        .await?;
        Ok(sid)
    }

    /// Resolves every open interrupt whose `expiresAt` has passed on the
    /// engine's clock as `decision=expired` (§7.7) and resumes its run or
    /// workflow. Covers the sessions this engine holds in memory (a session
    /// is loaded by any command or read on it). Returns the expired ids.
    pub async fn expire_due(&self, p: &Principal) -> Result<Vec<String>, EngineError> {
        let now = self.inner.clock.now();
        let cells: Vec<Cell> = match self.inner.cells.lock() {
            Ok(c) => c.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        };
        let mut due = Vec::new();
        for cell in cells {
            if let Some(j) = cell.lock().await.as_ref() {
                due.extend(j.due(now));
            }
        }
        let mut expired = Vec::new();
        for id in due {
            let r = self
                .resolve_interrupt(
                    p,
                    Resolve {
                        interrupt_id: id.clone(),
                        decision: "expired".into(),
                        reason: None,
                        expected_revision: None,
                        members: None,
                    },
                )
                .await;
            match r {
                Ok(_) => expired.push(id),
                // Resolved meanwhile by someone else: nothing to expire.
                Err(EngineError::UnknownInterrupt) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(expired)
    }

    /// Stops a run (or the active root) and closes its open work by the
    /// engine's policy, deepest runs first: open tool calls finish as
    /// `cancelled`, an open interrupt resolves (`stop`, `cancel` or `deny`
    /// when offered, else `expired`), a pause resumes, and each run ends
    /// with `run.cancelled`. All of it is one atomic batch.
    pub async fn stop(
        &self,
        p: &Principal,
        session_id: &str,
        target: StopTarget,
    ) -> Result<String, EngineError> {
        let (target, _) = self
            .command(p, session_id, |j| {
                let s = &j.session_id;
                let target = match &target {
                    StopTarget::Run(r) => r.clone(),
                    StopTarget::ActiveRoot => match j.checker.slot(s) {
                        Some(Slot::Run(r)) => r.clone(),
                        Some(Slot::Workflow(w)) => j
                            .checker
                            .workflow(s, w)
                            .and_then(|w| w.active_top_run.clone())
                            .ok_or(EngineError::UnknownRun)?,
                        None => return Err(EngineError::UnknownRun),
                    },
                };
                let mut drafts = vec![Draft::new(
                    "run.stop.requested",
                    j.run_at(&target)?,
                    json!({ "targetRunId": target }),
                )];
                close_subtree(j, &target, &mut drafts)?;
                Ok(Plan::of(drafts, target))
            })
            .await?;
        self.drain_queue(p, session_id).await?;
        Ok(target)
    }

    /// The `message` command: `message.user.recorded` at session scope.
    /// Returns the `messageId`.
    pub async fn message(
        &self,
        p: &Principal,
        session_id: &str,
        content: Value,
    ) -> Result<String, EngineError> {
        let id = self.inner.ids.next_id("msg");
        self.command(p, session_id, |_| {
            Ok(Plan::of(
                vec![Draft::new(
                    "message.user.recorded",
                    At::Session,
                    json!({"messageId": id, "messageScope": "session", "content": content}),
                )],
                (),
            ))
        })
        .await?;
        Ok(id)
    }

    /// Appends one event of any profile (conversation, attachments,
    /// artifacts, state, ui, view, progress, extensions, trace, debug,
    /// workflow steps and edges, ...). The engine fills the envelope and
    /// every sequence; `body` holds the type's own fields. The checker
    /// refuses it if it breaks a rule; an inactive profile is refused.
    pub async fn append(
        &self,
        p: &Principal,
        session_id: &str,
        event_type: &str,
        scope: EventScope,
        body: Value,
    ) -> Result<StoredEvent, EngineError> {
        let Some(info) = narad_core::registry::lookup(event_type) else {
            return Err(EngineError::InvalidCommand(format!(
                "unknown event type `{event_type}`"
            )));
        };
        if !body.is_object() {
            return Err(EngineError::InvalidCommand("body must be an object".into()));
        }
        let (_, mut events) = self
            .command(p, session_id, |j| {
                let at = match &scope {
                    EventScope::Session => At::Session,
                    EventScope::Run(r) => j.run_at(r)?,
                    EventScope::Workflow(w) => At::Workflow(w.clone()),
                };
                Ok(Plan::of(vec![Draft::new(info.name, at, body.clone())], ()))
            })
            .await?;
        let ended = event_type.starts_with("workflow.")
            && matches!(
                event_type,
                "workflow.finished" | "workflow.error" | "workflow.cancelled"
            );
        if ended {
            self.drain_queue(p, session_id).await?;
        }
        events
            .pop()
            .ok_or_else(|| EngineError::InvalidCommand("nothing appended".into()))
    }

    /// Starts a workflow (the session slot, §3.1).
    pub async fn start_workflow(
        &self,
        p: &Principal,
        session_id: &str,
        workflow_id: Option<String>,
        default_client_executor_id: Option<String>,
    ) -> Result<String, EngineError> {
        let wf = workflow_id.unwrap_or_else(|| self.inner.ids.next_id("workflow"));
        self.append(
            p,
            session_id,
            "workflow.started",
            EventScope::Workflow(wf.clone()),
            strip_nulls(json!({ "defaultClientExecutorId": default_client_executor_id })),
        )
        .await?;
        Ok(wf)
    }

    /// Session history per §10.2 (combined cursors checked).
    pub async fn history(
        &self,
        p: &Principal,
        session_id: &str,
        query: &HistoryQuery,
    ) -> Result<Page, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let mut q = query.clone();
        q.limit = q.limit.min(self.inner.config.history_limit);
        Ok(self.inner.store.read_history(session_id, &q).await?)
    }

    /// Follows a session from `after` (a `sessionSequence`): replays to the
    /// head, then goes live, with no gap and no duplicate.
    pub async fn subscribe(
        &self,
        p: &Principal,
        session_id: &str,
        after: u64,
    ) -> Result<Follow<S>, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        self.meta(session_id).await?;
        Ok(Follow::new(
            Arc::clone(&self.inner.store),
            session_id,
            after,
            self.inner.config.history_limit,
        ))
    }

    /// Writes a reducer snapshot of the session at its head now (guarded by
    /// the head, so it never describes a journal it is not beside).
    pub async fn write_snapshot(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<u64, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        if slot.is_none() {
            *slot = Some(self.hydrate(session_id).await?);
        }
        let Some(j) = slot.as_mut() else {
            return Err(EngineError::UnknownSession);
        };
        let batch = Batch {
            session_id: session_id.to_owned(),
            expected_head: j.head,
            side: vec![SideWrite {
                space: SideSpace::Snapshot,
                key: session_id.to_owned(),
                expect: Expect::Any,
                value: Some(Bytes::from(j.encode_snapshot(j.head))),
            }],
            ..Batch::default()
        };
        match self.inner.store.append(batch).await {
            Ok(_) => {
                j.snapshot_head = j.head;
                Ok(j.head)
            }
            Err(e) => {
                *slot = None;
                Err(e.into())
            }
        }
    }

    /// Hydrate records of the session at its head: a `messages.snapshot`
    /// of the primary transcript if the conversation profile is active, a
    /// `graph.snapshot` of each run tree if the graph profile is. Send them
    /// on attach and whenever a client reports a revision gap.
    pub async fn hydrate_records(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<(u64, Vec<Bytes>), EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let ts = timestamp(self.inner.clock.now());
        let snapshot_id = self.inner.ids.next_id("snapshot");
        let (out, _) = self
            .command(p, session_id, |j| {
                let s = &j.session_id;
                let mut records = Vec::new();
                if j.meta.profiles.contains(narad_core::Profile::Conversation) {
                    let messages: Vec<Value> = j
                        .checker
                        .primary_transcript(s)
                        .into_iter()
                        .filter_map(|m| {
                            let content = match &m.redacted {
                                None => m.content.clone(),
                                Some(Some(shown)) => shown.clone(),
                                Some(None) => return None,
                            };
                            Some(json!({"messageId": m.message_id, "role": m.role, "content": content}))
                        })
                        .collect();
                    records.push(json!({
                        "type": "messages.snapshot", "protocolVersion": narad_core::PROTOCOL_VERSION,
                        "timestamp": ts, "snapshotId": snapshot_id, "sessionId": s,
                        "coversThroughSessionSequence": j.head, "messages": messages
                    }));
                }
                if j.meta.profiles.contains(narad_core::Profile::Graph) {
                    for (_, run) in j.checker.runs(s).filter(|(id, r)| **id == r.root) {
                        if let Some(g) = j.checker.graph(s, &run.root) {
                            if g.revision() > 0 {
                                let mut rec = g.snapshot_record(s, &ts);
                                rec["protocolVersion"] = narad_core::PROTOCOL_VERSION.into();
                                records.push(rec);
                            }
                        }
                    }
                }
                let bytes = records
                    .iter()
                    .map(|r| serde_json::to_vec(r).map(Bytes::from))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| EngineError::InvalidCommand(e.to_string()))?;
                Ok(Plan::of(Vec::new(), (j.head, bytes)))
            })
            .await?;
        Ok(out)
    }

    /// Attach (§10.3): capabilities, hydrate records at the head, and a
    /// follower from exactly that head.
    pub async fn attach(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<Attached<S>, EngineError> {
        // Subscribe first: commits after the boundary are then announced.
        let caps = self.capabilities(p, session_id).await?;
        let (head, hydrate) = self.hydrate_records(p, session_id).await?;
        let capabilities = Capabilities {
            session_sequence: head,
            ..caps
        };
        let follow = Follow::new(
            Arc::clone(&self.inner.store),
            session_id,
            head,
            self.inner.config.history_limit,
        );
        Ok(Attached {
            capabilities,
            hydrate,
            follow,
        })
    }

    /// The session's watch events (§8) after session position `after`.
    pub async fn watch(
        &self,
        p: &Principal,
        session_id: &str,
        after: u64,
    ) -> Result<crate::watch::WatchFollow<S>, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        self.meta(session_id).await?;
        Ok(crate::watch::WatchFollow::new(
            Arc::clone(&self.inner.store),
            Arc::clone(&self.inner.clock),
            session_id,
            after,
        ))
    }

    /// Announces a change of a session on its workspace's watch stream:
    /// `session.updated`, or `session.archived` when `archived`.
    pub async fn announce_session(
        &self,
        p: &Principal,
        session_id: &str,
        archived: bool,
    ) -> Result<u64, EngineError> {
        let kind = if archived {
            "session.archived"
        } else {
            "session.updated"
        };
        self.authorize(
            p,
            Action::Write {
                session_id,
                event_type: kind,
            },
        )?;
        let ws =
            self.meta(session_id).await?.workspace_id.ok_or_else(|| {
                EngineError::InvalidCommand("the session has no workspace".into())
            })?;
        Ok(self
            .append_watch(Batch::default(), Some(&ws), kind, session_id)
            .await?)
    }

    /// A workspace's watch stream after `after` (a revision).
    pub async fn workspace_watch(
        &self,
        p: &Principal,
        workspace_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<narad_store::WatchPage, EngineError> {
        self.authorize(p, Action::ReadWorkspace { workspace_id })?;
        Ok(self
            .inner
            .store
            .read_watch(
                workspace_id,
                after,
                limit.min(self.inner.config.history_limit),
            )
            .await?)
    }

    /// Imports one session's journal (JSONL records as bytes, in order):
    /// every event is checked after the session's stored journal by a fresh
    /// checker, already-stored events are recognized as redeliveries, and
    /// the new ones are appended in **one** batch — all or nothing. A new
    /// session gets all profiles. Returns `(session, events appended)`.
    pub async fn import(
        &self,
        p: &Principal,
        records: &[Vec<u8>],
    ) -> Result<(String, u64), EngineError> {
        self.authorize(p, Action::CreateSession)?;
        let validator = narad_core::Validator::default();
        let mut events = Vec::new();
        for (i, r) in records.iter().enumerate() {
            match validator.parse(r) {
                Ok(narad_core::Parsed::Record {
                    record: narad_core::Record::Authority(ev),
                    ..
                }) => events.push(ev),
                Ok(_) => {
                    return Err(EngineError::InvalidCommand(format!(
                        "record {} is not an authority event",
                        i + 1
                    )))
                }
                Err(e) => {
                    return Err(EngineError::Rejected {
                        code: e.code.as_str(),
                        section: "5",
                        message: format!("record {}: {e}", i + 1),
                    })
                }
            }
        }
        let Some(first) = events.first() else {
            return Err(EngineError::InvalidCommand("nothing to import".into()));
        };
        let sid = first.envelope.session_id.clone();
        if events.iter().any(|e| e.envelope.session_id != sid) {
            return Err(EngineError::InvalidCommand(
                "one import holds one session".into(),
            ));
        }
        // Every type is authorized (the trace/debug gate included), each once.
        let types: std::collections::BTreeSet<&str> = events
            .iter()
            .map(|ev| {
                ev.wire
                    .json()
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            })
            .collect();
        for event_type in types {
            self.authorize(
                p,
                Action::Write {
                    session_id: &sid,
                    event_type,
                },
            )?;
        }
        let cell = self.cell(&sid);
        let mut slot = cell.lock().await;
        *slot = None; // rebuilt from the store after the import
        let (meta, new_session) = match self.meta(&sid).await {
            Ok(m) => (m, false),
            Err(EngineError::UnknownSession) => (
                Meta {
                    profiles: ProfileSet::all(),
                    workspace_id: None,
                },
                true,
            ),
            Err(e) => return Err(e),
        };
        let mut j = Journal::hydrate(&*self.inner.store, &sid, meta.clone()).await?;
        let head = j.head;
        let mut fresh = Vec::new();
        for (i, ev) in events.iter().enumerate() {
            match j.checker.push(&narad_core::Record::Authority(ev.clone())) {
                Ok(narad_core::checker::Applied::Applied) => fresh.push(StoredEvent::from(ev)),
                Ok(_) => {}
                Err(r) => {
                    return Err(EngineError::Rejected {
                        code: r.code,
                        section: r.section,
                        message: format!("record {}: {}", i + 1, r.message),
                    })
                }
            }
        }
        let n = fresh.len() as u64;
        let mut batch = Batch {
            session_id: sid.clone(),
            expected_head: head,
            events: fresh,
            ..Batch::default()
        };
        if new_session {
            batch.side.push(side(
                SideSpace::Session,
                &sid,
                Expect::Absent,
                meta.encode(),
            ));
        }
        if batch.events.is_empty() && batch.side.is_empty() {
            return Ok((sid, 0));
        }
        self.inner.store.append(batch).await?;
        Ok((sid, n))
    }

    /// The §10.4 capability record of a session.
    pub async fn capabilities(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<Capabilities, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let (caps, _) = self
            .command(p, session_id, |j| {
                Ok(Plan::of(
                    Vec::new(),
                    Capabilities {
                        protocol_version: narad_core::PROTOCOL_VERSION,
                        active_profiles: j.meta.profiles.iter().map(|p| p.id()).collect(),
                        history_limit: self.inner.config.history_limit,
                        session_sequence: j.head,
                        active_execution: j.checker.slot(&j.session_id).cloned(),
                    },
                ))
            })
            .await?;
        Ok(caps)
    }

    /// The reduced state of a session as the checker holds it
    /// (deterministic JSON), hydrating it if needed.
    pub async fn state_json(&self, p: &Principal, session_id: &str) -> Result<String, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let (s, _) = self
            .command(p, session_id, |j| {
                Ok(Plan::of(
                    Vec::new(),
                    j.checker.state_json(&j.session_id).unwrap_or_default(),
                ))
            })
            .await?;
        Ok(s)
    }
}

/// What a client receives on attach (§10.3, §10.4): the capability record,
/// hydrate records for the active profiles, and a follower from the
/// boundary the hydrate covers.
#[derive(Debug)]
pub struct Attached<S> {
    /// The §10.4 record.
    pub capabilities: Capabilities,
    /// `messages.snapshot` (conversation profile) and one `graph.snapshot`
    /// per run tree (graph profile), all covering `capabilities.session_sequence`.
    pub hydrate: Vec<Bytes>,
    /// Live authority after the boundary, without gap or duplicate.
    pub follow: Follow<S>,
}

/// Where an [`Engine::append`]ed event goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventScope {
    /// Session scope.
    Session,
    /// A started run (its tree and workflow are filled in).
    Run(String),
    /// A workflow.
    Workflow(String),
}

fn slot_busy(j: &Journal, start: &StartRun) -> bool {
    match j.checker.slot(&j.session_id) {
        None => false,
        Some(Slot::Run(_)) => true,
        Some(Slot::Workflow(w)) => start.workflow_id.as_deref() != Some(w.as_str()),
    }
}

pub(crate) fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

fn terminal_draft(at: At, t: &Terminal) -> Draft {
    match t {
        Terminal::Finished {
            usage,
            artifact_ids,
        } => {
            let mut body = strip_nulls(json!({ "usage": usage }));
            if !artifact_ids.is_empty() {
                body["artifactIds"] = json!(artifact_ids);
            }
            Draft::new("run.finished", at, body)
        }
        Terminal::Error {
            code,
            message,
            usage,
        } => Draft::new(
            "run.error",
            at,
            strip_nulls(json!({"code": code, "message": sanitize(message), "usage": usage})),
        ),
        Terminal::Cancelled {
            code,
            message,
            usage,
        } => Draft::new(
            "run.cancelled",
            at,
            strip_nulls(
                json!({"code": code, "message": message.as_deref().map(sanitize), "usage": usage}),
            ),
        ),
    }
}

/// Journaled messages are user-facing: keep them short and single-line.
fn sanitize(message: &str) -> String {
    let one_line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(500)
        .collect();
    one_line.trim().to_owned()
}

/// Appends the drafts that close `run` and its open subtree, deepest first.
fn close_subtree(j: &Journal, run: &str, drafts: &mut Vec<Draft>) -> Result<(), EngineError> {
    let s = &j.session_id;
    let r = j.checker.run(s, run).ok_or(EngineError::UnknownRun)?;
    if r.state.is_terminal() {
        return Ok(());
    }
    for child in &r.open_children {
        close_subtree(j, child, drafts)?;
    }
    let at = j.run_at(run)?;
    for tool in &r.open_tools {
        drafts.push(Draft::new(
            "tool.call.finished",
            at.clone(),
            json!({"toolCallId": tool, "outcome": "cancelled", "response": null}),
        ));
    }
    if let Some(i) = &r.open_interrupt {
        let decision = ["stop", "cancel", "deny"]
            .into_iter()
            .find(|d| i.actions.iter().any(|a| a == d))
            .unwrap_or("expired");
        drafts.push(Draft::new(
            "interrupt.resolved",
            at.clone(),
            json!({"interruptId": i.id, "waitId": i.wait_id, "decision": decision, "reason": "stopped"}),
        ));
    }
    if let Some(wait) = &r.open_pause {
        drafts.push(Draft::new(
            "run.resumed",
            at.clone(),
            json!({ "waitId": wait }),
        ));
    }
    drafts.push(Draft::new(
        "run.cancelled",
        at,
        json!({"code": "stopped", "message": "Run stopped."}),
    ));
    Ok(())
}
