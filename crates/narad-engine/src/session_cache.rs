//! The bounded cache of hydrated sessions: one lock-guarded journal per
//! session, rebuilt from the store (from a reducer snapshot when there is
//! one) when absent, and the check that a refusal was decided on the
//! current journal.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use narad_store::{Batch, SideSpace, Store};

use crate::engine::{Cell, Engine};
use crate::error::EngineError;
use crate::host::{Action, Principal};
use crate::journal::{Journal, Meta};

/// From this head on, [`Engine::read_journal`] reads on the blocking pool.
const OFF_THREAD_HEAD: u64 = 10_000;

impl<S: Store + 'static> Engine<S> {
    pub(crate) fn cell(&self, session_id: &str) -> Cell {
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
                    // Idle: only the map holds it (queued starts are durable).
                    Arc::strong_count(c) == 1 && c.try_lock().is_ok()
                })
                .map(|(k, _)| k.clone())
                .take(cells.len() + 1 - self.inner.config.cached_sessions)
                .collect();
            metrics::counter!(crate::telemetry::CACHE_EVICTIONS).increment(idle.len() as u64);
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
    pub(crate) async fn stale(
        &self,
        held: u64,
        session_id: &str,
        e: &EngineError,
    ) -> Result<bool, EngineError> {
        let decided_on_state = matches!(
            e,
            EngineError::Rejected { .. }
                | EngineError::UnknownRun { .. }
                | EngineError::UnknownToolCall { .. }
                | EngineError::UnknownInterrupt { .. }
                | EngineError::NothingRunning
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

    pub(crate) async fn hydrate(&self, session_id: &str) -> Result<Journal, EngineError> {
        self.hydrate_with(session_id, None).await
    }

    /// [`Self::hydrate`] with the session's metadata when the caller has
    /// it (an import of a session the store does not know yet): the same
    /// span, metrics and counters.
    pub(crate) async fn hydrate_with(
        &self,
        session_id: &str,
        meta: Option<Meta>,
    ) -> Result<Journal, EngineError> {
        use crate::telemetry;
        use tracing::Instrument;
        metrics::counter!(telemetry::CACHE_MISSES).increment(1);
        let span = tracing::debug_span!(
            telemetry::SPAN_HYDRATE,
            session = session_id,
            from = tracing::field::Empty,
            replayed = tracing::field::Empty,
        );
        let start = std::time::Instant::now();
        let meta = match meta {
            Some(m) => m,
            None => self.meta(session_id).instrument(span.clone()).await?,
        };
        let j = Journal::hydrate(&*self.inner.store, session_id, meta)
            .instrument(span.clone())
            .await?;
        let from = if j.from_snapshot { "snapshot" } else { "full" };
        let replayed = j.head.saturating_sub(j.snapshot_head);
        span.record("from", from);
        span.record("replayed", replayed);
        metrics::histogram!(telemetry::HYDRATE_SECONDS, "from" => from)
            .record(telemetry::seconds(start));
        metrics::counter!(telemetry::HYDRATE_EVENTS).increment(replayed);
        let c = &self.inner.counters;
        c.hydrations.fetch_add(1, Ordering::Relaxed);
        if j.from_snapshot {
            c.from_snapshot.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(reject) = j.snapshot_rejected {
            metrics::counter!(telemetry::SNAPSHOTS_REFUSED, "reason" => reject.as_str())
                .increment(1);
            match reject {
                crate::snapshot::Reject::Earlier => &c.snapshots_earlier,
                _ => &c.snapshots_rejected,
            }
            .fetch_add(1, Ordering::Relaxed);
        }
        Ok(j)
    }

    pub(crate) async fn meta(&self, session_id: &str) -> Result<Meta, EngineError> {
        match self
            .inner
            .store
            .side(SideSpace::Session, session_id)
            .await?
        {
            Some(b) => Meta::decode(&b),
            // A deleted session is not merely unknown: say so.
            None if self
                .inner
                .store
                .side(SideSpace::Tombstone, session_id)
                .await?
                .is_some() =>
            {
                Err(EngineError::Store(
                    narad_store::StoreError::SessionDeleted {
                        session_id: session_id.to_owned(),
                    },
                ))
            }
            None => Err(EngineError::UnknownSession {
                session_id: session_id.to_owned(),
            }),
        }
    }

    /// The session's journal in `slot`, hydrated from the store when the
    /// cache holds none (a command's and a read's first step).
    pub(crate) async fn loaded<'s>(
        &self,
        slot: &'s mut Option<Journal>,
        session_id: &str,
    ) -> Result<&'s mut Journal, EngineError> {
        match slot {
            Some(j) => {
                metrics::counter!(crate::telemetry::CACHE_HITS).increment(1);
                Ok(j)
            }
            // Boxed: a hydrate's future is large and rarely run, and would
            // otherwise size every command's future (see telemetry::traced).
            None => Ok(slot.insert(Box::pin(self.hydrate(session_id)).await?)),
        }
    }

    /// `read` applied to the session's journal, hydrated if needed and
    /// current with the store (another engine may have moved it on), as a
    /// read command answers. A journal of [`OFF_THREAD_HEAD`] events or
    /// more moves to the blocking pool for it and back: a whole state's
    /// copy of a long session takes tens to hundreds of milliseconds, which
    /// would hold the thread polling the read (a tokio worker serving other
    /// sessions, or a Python binding's event loop).
    pub(crate) async fn read_journal<T: Send + 'static>(
        &self,
        session_id: &str,
        read: impl Fn(&Journal) -> T + Send + Sync + 'static,
    ) -> Result<T, EngineError> {
        use crate::append::{retry, Attempt};
        let read = Arc::new(read);
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        retry!(self, async {
            let j = self.loaded(&mut slot, session_id).await?;
            if self.inner.store.head(session_id).await? != j.head {
                *slot = None;
                return Ok(Attempt::Again);
            }
            // A read of the whole state reads closed history too.
            if let Err(e) = crate::closed_history::recall_all(&*self.inner.store, j).await {
                return self.reload_if_moved(&mut slot, e);
            }
            if j.head < OFF_THREAD_HEAD {
                return Ok(Attempt::Done(read(j)));
            }
            let Some(j) = slot.take() else {
                return Ok(Attempt::Again);
            };
            let read = Arc::clone(&read);
            match j.off_thread(move |j| read(j)).await {
                Some((j, out)) => {
                    *slot = Some(j);
                    Ok(Attempt::Done(out))
                }
                // The journal was lost with the read (none can panic, or
                // the runtime shut down): the session rehydrates.
                None => Err(EngineError::Store(narad_store::StoreError::Backend(
                    "reading the session's state failed".into(),
                ))),
            }
        })
    }

    /// Writes a reducer snapshot of the session at its head now (guarded by
    /// the head, so it never describes a journal it is not beside). Closed
    /// history the snapshot leaves out is written with it; a session that
    /// holds much of it (replayed in full) takes a few batches, each with
    /// a snapshot that leaves out what is stored by then.
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
        loop {
            let Some(mut j) = slot.take() else {
                return Err(EngineError::UnknownSession {
                    session_id: session_id.to_owned(),
                });
            };
            crate::closed_history::before_snapshot(&*self.inner.store, &mut j).await?;
            let limit = crate::closed_history::PER_SNAPSHOT_CALL;
            let Some((j, write)) = j.snapshot_write(Vec::new(), limit).await else {
                return Err(EngineError::Store(narad_store::StoreError::Backend(
                    "encoding the snapshot failed".into(),
                )));
            };
            let head = j.head;
            let j = slot.insert(j);
            let batch = Batch {
                session_id: session_id.to_owned(),
                expected_head: head,
                side: write,
                ..Batch::default()
            };
            match self.append_resolving(batch).await {
                Ok(_) => {
                    j.snapshotted(head);
                    if !j.checker.has_closed_to_take(session_id) {
                        return Ok(head);
                    }
                }
                Err(e) => {
                    *slot = None;
                    return Err(e.into());
                }
            }
        }
    }
}
