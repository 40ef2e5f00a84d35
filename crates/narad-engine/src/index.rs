//! The session index: one typed, versioned entry per session in the
//! store's `SessionIndex` space, written in the same batch as the events
//! (or metadata) that change it, so it is never behind the journal. It
//! answers [`Engine::sessions`] without replaying any journal, and can
//! always be rebuilt from the journals ([`Engine::rebuild_index_entry`],
//! [`Engine::check_index`], [`Engine::reindex`]).

use std::collections::BTreeMap;
use std::time::SystemTime;

use bytes::Bytes;
use narad_core::checker::{RunState, Slot};
use narad_store::{Damage, Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};
use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Action, Principal};
use crate::journal::{Journal, Meta};

const VERSION: u32 = 1;

/// Where a session stands, as the index keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// No run or workflow yet.
    Idle,
    /// A top-level run or workflow is active.
    Running,
    /// The active execution is paused (not for an interrupt).
    Paused,
    /// An interrupt is open: the session waits for a person.
    AwaitingInput,
    /// Every run and workflow is terminal.
    Finished,
    /// Archived: read-only.
    Archived,
}

impl SessionStatus {
    /// Its stable lowercase name (`awaiting_input`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::AwaitingInput => "awaiting_input",
            Self::Finished => "finished",
            Self::Archived => "archived",
        }
    }

    /// The status named `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Idle,
            Self::Running,
            Self::Paused,
            Self::AwaitingInput,
            Self::Finished,
            Self::Archived,
        ]
        .into_iter()
        .find(|v| v.name() == s)
    }
}

/// The active top-level execution of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveExecution {
    /// `run` or `workflow`.
    pub kind: String,
    /// Its `runId` or `workflowId`.
    pub id: String,
}

/// One session's index entry (`SessionIndex/<sessionId>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// Record version.
    pub v: u32,
    /// The session.
    pub session_id: String,
    /// Where it stands.
    pub status: SessionStatus,
    /// Its workspace.
    pub workspace_id: Option<String>,
    /// When it was created (RFC 3339; for an imported session, the
    /// timestamp of its first event; absent for sessions created before
    /// the index).
    pub created_at: Option<String>,
    /// The timestamp of its last event (its creation while it has none).
    pub updated_at: Option<String>,
    /// The active top-level execution.
    pub active_execution: Option<ActiveExecution>,
    /// Events in its journal (its head).
    pub events: u64,
    /// Host labels.
    pub labels: BTreeMap<String, String>,
    /// The session and `sessionSequence` it was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<(String, u64)>,
}

impl SessionEntry {
    /// The entry of a session from its reduced state, metadata, head and
    /// the timestamp of its last event. Pure: the same journal gives the
    /// same entry, which is what lets `verify` compare it with a rebuild.
    pub(crate) fn of(j: &Journal, meta: &Meta, head: u64, last_event_at: Option<String>) -> Self {
        let sid = j.session_id.as_str();
        let c = &j.checker;
        let active = c.slot(sid).map(|s| match s {
            Slot::Run(r) => ActiveExecution {
                kind: "run".into(),
                id: r.clone(),
            },
            Slot::Workflow(w) => ActiveExecution {
                kind: "workflow".into(),
                id: w.clone(),
            },
        });
        // A terminal run holds no interrupt and is not paused: only open
        // runs are scanned, so the cost follows open work, not history.
        let interrupt = c.open_runs(sid).any(|(_, r)| r.open_interrupt.is_some())
            || c.workflows(sid).any(|(_, w)| w.open_interrupt.is_some());
        let paused = c.open_runs(sid).any(|(_, r)| r.state == RunState::Paused)
            || c.workflows(sid).any(|(_, w)| w.open_pause.is_some());
        let any = c.has_runs(sid) || c.workflows(sid).next().is_some();
        let status = if meta.archived {
            SessionStatus::Archived
        } else if interrupt {
            SessionStatus::AwaitingInput
        } else if paused {
            SessionStatus::Paused
        } else if active.is_some() {
            SessionStatus::Running
        } else if any {
            SessionStatus::Finished
        } else {
            SessionStatus::Idle
        };
        Self {
            v: VERSION,
            session_id: sid.to_owned(),
            status,
            workspace_id: meta.workspace_id.clone(),
            created_at: meta.created_at.clone(),
            updated_at: last_event_at.or_else(|| meta.created_at.clone()),
            active_execution: active,
            events: head,
            labels: meta.labels.clone(),
            forked_from: meta.origin.clone(),
        }
    }

    /// Its stored bytes.
    pub(crate) fn bytes(&self) -> Result<Bytes, EngineError> {
        serde_json::to_vec(self)
            .map(Bytes::from)
            .map_err(|_| corrupt(&self.session_id))
    }

    /// The write storing it (the batch is guarded by the session head).
    pub(crate) fn write(&self) -> Result<SideWrite, EngineError> {
        Ok(SideWrite {
            space: SideSpace::SessionIndex,
            key: self.session_id.clone(),
            expect: Expect::Any,
            value: Some(self.bytes()?),
        })
    }

    /// Reads a stored entry; anything else is `corrupt_record`.
    pub fn decode(key: &str, bytes: &[u8]) -> Result<Self, EngineError> {
        let e: Self = serde_json::from_slice(bytes).map_err(|_| corrupt(key))?;
        if e.v != VERSION || e.session_id != key {
            return Err(corrupt(key));
        }
        Ok(e)
    }
}

fn corrupt(key: &str) -> EngineError {
    EngineError::CorruptRecord {
        space: "session_index",
        key: key.to_owned(),
    }
}

/// The `timestamp` of an event's bytes.
pub(crate) fn event_time(ev: &StoredEvent) -> Option<String> {
    #[derive(Deserialize)]
    struct At {
        timestamp: String,
    }
    serde_json::from_slice::<At>(&ev.bytes)
        .ok()
        .map(|a| a.timestamp)
}

/// What [`Engine::sessions`] looks for; every set field must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionQuery {
    /// Any of these statuses (empty: any).
    pub status: Vec<SessionStatus>,
    /// This workspace.
    pub workspace_id: Option<String>,
    /// Every one of these labels, with these values.
    pub labels: BTreeMap<String, String>,
    /// Last activity strictly after this time.
    pub updated_after: Option<SystemTime>,
    /// Last activity strictly before this time.
    pub updated_before: Option<SystemTime>,
}

impl SessionQuery {
    fn matches(&self, e: &SessionEntry, after: Option<&str>, before: Option<&str>) -> bool {
        (self.status.is_empty() || self.status.contains(&e.status))
            && (self.workspace_id.is_none() || self.workspace_id == e.workspace_id)
            && self.labels.iter().all(|(k, v)| e.labels.get(k) == Some(v))
            && after.is_none_or(|a| e.updated_at.as_deref().is_some_and(|u| u > a))
            && before.is_none_or(|b| e.updated_at.as_deref().is_some_and(|u| u < b))
    }
}

/// One page of [`Engine::sessions`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionPage {
    /// Matching entries, in session-id order.
    pub sessions: Vec<SessionEntry>,
    /// The cursor to pass next while entries remain (a session id: stable
    /// under concurrent writes).
    pub next: Option<String>,
}

/// Index entries read per store call.
const SCAN: usize = 1024;

impl<S: Store + 'static> Engine<S> {
    /// Sessions matching `query`, in session-id order, at most `limit`,
    /// from the index alone: no journal is read. `after` is the previous
    /// page's `next`. Sessions `p` may not read are left out.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{Principal, SessionQuery, SessionStatus};
    /// let q = SessionQuery { status: vec![SessionStatus::AwaitingInput], ..SessionQuery::default() };
    /// let page = engine.sessions(&Principal::new("host"), &q, None, 50).await?;
    /// for s in &page.sessions {
    ///     println!("{} waits since {:?}", s.session_id, s.updated_at);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn sessions(
        &self,
        p: &Principal,
        query: &SessionQuery,
        after: Option<&str>,
        limit: usize,
    ) -> Result<SessionPage, EngineError> {
        let upd_after = query.updated_after.map(timestamp);
        let upd_before = query.updated_before.map(timestamp);
        let limit = limit.max(1);
        let mut out = SessionPage::default();
        let mut cursor = after.map(str::to_owned);
        loop {
            let page = self
                .inner
                .store
                .list_side(SideSpace::SessionIndex, cursor.as_deref(), SCAN)
                .await?;
            let full = page.len() == SCAN;
            for (key, bytes) in page {
                if cursor.as_ref().is_some_and(|c| key <= *c) {
                    return Err(StoreError::corrupt(Damage::CursorStalled, None, None).into());
                }
                cursor = Some(key.clone());
                let e = SessionEntry::decode(&key, &bytes)?;
                if !query.matches(&e, upd_after.as_deref(), upd_before.as_deref()) {
                    continue;
                }
                if self
                    .authorize(p, Action::Read { session_id: &key })
                    .is_err()
                {
                    continue;
                }
                out.sessions.push(e);
                if out.sessions.len() == limit {
                    out.next = cursor;
                    return Ok(out);
                }
            }
            if !full {
                return Ok(out);
            }
        }
    }

    /// One session's stored index entry.
    pub async fn index_entry(&self, session_id: &str) -> Result<Option<SessionEntry>, EngineError> {
        match self
            .inner
            .store
            .side(SideSpace::SessionIndex, session_id)
            .await?
        {
            Some(b) => Ok(Some(SessionEntry::decode(session_id, &b)?)),
            None => Ok(None),
        }
    }

    /// The entry the index should hold for a session, rebuilt from its
    /// metadata and journal (replayed).
    pub async fn rebuild_index_entry(&self, session_id: &str) -> Result<SessionEntry, EngineError> {
        let meta = self.meta(session_id).await?;
        let j = Journal::hydrate(&*self.inner.store, session_id, meta.clone()).await?;
        let last = if j.head == 0 {
            None
        } else {
            let page = self
                .inner
                .store
                .read_session(session_id, j.head - 1, 1)
                .await?;
            page.events.first().and_then(event_time)
        };
        Ok(SessionEntry::of(&j, &meta, j.head, last))
    }

    /// Whether the stored entry of a session equals its rebuild: `None`
    /// when it does, else the rebuilt entry.
    pub async fn check_index(&self, session_id: &str) -> Result<Option<SessionEntry>, EngineError> {
        let rebuilt = self.rebuild_index_entry(session_id).await?;
        let stored = match self.index_entry(session_id).await {
            Ok(s) => s,
            Err(EngineError::CorruptRecord { .. }) => None,
            Err(e) => return Err(e),
        };
        Ok((stored.as_ref() != Some(&rebuilt)).then_some(rebuilt))
    }

    /// Rewrites a session's index entry from its rebuild when it differs,
    /// and adds the interrupt-index entries its journal calls for that the
    /// store lacks ([`Engine::unindexed_interrupts`]: an import by an
    /// older build wrote none). One batch, guarded by the session head.
    /// Returns whether it wrote.
    pub async fn reindex(&self, p: &Principal, session_id: &str) -> Result<bool, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let cell = self.cell(session_id);
        let _held = cell.lock().await;
        let rebuilt = self.check_index(session_id).await?;
        let missing = self.unindexed_interrupts(session_id).await?;
        let mut side: Vec<SideWrite> = missing
            .iter()
            .map(|iid| crate::interrupt_index::entry(session_id, iid))
            .collect();
        let head = match rebuilt {
            Some(rebuilt) => {
                side.push(rebuilt.write()?);
                rebuilt.events
            }
            None if side.is_empty() => return Ok(false),
            None => self.inner.store.head(session_id).await?,
        };
        let batch = narad_store::Batch {
            session_id: session_id.to_owned(),
            expected_head: head,
            side,
            ..narad_store::Batch::default()
        };
        self.append_resolving(batch).await?;
        Ok(true)
    }
}
