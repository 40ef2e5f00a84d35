//! One session as the engine holds it: the checker's reduced state, the
//! session's profiles, and the turning of drafted events into envelopes
//! with every applicable sequence assigned.

use std::collections::BTreeMap;

use bytes::Bytes;
use narad_core::checker::{Applied, Checker};
use narad_core::{Parsed, Record, Validator, ValidatorConfig, PROTOCOL_VERSION};
use narad_store::{Expect, SideSpace, SideWrite, Store, StoredEvent};
use serde_json::{Map, Value};

use crate::error::EngineError;
pub(crate) use crate::meta::Meta;
use crate::snapshot::{self, Chain, Reject};

/// From this size on, a snapshot is restored (and a transcript record
/// checked) on the blocking pool.
pub(crate) const OFF_THREAD_BYTES: usize = 1 << 20;

/// How often a hydrate starts again when another writer moved the session
/// on while it replayed ([`Journal::hydrate_through`]).
const HYDRATE_TRIES: usize = 4;

/// From this many events on, a page of a replay is checked on the blocking
/// pool.
const OFF_THREAD_EVENTS: usize = 256;

/// Runs `f` on tokio's blocking pool (here when no runtime runs this
/// task); `None` if it panicked or its runtime shut down.
pub(crate) async fn off_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            // What the work logs stays inside the caller's span.
            let span = tracing::Span::current();
            rt.spawn_blocking(move || span.in_scope(f)).await.ok()
        }
        Err(_) => Some(f()),
    }
}

/// Which journal an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum At {
    /// Session scope only.
    Session,
    /// A run-tree event of `run` (whose tree is `root`, inside `workflow`).
    Run {
        run: String,
        root: String,
        workflow: Option<String>,
    },
    /// A workflow-scope event.
    Workflow(String),
}

/// An event before the engine gives it an envelope.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub ty: &'static str,
    pub at: At,
    pub body: Map<String, Value>,
}

impl Draft {
    pub fn new(ty: &'static str, at: At, body: Value) -> Self {
        let body = match body {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Self { ty, at, body }
    }
}

/// A hydrated session.
#[derive(Debug)]
pub(crate) struct Journal {
    pub session_id: String,
    pub meta: Meta,
    pub validator: Validator,
    pub checker: Checker,
    pub head: u64,
    /// `expiresAt` of interrupts requested in this journal, by id.
    pub expiries: BTreeMap<String, std::time::SystemTime>,
    /// `retryAt` of automatic pauses in this journal, by `waitId`, with
    /// their run. Not in snapshots: after a hydration from one, a resume
    /// leaves an earlier pause's timer for the driver to drop.
    pub retries: BTreeMap<String, (String, std::time::SystemTime)>,
    /// The head of the newest stored snapshot (0: none).
    pub snapshot_head: u64,
    /// Whether this hydration started from a snapshot.
    pub from_snapshot: bool,
    /// Why a stored snapshot was not used, if there was one.
    pub snapshot_rejected: Option<Reject>,
    /// Rolling digest of the events through `head`.
    pub chain: Chain,
    /// What [`Engine::state`](crate::Engine::state) folded from the stored
    /// journal, with the head it covers: a later read folds only the events
    /// after it. A cache in memory, shared by the reads of this journal
    /// only: a reloaded (or deleted and re-created) session gets a new
    /// journal, and so a new cache.
    pub details: DetailsCache,
    /// Closed history a command's plan read and the checker did not hold
    /// ([`crate::closed_history`]).
    pub misses: crate::closed_history::Misses,
}

/// See [`Journal::details`].
pub(crate) type DetailsCache =
    std::sync::Arc<std::sync::Mutex<Option<(u64, crate::typed::details::Details)>>>;

impl Journal {
    pub fn new(session_id: &str, meta: Meta) -> Self {
        let validator = Validator::new(ValidatorConfig {
            profiles: meta.profiles,
            ..ValidatorConfig::default()
        });
        let mut checker = Checker::new(validator);
        // Its closed history goes to the store with each snapshot.
        checker.leave_closed_to_store();
        Self {
            session_id: session_id.to_owned(),
            meta,
            validator,
            checker,
            head: 0,
            expiries: BTreeMap::new(),
            retries: BTreeMap::new(),
            snapshot_head: 0,
            from_snapshot: false,
            snapshot_rejected: None,
            chain: Chain::default(),
            details: DetailsCache::default(),
            misses: Default::default(),
        }
    }

    /// The snapshot side record of this journal once `pending` (events
    /// applied to the checker, not yet in `head`) are appended too; see
    /// [`crate::snapshot`] for the layout.
    pub fn encode_snapshot(&self, pending: &[StoredEvent]) -> Vec<u8> {
        let expiries: BTreeMap<&str, String> = self
            .expiries
            .iter()
            .map(|(k, t)| (k.as_str(), crate::host::timestamp(*t)))
            .collect();
        let exp = serde_json::to_vec(&expiries).unwrap_or_default();
        let mut body = Vec::new();
        body.extend_from_slice(&(exp.len() as u32).to_be_bytes());
        body.extend_from_slice(&exp);
        // Without the dedup set: the store keeps every eventId, and an
        // import recalls the ones it needs (`Engine::import`).
        body.extend_from_slice(&self.checker.snapshot_for_store());
        let head = self.head + pending.len() as u64;
        let chain = self.chain.extended(pending.iter().map(|e| &e.bytes[..]));
        snapshot::seal(&self.session_id, head, chain, &body)
    }

    /// `f` applied to this journal on the blocking pool, where the journal
    /// moves and comes back from: a long session's work (encoding its
    /// snapshot, replaying a page, copying its whole state) takes
    /// milliseconds to hundreds of them, which would otherwise stall the
    /// thread polling the command (a tokio worker serving other sessions,
    /// or a Python binding's event loop). `None` if `f` panicked (none can
    /// be reached) or the runtime shut down: the journal is gone and the
    /// session rehydrates from the store.
    pub async fn off_thread<T: Send + 'static>(
        mut self,
        f: impl FnOnce(&mut Self) -> T + Send + 'static,
    ) -> Option<(Self, T)> {
        off_thread(move || {
            let out = f(&mut self);
            (self, out)
        })
        .await
    }

    /// Whether a batch of `appending` events takes the journal
    /// `every` events past its last stored snapshot (`0`: never), so the
    /// batch carries a new one.
    pub fn snapshot_due(&self, appending: usize, every: u64) -> bool {
        every > 0 && self.head + appending as u64 - self.snapshot_head >= every
    }

    /// This journal's snapshot side record once `pending` are appended
    /// too ([`Journal::encode_snapshot`]), encoded on the blocking pool with
    /// the journal moved there and back, and the closed records it leaves
    /// out ([`crate::closed_history`], at most `closed` of them): every
    /// write for the same batch.
    /// `None` when the journal was lost there (no encoding panics, or the
    /// runtime shut down). The checker has then handed those records over:
    /// if the batch is not stored, the journal must be dropped.
    pub async fn snapshot_write(
        self,
        pending: Vec<StoredEvent>,
        closed: usize,
    ) -> Option<(Self, Vec<SideWrite>)> {
        let (j, (closed, bytes)) = self
            .off_thread(move |j| {
                let head = j.head + pending.len() as u64;
                let closed = crate::closed_history::take_writes(j, head, closed);
                (closed, j.encode_snapshot(&pending))
            })
            .await?;
        let mut writes = closed;
        writes.push(SideWrite {
            space: SideSpace::Snapshot,
            key: j.session_id.clone(),
            expect: Expect::Any,
            value: Some(Bytes::from(bytes)),
        });
        Some((j, writes))
    }

    /// Records that a snapshot at `head` is stored beside the journal. The
    /// checker forgets the eventIds it holds: the store keeps them, and an
    /// import recalls the ones it needs (`Engine::import`), so a session
    /// cached for long holds a dedup entry only for the events since.
    pub fn snapshotted(&mut self, head: u64) {
        self.snapshot_head = head;
        self.checker.forget_event_ids();
    }

    /// Records that `events` were appended: the head and the digest move on.
    pub fn appended(&mut self, events: &[StoredEvent]) {
        for ev in events {
            self.chain.push(&ev.bytes);
        }
        self.head += events.len() as u64;
    }

    /// Restores from a snapshot record, checked against the stored event at
    /// its head (one read). `Ok(Err(_))`: unusable, replay instead.
    async fn from_snapshot<S: Store + ?Sized>(
        store: &S,
        session_id: &str,
        meta: Meta,
        bytes: Bytes,
    ) -> Result<Result<Self, Reject>, EngineError> {
        let snap = match snapshot::unseal_header(session_id, &bytes) {
            Ok(s) => s,
            Err(r) => return Ok(Err(r)),
        };
        if snap.head > 0 {
            let page = store.read_session(session_id, snap.head - 1, 1).await?;
            let at_head = page
                .events
                .first()
                .filter(|ev| ev.position.session_sequence == snap.head);
            if !at_head.is_some_and(|ev| snap.covers(&ev.bytes)) {
                return Ok(Err(Reject::OtherJournal));
            }
        }
        if bytes.len() < OFF_THREAD_BYTES {
            return Ok(Self::restore(session_id, meta, &snap, None));
        }
        // The restored checker keeps a long transcript's messages as a
        // slice of these bytes: a buffer of their own, not one a store
        // shares (a layout 2 redb file's large value holds its read
        // transaction open), which is copied once.
        let bytes = match bytes.is_unique() {
            true => bytes,
            false => Bytes::copy_from_slice(&bytes),
        };
        // A long session's restore takes milliseconds of CPU: on the
        // blocking pool, not on the async thread that polls the hydrate
        // (a tokio worker, or a Python binding's event loop).
        let sid = session_id.to_owned();
        let restored = off_thread(move || {
            let snap = snapshot::unseal_header(&sid, &bytes)?;
            Self::restore(&sid, meta, &snap, Some(&bytes))
        })
        .await;
        // A restore that panicked (none can be reached) reads as a state
        // that does not restore: the journal is replayed.
        Ok(restored.unwrap_or(Err(Reject::State)))
    }

    /// The journal of an unsealed snapshot whose body's digest holds. The
    /// digest is computed by the checker's restore, on this thread, while
    /// a long session's restore works on its second one
    /// ([`Checker::restore_checked`]; the restore is safe on any bytes).
    fn restore(
        session_id: &str,
        meta: Meta,
        snap: &snapshot::Unsealed<'_>,
        whole: Option<&Bytes>,
    ) -> Result<Self, Reject> {
        let damaged = || match snap.body_intact() {
            true => Reject::State,
            false => Reject::Checksum,
        };
        let bytes = snap.body;
        let parts = || {
            let n = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
            let exp = bytes.get(4..4usize.checked_add(n)?)?;
            let exp: BTreeMap<String, String> = serde_json::from_slice(exp).ok()?;
            Some((exp, bytes.get(4 + n..)?))
        };
        let (exp, checker) = parts().ok_or_else(damaged)?;
        if Checker::is_earlier_snapshot(checker) {
            return Err(match snap.body_intact() {
                true => Reject::Earlier,
                false => Reject::Checksum,
            });
        }
        let mut j = Self::new(session_id, meta);
        let intact = || snap.body_intact();
        let (intact, checker) = match whole.and_then(|w| within(w, checker)) {
            Some(shared) => Checker::restore_shared(j.validator, &shared, intact),
            None => Checker::restore_checked(j.validator, checker, intact),
        };
        if !intact {
            return Err(Reject::Checksum);
        }
        j.checker = checker.ok_or(Reject::State)?;
        // An earlier build's snapshot holds all closed history: it is
        // handed over from the next snapshot on.
        j.checker.leave_closed_to_store();
        if j.checker.session_head(session_id) != Some(snap.head) {
            return Err(Reject::State);
        }
        j.head = snap.head;
        j.chain = snap.chain;
        j.snapshot_head = snap.head;
        j.from_snapshot = true;
        j.expiries = exp
            .into_iter()
            .filter_map(|(k, t)| Some((k, humantime::parse_rfc3339(&t).ok()?)))
            .collect();
        Ok(j)
    }

    /// Rebuilds the session: from its newest snapshot when there is a
    /// usable one, then the journal's tail; else the whole journal. A
    /// snapshot that does not match the journal is logged and ignored.
    /// The checker keeps no eventId of what it read: the store holds them
    /// ([`Journal::snapshotted`]).
    pub async fn hydrate<S: Store + ?Sized>(
        store: &S,
        session_id: &str,
        meta: Meta,
    ) -> Result<Self, EngineError> {
        Self::hydrate_through(store, session_id, meta, u64::MAX).await
    }

    /// [`Self::hydrate`] up to `sessionSequence` `through` only (a past
    /// state): the snapshot is used when it does not pass that point.
    /// Another writer that stores a snapshot while the journal's tail is
    /// replayed can leave closed history the replay may not read
    /// ([`crate::closed_history`]): the hydrate then starts again from the
    /// newer snapshot.
    pub async fn hydrate_through<S: Store + ?Sized>(
        store: &S,
        session_id: &str,
        meta: Meta,
        through: u64,
    ) -> Result<Self, EngineError> {
        Self::hydrating(store, session_id, meta, through, false).await
    }

    /// [`Self::hydrate_through`] whose checker also holds every closed
    /// record the store keeps ([`crate::closed_history::recall_all`]), for
    /// a whole past state. Those records are as of the stored snapshot,
    /// which the hydrate used only when it is at or before `through` (the
    /// events since were replayed); one another writer stored meanwhile is
    /// a head conflict, and the hydrate starts again.
    pub async fn hydrate_whole_through<S: Store + ?Sized>(
        store: &S,
        session_id: &str,
        meta: Meta,
        through: u64,
    ) -> Result<Self, EngineError> {
        Self::hydrating(store, session_id, meta, through, true).await
    }

    async fn hydrating<S: Store + ?Sized>(
        store: &S,
        session_id: &str,
        meta: Meta,
        through: u64,
        whole: bool,
    ) -> Result<Self, EngineError> {
        let mut tries = 0;
        loop {
            let out = match Self::hydrate_once(store, session_id, meta.clone(), through).await {
                Ok(mut j) if whole => crate::closed_history::recall_all(store, &mut j)
                    .await
                    .map(|()| j),
                out => out,
            };
            match out {
                Err(EngineError::Store(narad_store::StoreError::HeadConflict { .. }))
                    if tries < HYDRATE_TRIES =>
                {
                    tries += 1;
                }
                out => return out,
            }
        }
    }

    async fn hydrate_once<S: Store + ?Sized>(
        store: &S,
        session_id: &str,
        meta: Meta,
        through: u64,
    ) -> Result<Self, EngineError> {
        let snap = store
            .side(narad_store::SideSpace::Snapshot, session_id)
            .await?;
        let mut j = match snap {
            None => Self::new(session_id, meta),
            Some(b) => match Self::from_snapshot(store, session_id, meta.clone(), b).await? {
                Ok(j) if j.head > through => Self::new(session_id, meta),
                Ok(j) => j,
                Err(reason) => {
                    if reason == Reject::Earlier {
                        tracing::info!(
                            session_id,
                            reason = reason.as_str(),
                            "reducer snapshot is of an earlier build's layout; replaying the journal (the next snapshot is of this layout)"
                        );
                    } else {
                        tracing::warn!(
                            session_id,
                            reason = reason.as_str(),
                            "reducer snapshot does not match its journal; replaying the journal"
                        );
                    }
                    let mut j = Self::new(session_id, meta);
                    j.snapshot_rejected = Some(reason);
                    j
                }
            },
        };
        loop {
            let want = usize::try_from(through - j.head)
                .unwrap_or(usize::MAX)
                .min(1024);
            if want == 0 {
                j.checker.forget_event_ids();
                return Ok(j);
            }
            let page = store.read_session(session_id, j.head, want).await?;
            let (last, empty) = (page.next.is_none(), page.events.is_empty());
            let events = std::sync::Arc::new(page.events);
            let mut from = 0;
            loop {
                let (back, replayed) = if events.len() - from < OFF_THREAD_EVENTS {
                    let replayed = j.replay(&events[from..]);
                    (j, replayed)
                } else {
                    // A full page is milliseconds of checking: on the
                    // blocking pool, like a long snapshot's restore.
                    let events = std::sync::Arc::clone(&events);
                    j.off_thread(move |j| j.replay(&events[from..]))
                        .await
                        .ok_or_else(|| {
                            EngineError::Store(narad_store::StoreError::Backend(
                                "replaying a page of the journal failed".into(),
                            ))
                        })?
                };
                j = back;
                match replayed? {
                    None => break,
                    // Stopped before an event that names closed history
                    // the checker left to the store: given back, it goes on.
                    Some(done) => {
                        crate::closed_history::recall_for(store, &mut j).await?;
                        from += done;
                    }
                }
            }
            if last {
                j.checker.forget_event_ids();
                return Ok(j);
            }
            if empty {
                // More remain, yet the cursor did not move: a typed error.
                narad_store::row::advance(session_id, j.head, j.head)?;
            }
        }
    }

    /// Applies stored events after `head`, in order. `Some(n)`: stopped
    /// after `n` of them, before one the checker needs closed history for
    /// ([`narad_core::checker::CLOSED_RECALL`]).
    fn replay(&mut self, events: &[StoredEvent]) -> Result<Option<usize>, EngineError> {
        for (i, ev) in events.iter().enumerate() {
            narad_store::row::advance(&self.session_id, self.head, ev.position.session_sequence)?;
            match self.checker.push_bytes(&ev.bytes) {
                Err(r) if r.code == narad_core::checker::CLOSED_RECALL => return Ok(Some(i)),
                Err(r) => {
                    return Err(EngineError::Store(narad_store::StoreError::Backend(
                        format!(
                            "stored journal is refused by the checker at {}: {}",
                            ev.position.session_sequence, r.code
                        ),
                    )))
                }
                Ok(_) => {}
            }
            self.head = ev.position.session_sequence;
            self.chain.push(&ev.bytes);
            self.note_expiry(&ev.bytes);
        }
        Ok(None)
    }

    /// Remembers the `expiresAt` of an `interrupt.requested` and the
    /// `retryAt` of a `run.paused`: the deadlines the due index holds.
    pub fn note_expiry(&mut self, bytes: &[u8]) {
        // Cheap pre-filter: only these two carry the fields. `memmem`
        // finders built once, not a window compare per byte: this runs on
        // every event.
        use memchr::memmem::Finder;
        use std::sync::LazyLock;
        static EXPIRES_AT: LazyLock<Finder<'static>> =
            LazyLock::new(|| Finder::new(b"\"expiresAt\""));
        static RETRY_AT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"retryAt\""));
        if EXPIRES_AT.find(bytes).is_none() && RETRY_AT.find(bytes).is_none() {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        let text = |k: &str| v.get(k).and_then(Value::as_str);
        let time = |k: &str| text(k).and_then(|t| humantime::parse_rfc3339(t).ok());
        match text("type") {
            Some("interrupt.requested") => {
                if let (Some(id), Some(at)) = (text("interruptId"), time("expiresAt")) {
                    self.expiries.insert(id.to_owned(), at);
                }
            }
            Some("run.paused") => {
                if let (Some(wait), Some(run), Some(at)) =
                    (text("waitId"), text("runId"), time("retryAt"))
                {
                    self.retries.insert(wait.to_owned(), (run.to_owned(), at));
                }
            }
            _ => {}
        }
    }

    /// Open interrupts whose `expiresAt` is not after `now`.
    pub fn due(&self, now: std::time::SystemTime) -> Vec<String> {
        let open = |id: &str| {
            self.checker
                .open_runs(&self.session_id)
                .any(|(_, r)| r.open_interrupt.as_ref().is_some_and(|i| i.id == id))
                || self
                    .checker
                    .workflows(&self.session_id)
                    .any(|(_, w)| w.open_interrupt.as_ref().is_some_and(|i| i.id == id))
        };
        self.expiries
            .iter()
            .filter(|(id, at)| **at <= now && open(id))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Where a started run's events go.
    pub fn run_at(&self, run_id: &str) -> Result<At, EngineError> {
        let run = self.run(run_id).ok_or_else(|| EngineError::UnknownRun {
            run_id: run_id.to_owned(),
        })?;
        Ok(At::Run {
            run: run_id.to_owned(),
            root: run.root.clone(),
            workflow: run.workflow.clone(),
        })
    }

    /// A run of the session, open or closed. One the checker left to the
    /// store is noted for the command loop, which gives it back and plans
    /// again ([`Journal::misses`]).
    pub fn run(&self, run_id: &str) -> Option<std::borrow::Cow<'_, narad_core::checker::Run>> {
        let run = self.checker.run(&self.session_id, run_id);
        if run.is_none() {
            self.misses
                .note(self, narad_core::checker::ClosedKind::Run, run_id);
        }
        run
    }

    /// The run a tool call belongs to and whether it is open, noting one
    /// the checker left to the store as [`Journal::run`] does.
    pub fn tool_call(&self, tool_call_id: &str) -> Option<(&str, bool)> {
        let call = self.checker.tool_call(&self.session_id, tool_call_id);
        if call.is_none() {
            let kind = narad_core::checker::ClosedKind::ToolCall;
            self.misses.note(self, kind, tool_call_id);
        }
        call
    }

    /// The message `message_id` of the transcript, noting one the checker
    /// may have left to the store as [`Journal::run`] does.
    pub fn message(
        &self,
        message_id: &str,
    ) -> Option<std::borrow::Cow<'_, narad_core::checker::Message>> {
        let kind = narad_core::checker::ClosedKind::Transcript;
        self.misses.note(self, kind, message_id);
        self.checker.transcript(&self.session_id)?.get(message_id)
    }

    /// The session's primary transcript (§9.2 default visibility); notes
    /// for the command loop that the plan read all of it, as
    /// [`Journal::all_runs`] does.
    pub fn primary_transcript(&self) -> Vec<&narad_core::checker::Message> {
        self.misses.note_all(self);
        self.checker.primary_transcript(&self.session_id)
    }

    /// Every run of the session, open or closed, in id order; notes for
    /// the command loop that the plan read all closed history
    /// ([`Journal::misses`]).
    pub fn all_runs(
        &self,
    ) -> impl Iterator<Item = (&str, std::borrow::Cow<'_, narad_core::checker::Run>)> {
        self.misses.note_all(self);
        self.checker.runs(&self.session_id)
    }

    /// The run-tree head of `root` (0 if none), noting a closed root the
    /// checker left to the store as [`Journal::run`] does.
    pub fn run_head(&self, root: &str) -> u64 {
        self.misses
            .note(self, narad_core::checker::ClosedKind::Run, root);
        self.checker.run_head(&self.session_id, root)
    }

    /// [`Journal::apply`] for drafts that follow `pending` events already
    /// applied to the checker but not appended yet (same batch).
    pub fn apply_after(
        &mut self,
        pending: u64,
        drafts: Vec<Draft>,
        ids: &dyn crate::IdSource,
        timestamp: &str,
    ) -> Result<Vec<StoredEvent>, (EngineError, bool)> {
        self.head += pending;
        let out = self.apply(drafts, ids, timestamp);
        self.head -= pending;
        out
    }

    /// Gives each draft its envelope, parses it as the validator would, and
    /// applies it to the checker. On refusal of the first event the checker
    /// is unchanged; on refusal of a later one the caller must discard this
    /// journal (it is rebuilt from the store), since nothing was appended.
    pub fn apply(
        &mut self,
        drafts: Vec<Draft>,
        ids: &dyn crate::IdSource,
        timestamp: &str,
    ) -> Result<Vec<StoredEvent>, (EngineError, bool)> {
        let sid = self.session_id.clone();
        let mut head = self.head;
        let mut runs: BTreeMap<String, u64> = BTreeMap::new();
        let mut wfs: BTreeMap<String, u64> = BTreeMap::new();
        let mut out = Vec::with_capacity(drafts.len());
        for (i, d) in drafts.into_iter().enumerate() {
            let dirty = i > 0;
            let mut o = d.body;
            o.insert("type".into(), d.ty.into());
            o.insert("protocolVersion".into(), PROTOCOL_VERSION.into());
            o.insert("eventId".into(), ids.next_id("evt").into());
            o.insert("timestamp".into(), timestamp.into());
            o.insert("sessionId".into(), sid.clone().into());
            head += 1;
            o.insert("sessionSequence".into(), head.into());
            let mut in_workflow = |wf: &str, o: &mut Map<String, Value>| {
                let n = wfs
                    .entry(wf.to_owned())
                    .or_insert_with(|| self.checker.workflow_head(&sid, wf));
                *n += 1;
                o.insert("workflowId".into(), wf.into());
                o.insert("workflowSequence".into(), (*n).into());
            };
            match &d.at {
                At::Session => {}
                At::Run {
                    run,
                    root,
                    workflow,
                } => {
                    let n = runs
                        .entry(root.clone())
                        .or_insert_with(|| self.checker.run_head(&sid, root));
                    *n += 1;
                    o.insert("rootRunId".into(), root.clone().into());
                    o.insert("runId".into(), run.clone().into());
                    o.insert("sequence".into(), (*n).into());
                    if let Some(wf) = workflow {
                        in_workflow(wf, &mut o);
                    }
                }
                At::Workflow(wf) => in_workflow(wf, &mut o),
            }
            let bytes = serde_json::to_vec(&Value::Object(o))
                .map_err(|e| (EngineError::InvalidCommand(e.to_string()), dirty))?;
            let ev = match self.validator.parse(&bytes) {
                Ok(Parsed::Record {
                    record: Record::Authority(ev),
                    ..
                }) => ev,
                Ok(_) => {
                    return Err((
                        EngineError::InvalidCommand(format!("`{}` is not authority", d.ty)),
                        dirty,
                    ))
                }
                Err(e) => {
                    return Err((
                        EngineError::Rejected {
                            code: e.code.as_str(),
                            section: "5",
                            message: format!("`{}`: {}", d.ty, e.message),
                        },
                        dirty,
                    ))
                }
            };
            let record = Record::Authority(ev);
            match self.checker.push(&record) {
                Ok(Applied::Applied) => {}
                Ok(_) => {
                    return Err((
                        EngineError::InvalidCommand(format!("`{}` was not applied", d.ty)),
                        true,
                    ))
                }
                Err(r) => {
                    return Err((
                        EngineError::Rejected {
                            code: r.code,
                            section: r.section,
                            message: r.message,
                        },
                        dirty,
                    ))
                }
            }
            if let Record::Authority(ev) = &record {
                out.push(StoredEvent::from(ev));
            }
        }
        for ev in &out {
            self.note_expiry(&ev.bytes);
        }
        Ok(out)
    }
}

/// Visits the stored events of `session_id` after position `after` through
/// `through`, in order, reading `limit` at a time. Every cursor moves
/// through [`narad_store::row::advance`], so a damaged store is a typed
/// error, never an endless loop.
pub(crate) async fn for_each_event<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
    after: u64,
    through: u64,
    limit: usize,
    mut visit: impl FnMut(&StoredEvent) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let mut cursor = after;
    while cursor < through {
        let want = usize::try_from(through - cursor)
            .unwrap_or(usize::MAX)
            .min(limit.max(1));
        let page = store.read_session(session_id, cursor, want).await?;
        if page.events.is_empty() {
            narad_store::row::advance(session_id, cursor, cursor)?;
        }
        for ev in &page.events {
            let seq = ev.position.session_sequence;
            if seq > through {
                return Ok(());
            }
            cursor = narad_store::row::advance(session_id, cursor, seq)?;
            visit(ev)?;
        }
    }
    Ok(())
}

/// `part` as a slice of `whole`, if it lies within it.
fn within(whole: &Bytes, part: &[u8]) -> Option<Bytes> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then(|| whole.slice(start..end))
}
