//! # narad-store
//!
//! The storage contract every Narad backend implements. Users swap backends
//! without changing their code, and the contract must admit a networked,
//! multi-writer backend (PostgreSQL), so it is async, fallible, and guarded
//! by optimistic concurrency on the session head rather than by in-process
//! locks.
//!
//! **Status:** the contract and the shared [`suite`] (instantiated per
//! backend with [`store_suite!`]); `narad-store-redb` implements it.
//! SQLite and PostgreSQL follow (issues 4 and 8).
//!
//! ## The contract, per method
//!
//! - [`Store::append`]: one session, one atomic batch. Every event of the
//!   batch becomes durable together or none does. The batch names the head
//!   it expects; a stale head is [`StoreError::HeadConflict`] carrying the
//!   current head, and nothing is written. The store verifies what it
//!   indexes: `sessionSequence` continues the head, and `workflowSequence`
//!   and run-tree `sequence` continue their scopes' heads; a batch that
//!   breaks any of them is refused whole ([`StoreError::Contiguity`]). An
//!   event whose `(sessionId, eventId)` is stored with identical bytes is a
//!   redelivery: it is not written again and its stored position is
//!   reported; the same id with other bytes is
//!   [`StoreError::EventConflict`]. Side writes in the batch commit in the
//!   same transaction, each guarded by its [`Expect`].
//! - Reads return events as the exact bytes appended, ordered by the cursor
//!   they page on, with the next cursor when more remain.
//!
//! Still to be added with issue 4: combined-cursor reads (§10.2, refused as
//! [`StoreError::CursorConflict`]), the workspace-watch stream, commit
//! notification for live subscribers, open/close and schema migration.

use async_trait::async_trait;
use bytes::Bytes;
use narad_core::AuthorityEvent;

/// Where an event sits in the three ordering domains of §4.2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// Contiguous from 1 across the session.
    pub session_sequence: u64,
    /// `(workflowId, workflowSequence)` for workflow events.
    pub workflow: Option<(String, u64)>,
    /// `(rootRunId, sequence)` for run-tree events.
    pub run: Option<(String, u64)>,
}

/// An authority event as the store keeps it: identity, position, exact bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The event's id (dedup key with the session id).
    pub event_id: String,
    /// Its positions.
    pub position: Position,
    /// The bytes exactly as appended.
    pub bytes: Bytes,
}

impl From<&AuthorityEvent> for StoredEvent {
    fn from(ev: &AuthorityEvent) -> Self {
        let env = &ev.envelope;
        Self {
            event_id: env.event_id.clone(),
            position: Position {
                session_sequence: env.session_sequence,
                workflow: env.workflow_id.clone().zip(env.workflow_sequence),
                run: env.root_run_id.clone().zip(env.sequence),
            },
            bytes: ev.wire.bytes().clone(),
        }
    }
}

impl StoredEvent {
    /// Rebuilds a stored event from its bytes: backends keep the bytes and
    /// derive identity and positions from them rather than store them twice.
    /// Bytes that no longer parse as an authority event are a backend error.
    pub fn from_stored_bytes(bytes: &[u8]) -> Result<Self, StoreError> {
        match narad_core::Validator::default().parse(bytes) {
            Ok(narad_core::Parsed::Record {
                record: narad_core::Record::Authority(ev),
                ..
            }) => Ok(Self::from(&ev)),
            _ => Err(StoreError::Backend(
                "a stored event no longer parses as an authority event".into(),
            )),
        }
    }
}

/// Durable records beside the journal (§11 leases and tokens, snapshots).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SideSpace {
    /// Client-executor leases, keyed by `clientExecutorId`.
    Lease,
    /// Execution tokens and their accepted finishes, keyed by token.
    Token,
    /// Reducer snapshots, keyed by session id.
    Snapshot,
}

/// The condition a side write requires of the current value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is there.
    Any,
    /// No value yet (first accept of a token wins).
    Absent,
    /// Exactly these bytes.
    Equals(Bytes),
}

/// One conditional write of a side record; `value: None` deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideWrite {
    /// Space.
    pub space: SideSpace,
    /// Key within the space.
    pub key: String,
    /// Required current value.
    pub expect: Expect,
    /// New value, or `None` to delete.
    pub value: Option<Bytes>,
}

/// One atomic append to one session.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The session.
    pub session_id: String,
    /// The head the caller read (0 for a new session).
    pub expected_head: u64,
    /// Events in sessionSequence order.
    pub events: Vec<StoredEvent>,
    /// Side writes committed in the same transaction.
    pub side: Vec<SideWrite>,
}

/// What an accepted append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The session head after the append.
    pub head: u64,
    /// Stored `sessionSequence` of each batch event, in batch order
    /// (for a redelivered event, where it was stored the first time).
    pub positions: Vec<u64>,
    /// True when every event was a redelivery and nothing was written.
    pub redelivered: bool,
}

/// A page of history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    /// Events in cursor order.
    pub events: Vec<StoredEvent>,
    /// The cursor to read from next when more events remain (§10.2).
    pub next: Option<u64>,
}

/// Typed store failures with stable machine codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The batch's expected head is stale; nothing was written.
    #[error("session head is {current}, not the expected {expected}")]
    HeadConflict {
        /// The head the batch expected.
        expected: u64,
        /// The current head.
        current: u64,
    },
    /// An event id is stored with different bytes.
    #[error("event id is stored with different data")]
    EventConflict,
    /// A batch breaks the contiguity of an ordering domain.
    #[error("batch breaks {domain} contiguity")]
    Contiguity {
        /// `sessionSequence`, `workflowSequence` or `sequence`.
        domain: &'static str,
    },
    /// A side write's expectation did not hold; nothing was written.
    #[error("side record condition failed")]
    SideConflict,
    /// Combined history cursors do not identify one position (§10.2).
    #[error("history cursors are not mutually consistent")]
    CursorConflict,
    /// The file was written by a newer store version.
    #[error("store schema version {found} is newer than supported {supported}")]
    NewerSchema {
        /// Version found.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// The backend failed (IO, corruption); message sanitized.
    #[error("storage backend failed: {0}")]
    Backend(String),
}

impl StoreError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::HeadConflict { .. } => "head_conflict",
            Self::EventConflict => "duplicate_event_conflict",
            Self::Contiguity { .. } => "contiguity",
            Self::SideConflict => "side_conflict",
            Self::CursorConflict => "cursor_conflict",
            Self::NewerSchema { .. } => "newer_schema",
            Self::Backend(_) => "backend",
        }
    }
}

/// An ordering scope below the session (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A run tree, by `rootRunId`; positions are run-tree `sequence`.
    Run,
    /// A workflow, by `workflowId`; positions are `workflowSequence`.
    Workflow,
}

/// What a backend does with a batch, as decided by [`plan_batch`].
#[derive(Debug)]
pub enum Plan<'a> {
    /// Every event is stored with identical bytes: write nothing, answer this.
    Redelivered(Appended),
    /// Write `fresh` and the batch's side writes, then set the head to
    /// `appended.head`.
    Write {
        /// The events not stored yet, in batch order.
        fresh: Vec<&'a StoredEvent>,
        /// The answer once the write commits.
        appended: Appended,
    },
}

/// The batch rules every backend applies inside its write transaction, in
/// this order: redelivery (identical bytes report the stored position, other
/// bytes are [`StoreError::EventConflict`]), the head guard, contiguity of
/// all three ordering domains, side expectations. Nothing is decided by the
/// backend, so every backend refuses exactly the same batches.
///
/// The backend supplies its current `head` and three reads:
/// `stored(event)` → `(sessionSequence, same bytes)` if the id is stored;
/// `stored_head(scope, id)` → last stored position of a run tree or
/// workflow (0 if none); `side_value(write)` → the side record's current
/// value.
pub fn plan_batch<'a>(
    batch: &'a Batch,
    head: u64,
    mut stored: impl FnMut(&StoredEvent) -> Result<Option<(u64, bool)>, StoreError>,
    stored_head: impl FnMut(Scope, &str) -> Result<u64, StoreError>,
    mut side_value: impl FnMut(&SideWrite) -> Result<Option<Vec<u8>>, StoreError>,
) -> Result<Plan<'a>, StoreError> {
    let mut positions = Vec::with_capacity(batch.events.len());
    let mut fresh = Vec::new();
    for ev in &batch.events {
        match stored(ev)? {
            Some((seq, true)) => positions.push(seq),
            Some((_, false)) => return Err(StoreError::EventConflict),
            None => {
                positions.push(ev.position.session_sequence);
                fresh.push(ev);
            }
        }
    }
    if fresh.is_empty() && batch.side.is_empty() && !batch.events.is_empty() {
        return Ok(Plan::Redelivered(Appended {
            head,
            positions,
            redelivered: true,
        }));
    }
    if batch.expected_head != head {
        return Err(StoreError::HeadConflict {
            expected: batch.expected_head,
            current: head,
        });
    }
    let next = check_contiguity(head, &fresh, stored_head)?;
    for w in &batch.side {
        if !expectation_holds(&w.expect, side_value(w)?.as_deref()) {
            return Err(StoreError::SideConflict);
        }
    }
    Ok(Plan::Write {
        fresh,
        appended: Appended {
            head: next,
            positions,
            redelivered: false,
        },
    })
}

/// Checks that the new events of a batch continue the session head and the
/// head of every run tree and workflow they touch; `stored_head(scope, id)`
/// reads a scope's last stored position (0 if none). Returns the new session
/// head.
fn check_contiguity(
    head: u64,
    fresh: &[&StoredEvent],
    mut stored_head: impl FnMut(Scope, &str) -> Result<u64, StoreError>,
) -> Result<u64, StoreError> {
    let mut next = head;
    let mut heads: std::collections::BTreeMap<(u8, &str), u64> = Default::default();
    for ev in fresh {
        if ev.position.session_sequence != next + 1 {
            return Err(StoreError::Contiguity {
                domain: "sessionSequence",
            });
        }
        next += 1;
        let scoped = [
            (Scope::Run, 0, "sequence", &ev.position.run),
            (
                Scope::Workflow,
                1,
                "workflowSequence",
                &ev.position.workflow,
            ),
        ];
        for (scope, tag, domain, pos) in scoped {
            if let Some((id, seq)) = pos {
                let last = match heads.get(&(tag, id.as_str())) {
                    Some(h) => *h,
                    None => stored_head(scope, id)?,
                };
                if *seq != last + 1 {
                    return Err(StoreError::Contiguity { domain });
                }
                heads.insert((tag, id.as_str()), *seq);
            }
        }
    }
    Ok(next)
}

/// Whether a side record's current value satisfies `expect`.
fn expectation_holds(expect: &Expect, current: Option<&[u8]>) -> bool {
    match (expect, current) {
        (Expect::Any, _) => true,
        (Expect::Absent, c) => c.is_none(),
        (Expect::Equals(b), Some(c)) => c == b.as_ref(),
        (Expect::Equals(_), None) => false,
    }
}

/// The storage contract (see the crate docs for each method's rules).
#[async_trait]
pub trait Store: Send + Sync {
    /// Appends one atomic batch to one session.
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError>;
    /// The session head (0 for an unknown session).
    async fn head(&self, session_id: &str) -> Result<u64, StoreError>;
    /// Session history after `after` (a sessionSequence), at most `limit`.
    async fn read_session(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError>;
    /// A run journal's history after run-tree `sequence`.
    async fn read_run(
        &self,
        session_id: &str,
        root_run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError>;
    /// A workflow's history after `workflowSequence`.
    async fn read_workflow(
        &self,
        session_id: &str,
        workflow_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError>;
    /// Session ids after `after` in id order, at most `limit`.
    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    /// One side record.
    async fn side(&self, space: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError>;
}

pub mod bench;
pub mod suite;
