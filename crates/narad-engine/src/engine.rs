//! The engine handle: its settings, its injected host parts, its shared
//! state, and the authorization gate every command and read passes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use narad_store::Store;

use crate::error::EngineError;
use crate::host::{Action, AllowAll, Authorizer, Clock, IdSource, Principal};
use crate::host::{OrderedIds, SystemClock};
use crate::journal::Journal;
use crate::outbox::Clients;

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

pub(crate) type Cell = Arc<tokio::sync::Mutex<Option<Journal>>>;

/// Counters of what the engine did, for tests and operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineStats {
    /// Sessions rebuilt from the store.
    pub hydrations: u64,
    /// Of those, how many started from a reducer snapshot.
    pub from_snapshot: u64,
    /// Commands re-checked after another writer moved the head.
    pub retries: u64,
    /// Stored reducer snapshots ignored because they did not match their
    /// journal (the session was replayed instead).
    pub snapshots_rejected: u64,
    /// Stored reducer snapshots of a layout an earlier build wrote: not
    /// damage; the session was replayed, and its next snapshot is of this
    /// build's layout.
    pub snapshots_earlier: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) hydrations: AtomicU64,
    pub(crate) from_snapshot: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) snapshots_rejected: AtomicU64,
    pub(crate) snapshots_earlier: AtomicU64,
}

pub(crate) struct Inner<S> {
    pub(crate) store: Arc<S>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdSource>,
    pub(crate) auth: Arc<dyn Authorizer>,
    pub(crate) config: EngineConfig,
    pub(crate) cells: Mutex<HashMap<String, Cell>>,
    pub(crate) counters: Counters,
    /// The newest watch revision this engine wrote or was told of, per
    /// workspace (a hint; the store decides).
    pub(crate) workspace_revisions: Mutex<HashMap<String, u64>>,
    pub(crate) clients: Clients,
    /// The retention policy the timer driver applies.
    pub(crate) retention: Mutex<Option<crate::retention::RetentionPolicy>>,
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
    /// The idempotency key the commands of this handle run under (set only
    /// on the engine inside an [`Idempotent`](crate::Idempotent); a clone
    /// drops it).
    pub(crate) keyed: Option<Arc<crate::idempotency::Keyed>>,
}

impl<S> Clone for Engine<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            keyed: None,
        }
    }
}

impl<S> std::fmt::Debug for Engine<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl<S: Store + 'static> Engine<S> {
    /// An engine with the system clock, random ids and no authorization.
    pub fn new(store: S) -> Self {
        Self::with_host(
            store,
            Arc::new(SystemClock),
            Arc::new(OrderedIds),
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
                clients: Clients::default(),
                retention: Mutex::new(None),
            }),
            keyed: None,
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

    /// Authorizes appending every distinct type of `types` to `session_id`,
    /// in order, each asked once (the trace and debug gate included).
    pub(crate) fn authorize_writes<'a>(
        &self,
        p: &Principal,
        session_id: &str,
        types: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), EngineError> {
        let mut asked: Vec<&str> = Vec::new();
        for event_type in types {
            if asked.contains(&event_type) {
                continue;
            }
            asked.push(event_type);
            self.authorize(
                p,
                Action::Write {
                    session_id,
                    event_type,
                },
            )?;
        }
        Ok(())
    }

    /// What the engine did so far.
    pub fn stats(&self) -> EngineStats {
        let c = &self.inner.counters;
        EngineStats {
            hydrations: c.hydrations.load(Ordering::Relaxed),
            from_snapshot: c.from_snapshot.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            snapshots_rejected: c.snapshots_rejected.load(Ordering::Relaxed),
            snapshots_earlier: c.snapshots_earlier.load(Ordering::Relaxed),
        }
    }

    /// How many sessions are hydrated in memory now.
    pub fn cached_sessions(&self) -> usize {
        self.inner.cells.lock().map_or(0, |c| c.len())
    }
}
