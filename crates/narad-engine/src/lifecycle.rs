//! Deleting a session: every record of it, in every space, in one batch
//! guarded by its head, and a tombstone so that its id is never reused
//! ([`narad_store::lifecycle`]).
//!
//! The store removes the journal; the engine names the session's records
//! in the other spaces, since only it knows what they mean: the session
//! metadata and reducer snapshot (keyed by the session id), its queued
//! starts, and the interrupt-index entries, execution tokens and timers
//! whose records name it. Executor leases are the executor's, not a
//! session's, and stay.

use bytes::Bytes;
use narad_store::{Damage, SideSpace, Store, StoreError};
use serde::{Deserialize, Serialize};

use crate::append::{retry, Attempt};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Action, Principal};
use crate::timers::TimerRecord;

/// What a session had open when it was deleted (or when a delete was
/// refused because of it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpenWork {
    /// Runs not yet terminal.
    pub runs: Vec<String>,
    /// Workflows not yet terminal.
    pub workflows: Vec<String>,
    /// Open interrupts (of runs and workflows).
    pub interrupts: Vec<String>,
    /// Queued top-level starts.
    pub queued: usize,
}

impl OpenWork {
    /// Nothing open.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
            && self.workflows.is_empty()
            && self.interrupts.is_empty()
            && self.queued == 0
    }

    /// One line naming what is open (ids only), e.g.
    /// `runs run-1; interrupts int-2; queued 1`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (name, ids) in [
            ("runs", &self.runs),
            ("workflows", &self.workflows),
            ("interrupts", &self.interrupts),
        ] {
            if !ids.is_empty() {
                parts.push(format!("{name} {}", ids.join(",")));
            }
        }
        if self.queued > 0 {
            parts.push(format!("queued {}", self.queued));
        }
        parts.join("; ")
    }
}

/// What [`Engine::delete_session`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The session.
    pub session_id: String,
    /// Events removed with the journal.
    pub events: u64,
    /// Side records removed besides the journal.
    pub records: usize,
    /// What was open (non-empty only for a forced delete).
    pub open: OpenWork,
}

/// `Tombstone/<sessionId>`: when and how a session was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TombstoneRecord {
    pub(crate) v: u32,
    /// RFC 3339, from the engine's clock.
    pub(crate) deleted_at: String,
    /// The head the journal had.
    pub(crate) head: u64,
    /// Whether open work was discarded.
    pub(crate) forced: bool,
}

/// The owner of a token record; the rest of it is the client module's.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenOwner {
    v: u32,
    session_id: String,
}

const PAGE: usize = 512;

impl<S: Store + 'static> Engine<S> {
    /// Deletes a session: its journal and every record of it in every
    /// space, atomically, leaving a tombstone so that a late redelivery or
    /// a new session with the same id is refused (`session_deleted`).
    ///
    /// A session with open work (a run or workflow not terminal, an open
    /// interrupt, a queued start) is deleted only when `force` is set;
    /// otherwise the refusal is [`EngineError::OpenWork`], naming it.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::Principal;
    /// let gone = engine.delete_session(&Principal::new("host"), "s-1", false).await?;
    /// println!("{} events removed", gone.events);
    /// # Ok(()) }
    /// ```
    pub async fn delete_session(
        &self,
        p: &Principal,
        session_id: &str,
        force: bool,
    ) -> Result<Deleted, EngineError> {
        crate::telemetry::traced("delete_session", session_id, async {
            self.authorize(
                p,
                Action::Write {
                    session_id,
                    event_type: DELETE_ACTION,
                },
            )?;
            let out = retry!(self, self.delete_once(session_id, force));
            // Whatever happened, the cached journal may describe a session
            // that is gone.
            self.forget(session_id);
            out
        })
        .await
    }

    async fn delete_once(
        &self,
        session_id: &str,
        force: bool,
    ) -> Result<Attempt<Deleted>, EngineError> {
        let store = &*self.inner.store;
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        *slot = None;
        let j = self.hydrate(session_id).await?;
        let open = self.open_work(&j).await?;
        if !open.is_empty() && !force {
            return Err(EngineError::OpenWork {
                open: open.describe(),
            });
        }
        let mut keys = vec![
            (SideSpace::Session, session_id.to_owned()),
            (SideSpace::Snapshot, session_id.to_owned()),
            (SideSpace::SessionIndex, session_id.to_owned()),
        ];
        for e in crate::queue::list(store, session_id).await? {
            keys.push((SideSpace::Queue, e.key));
        }
        keys.extend(self.owned_records(session_id).await?);
        for key in self.key_records(session_id).await? {
            keys.push((SideSpace::Idempotency, key));
        }
        for key in crate::closed_history::keys(store, session_id).await? {
            keys.push((SideSpace::Closed, key));
        }
        if let Some(k) = &j.meta.create_key {
            keys.push((SideSpace::Idempotency, crate::idempotency::create_key(k)));
        }
        let tomb = TombstoneRecord {
            v: 1,
            deleted_at: timestamp(self.inner.clock.now()),
            head: j.head,
            forced: force && !open.is_empty(),
        };
        let bytes =
            Bytes::from(serde_json::to_vec(&tomb).map_err(|_| {
                EngineError::InvalidCommand("tombstone could not be encoded".into())
            })?);
        let records = keys.len();
        let batch = narad_store::lifecycle::delete_batch(session_id, j.head, keys, bytes.clone());
        match self.append_resolving(batch).await {
            Ok(_) => Ok(Attempt::Done(Deleted {
                session_id: session_id.to_owned(),
                events: j.head,
                records,
                open,
            })),
            Err(StoreError::HeadConflict { .. } | StoreError::SideConflict) => Ok(Attempt::Again),
            // An earlier delivery whose answer was lost wrote this very
            // tombstone.
            Err(StoreError::SessionDeleted { .. })
                if store.side(SideSpace::Tombstone, session_id).await? == Some(bytes) =>
            {
                Ok(Attempt::Done(Deleted {
                    session_id: session_id.to_owned(),
                    events: j.head,
                    records,
                    open,
                }))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// What is open in a hydrated session.
    async fn open_work(&self, j: &crate::journal::Journal) -> Result<OpenWork, EngineError> {
        let sid = j.session_id.as_str();
        let mut open = OpenWork::default();
        for (id, r) in j.checker.runs(sid) {
            if !r.state.is_terminal() {
                open.runs.push(id.to_owned());
            }
            if let Some(i) = &r.open_interrupt {
                open.interrupts.push(i.id.clone());
            }
        }
        for (id, w) in j.checker.workflows(sid) {
            if !w.terminal {
                open.workflows.push(id.clone());
            }
            if let Some(i) = &w.open_interrupt {
                open.interrupts.push(i.id.clone());
            }
        }
        open.queued = crate::queue::list(&*self.inner.store, sid).await?.len();
        Ok(open)
    }

    /// The session's records in the spaces keyed by something else than
    /// its id: interrupt-index entries, execution tokens and timers.
    async fn owned_records(&self, sid: &str) -> Result<Vec<(SideSpace, String)>, EngineError> {
        let mut out = Vec::new();
        for space in [SideSpace::Interrupt, SideSpace::Token, SideSpace::Timer] {
            let mut after: Option<String> = None;
            loop {
                let page = self
                    .inner
                    .store
                    .list_side(space, after.as_deref(), PAGE)
                    .await?;
                let full = page.len() == PAGE;
                for (key, bytes) in page {
                    if after.as_ref().is_some_and(|a| key <= *a) {
                        return Err(StoreError::corrupt(Damage::CursorStalled, None, None).into());
                    }
                    if owner(space, &key, &bytes).as_deref() == Some(sid) {
                        out.push((space, key.clone()));
                    }
                    after = Some(key);
                }
                if !full {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Drops the cached journal of a session.
    pub(crate) fn forget(&self, session_id: &str) {
        let mut cells = match self.inner.cells.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        cells.remove(session_id);
    }

    /// Ids of the sessions deleted so far, in id order, after `after`.
    pub async fn deleted_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, EngineError> {
        let page = self
            .inner
            .store
            .list_side(SideSpace::Tombstone, after, limit)
            .await?;
        Ok(page.into_iter().map(|(k, _)| k).collect())
    }
}

/// The event type a delete is authorized as ([`Action::Write`]).
pub const DELETE_ACTION: &str = "narad.session.delete";

/// The session a side record belongs to. A record that does not read
/// back is no session's provably: a delete leaves it in place rather than
/// fail on another session's damage (the timer driver and `verify` report
/// it).
fn owner(space: SideSpace, key: &str, bytes: &[u8]) -> Option<String> {
    match space {
        SideSpace::Interrupt => String::from_utf8(bytes.to_vec()).ok(),
        SideSpace::Token => serde_json::from_slice::<TokenOwner>(bytes)
            .ok()
            .filter(|t| t.v == 1)
            .map(|t| t.session_id),
        SideSpace::Timer => TimerRecord::decode(key, bytes).ok().map(|t| t.session_id),
        _ => None,
    }
}
