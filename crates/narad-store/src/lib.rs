//! # narad-store
//!
//! The storage contract every Narad backend implements. Users swap backends
//! without changing their code, and the contract must admit a networked,
//! multi-writer backend (PostgreSQL), so it is async, fallible, and guarded
//! by optimistic concurrency on the session head rather than by in-process
//! locks.
//!
//! Backends: `narad-store-redb` (the embedded default),
//! `narad-store-sqlite` and `narad-store-postgres`, all passing the shared
//! `suite` (instantiated per backend with `store_suite!`). The suite, the
//! damaged-store suite, the fault-injecting store and the append bench live
//! behind the `test-suite` feature, which backends enable only as a
//! dev-dependency: the production library contains no test code.
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
//!   A batch may also carry watch events of a workspace stream
//!   ([`WatchWrite`]): deduplicated by `(workspaceId, eventId)` like
//!   events, and their revisions must increase per workspace
//!   ([`StoreError::RevisionRegression`]). The batch rules live in one
//!   place, [`plan_batch`], which every backend calls inside its write
//!   transaction.
//! - Reads return events as the exact bytes appended, ordered by the cursor
//!   they page on, with the next cursor when more remain. Every row read is
//!   checked against its key ([`row::decode_event`]); a damaged store is
//!   [`StoreError::Corrupt`], and paging loops require their cursor to
//!   advance ([`row::advance`]).
//!   [`Store::find_events`] reads a session's events by eventId (the
//!   index every backend keeps for redelivery), each checked against its
//!   key and its id.
//!   [`Store::read_history`] combines the session, run-tree and workflow
//!   cursors of §10.2 and refuses cursors that are not mutually consistent
//!   ([`StoreError::CursorConflict`]; the rule is in [`history`]).
//! - [`Store::subscribe`] announces each durable head advance ([`Commit`]),
//!   after the commit; subscribe before reading history and nothing falls
//!   between replay and follow (§10.3).
//! - Deleting a session is a batch too ([`lifecycle`]): one that writes
//!   the session's own [`SideSpace::Tombstone`] removes its journal in the
//!   same transaction, and every later batch of the session is
//!   [`StoreError::SessionDeleted`].
//! - [`Store::close`] finishes every accepted append and releases the file;
//!   later calls fail with [`StoreError::Closed`]. Opening a file written by
//!   an older layout migrates it forward in one transaction; a file written
//!   by a newer layout is refused with [`StoreError::NewerSchema`], and one
//!   that holds another application's database (or, where an existing store
//!   is asked for, none) with [`StoreError::NotAStore`], unwritten.
//!
//! ```
//! # async fn demo(store: &dyn narad_store::Store) -> Result<(), narad_store::StoreError> {
//! use narad_store::{HistoryQuery, Store};
//! let mut commits = store.subscribe();
//! let page = store
//!     .read_history("session-1", &HistoryQuery::default().run("run-1", Some(3)))
//!     .await?;
//! for ev in &page.events {
//!     println!("{} at {:?}", ev.event_id, ev.position);
//! }
//! # let _ = commits.recv(); Ok(()) }
//! ```

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
    /// Bytes that no longer parse as an authority event are
    /// [`StoreError::Corrupt`]. Backends read through [`row::decode_event`],
    /// which also checks the bytes against their row's key.
    pub fn from_stored_bytes(bytes: &[u8]) -> Result<Self, StoreError> {
        match narad_core::Validator::default().parse(bytes) {
            Ok(narad_core::Parsed::Record {
                record: narad_core::Record::Authority(ev),
                ..
            }) => Ok(Self::from(&ev)),
            _ => Err(StoreError::corrupt(Damage::Unreadable, None, None)),
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
    /// Host metadata of a session (its active profiles), keyed by session id.
    Session,
    /// The owning session of an interrupt, keyed by `interruptId`.
    Interrupt,
    /// The engine's due index: one record per deadline it owns, keyed so
    /// that byte order is due-time order.
    Timer,
    /// Queued top-level starts, keyed so that byte order is queue order.
    Queue,
    /// Deleted sessions, keyed by session id: a batch writing its own
    /// session's tombstone deletes that session's journal, and any later
    /// batch of the session is refused ([`lifecycle`]).
    Tombstone,
    /// The session index, keyed by session id: one engine-owned entry per
    /// session, written in the same batch as the events that change it.
    SessionIndex,
    /// Idempotency keys: one record per key a caller gave a command,
    /// written in the same batch as the command's events, holding a digest
    /// of the request and the command's original result. Keyed by the
    /// owning session (length-prefixed) and the caller's key.
    Idempotency,
    /// Closed runs and tool calls the engine's checker left out of the
    /// session's snapshot (`narad_core::checker::Checker::take_closed`),
    /// written in the batch of the snapshot that leaves them out. Keyed by
    /// the owning session (length-prefixed), a kind letter and the id.
    Closed,
}

impl SideSpace {
    /// The stable number every backend stores for this space.
    pub const fn id(self) -> u8 {
        match self {
            Self::Lease => 1,
            Self::Token => 2,
            Self::Snapshot => 3,
            Self::Session => 4,
            Self::Interrupt => 5,
            Self::Timer => 6,
            Self::Queue => 7,
            Self::Tombstone => 8,
            Self::SessionIndex => 9,
            Self::Idempotency => 10,
            Self::Closed => 11,
        }
    }

    /// Every space, in id order: what a migration or a verification must
    /// cover so that no space can be forgotten.
    pub const ALL: [SideSpace; 11] = [
        Self::Lease,
        Self::Token,
        Self::Snapshot,
        Self::Session,
        Self::Interrupt,
        Self::Timer,
        Self::Queue,
        Self::Tombstone,
        Self::SessionIndex,
        Self::Idempotency,
        Self::Closed,
    ];

    /// A stable lowercase name, for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Lease => "lease",
            Self::Token => "token",
            Self::Snapshot => "snapshot",
            Self::Session => "session",
            Self::Interrupt => "interrupt",
            Self::Timer => "timer",
            Self::Queue => "queue",
            Self::Tombstone => "tombstone",
            Self::SessionIndex => "session_index",
            Self::Idempotency => "idempotency",
            Self::Closed => "closed",
        }
    }
}

/// A sequence as the signed 64-bit integer SQL backends store.
pub fn to_sql_int(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Backend("sequence out of range".into()))
}

/// A stored signed 64-bit integer back as a sequence.
pub fn from_sql_int(v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Backend("stored sequence is negative".into()))
}

/// Whether a store opened read-only can be read by this build: its layout
/// `found` must be this build's `supported` one, since a newer layout is
/// unknown to it ([`StoreError::NewerSchema`]) and an older one needs the
/// migration only a writable open runs ([`StoreError::OlderSchema`]).
///
/// ```
/// use narad_store::{read_only_layout, StoreError};
/// assert_eq!(read_only_layout(3, 3), Ok(()));
/// assert_eq!(read_only_layout(2, 3), Err(StoreError::OlderSchema { found: 2, supported: 3 }));
/// assert_eq!(read_only_layout(9, 3), Err(StoreError::NewerSchema { found: 9, supported: 3 }));
/// ```
pub fn read_only_layout(found: u64, supported: u32) -> Result<(), StoreError> {
    let found = u32::try_from(found).unwrap_or(u32::MAX);
    match found.cmp(&supported) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(StoreError::NewerSchema { found, supported }),
        std::cmp::Ordering::Less => Err(StoreError::OlderSchema { found, supported }),
    }
}

/// Whether a file backend may use the database it opened, from its tables
/// alone and before it writes anything: one with the layout's `meta` table
/// (every layout has had one) is a store; one with other tables only is
/// another application's, and one with none is a new file, which only an
/// open that may `create` a store takes. Both refusals are
/// [`StoreError::NotAStore`] naming `path`.
///
/// ```
/// use narad_store::{holds_a_store, StoreError};
/// let refused = Err(StoreError::NotAStore { path: "crm.db".into() });
/// assert_eq!(holds_a_store(true, true, false, "crm.db"), Ok(()));
/// assert_eq!(holds_a_store(false, false, true, "crm.db"), Ok(()));
/// assert_eq!(holds_a_store(false, false, false, "crm.db"), refused);
/// assert_eq!(holds_a_store(false, true, true, "crm.db"), refused);
/// ```
pub fn holds_a_store(
    has_meta: bool,
    has_tables: bool,
    create: bool,
    path: &str,
) -> Result<(), StoreError> {
    if has_meta || (!has_tables && create) {
        Ok(())
    } else {
        Err(StoreError::NotAStore {
            path: path.to_owned(),
        })
    }
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

/// A watch event as the store keeps it: identity, revision, exact bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredWatch {
    /// Dedup key with the workspace id (§4.1).
    pub event_id: String,
    /// Monotonic within the workspace.
    pub revision: u64,
    /// The bytes exactly as appended.
    pub bytes: Bytes,
}

impl StoredWatch {
    /// Rebuilds a stored watch event from its revision and bytes (backends
    /// keep the id only in their dedup index and read it back from the bytes).
    pub fn from_stored_bytes(revision: u64, bytes: &[u8]) -> Result<Self, StoreError> {
        #[derive(serde::Deserialize)]
        struct Id {
            #[serde(rename = "eventId")]
            event_id: String,
        }
        let id: Id = serde_json::from_slice(bytes)
            .map_err(|_| StoreError::corrupt(Damage::Unreadable, None, Some(revision)))?;
        Ok(Self {
            event_id: id.event_id,
            revision,
            bytes: Bytes::copy_from_slice(bytes),
        })
    }
}

/// One watch event for a workspace's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchWrite {
    /// The workspace.
    pub workspace_id: String,
    /// The event.
    pub event: StoredWatch,
}

impl WatchWrite {
    /// The store form of a workspace-watch event (`workspace.revision`,
    /// `session.created`, `session.updated`, `session.archived`); `None` for
    /// watch events of other scopes.
    pub fn from_event(ev: &narad_core::WatchEvent) -> Option<Self> {
        use narad_core::model::WatchPayload as P;
        let workspace_id = match &ev.payload {
            P::WorkspaceRevision { workspace_id, .. }
            | P::SessionCreated { workspace_id, .. }
            | P::SessionUpdated { workspace_id, .. }
            | P::SessionArchived { workspace_id, .. } => workspace_id.clone(),
            _ => return None,
        };
        Some(Self {
            workspace_id,
            event: StoredWatch {
                event_id: ev.envelope.event_id.clone(),
                revision: ev.envelope.revision,
                bytes: ev.wire.bytes().clone(),
            },
        })
    }
}

/// A page of a workspace's watch stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WatchPage {
    /// Events in revision order.
    pub events: Vec<StoredWatch>,
    /// The revision to read after next when more remain.
    pub next: Option<u64>,
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
    /// Workspace watch events committed in the same transaction.
    pub watch: Vec<WatchWrite>,
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

/// The bytes of events a page of history stops at: a read returns at most
/// its `limit` events, and fewer once their bytes reach this (never fewer
/// than one), with `next` set. So a page of the largest records (512 KB
/// each) costs a few MiB, not `limit` times 512 KB.
pub const PAGE_BYTES: usize = 4 << 20;

/// Whether a page holding `events` events of `bytes` bytes in all is full
/// (see [`PAGE_BYTES`]): the rule every backend's history reads apply.
///
/// ```
/// use narad_store::{page_full, PAGE_BYTES};
/// assert!(!page_full(0, 0, 10));
/// assert!(page_full(10, 100, 10));
/// assert!(page_full(1, PAGE_BYTES, 10));
/// assert!(!page_full(0, PAGE_BYTES, 10), "a page holds at least one event");
/// ```
pub fn page_full(events: usize, bytes: usize, limit: usize) -> bool {
    events >= limit || (events > 0 && bytes >= PAGE_BYTES)
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
    /// A watch event's revision does not exceed its workspace's newest.
    #[error("watch revision must exceed the workspace's current {current}")]
    RevisionRegression {
        /// The workspace's newest stored revision.
        current: u64,
    },
    /// The store was closed.
    #[error("store is closed")]
    Closed,
    /// The file was written by a newer store version.
    #[error("store schema version {found} is newer than supported {supported}")]
    NewerSchema {
        /// Version found.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// The backend failed (IO, connection); message sanitized.
    #[error("storage backend failed: {0}")]
    Backend(String),
    /// Stored data is damaged: bytes that disagree with their row's key, a
    /// read cursor that does not advance, a value of the wrong type, or a
    /// file the backend's engine cannot read. Names what it knows of where.
    #[error("{}", row::damage_message(path.as_deref(), session.as_deref(), *position, *damage))]
    Corrupt {
        /// What is wrong.
        damage: Damage,
        /// The session whose rows are damaged, when known.
        session: Option<String>,
        /// The damaged position (a `sessionSequence` or scope position), when known.
        position: Option<u64>,
        /// The store's file, when the backend has one.
        path: Option<String>,
    },
    /// A backend was asked, while deciding a batch, for a read the batch
    /// does not declare ([`plan::Reads`]): a bug in the batch rules, never
    /// answered with a guess.
    #[error("batch rules read {what}, which the batch does not declare")]
    UndeclaredRead {
        /// Which kind of read.
        what: &'static str,
    },
    /// The session was deleted: its tombstone refuses every later batch
    /// (a late redelivery is refused, never resurrected).
    #[error("session `{}` was deleted", session_id.escape_debug())]
    SessionDeleted {
        /// The deleted session.
        session_id: String,
    },
    /// An existing store was asked for and there is none (read commands
    /// never create a store).
    #[error("no store at {path}")]
    NotFound {
        /// The path (or schema) that was looked for.
        path: String,
    },
    /// The file holds a database, but not a Narad store: another
    /// application's (it has tables and no store layout record), or an
    /// empty one where an existing store was asked for. It was not
    /// written: no table, journal mode or layout record was added.
    #[error("{path} holds no Narad store; it was left as it was")]
    NotAStore {
        /// The file.
        path: String,
    },
    /// The store was opened read-only (its file could not be opened for
    /// writing): reads are served, and every append is refused.
    #[error("the store is open read-only; nothing was written")]
    ReadOnly,
    /// A store opened read-only holds an older layout, which only a
    /// writable open migrates.
    #[error("layout {found} of this store needs migrating to {supported}, which a read-only open cannot do")]
    OlderSchema {
        /// The layout the store holds.
        found: u32,
        /// The layout this build reads.
        supported: u32,
    },
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
            Self::RevisionRegression { .. } => "revision_regression",
            Self::Closed => "closed",
            Self::NewerSchema { .. } => "newer_schema",
            Self::Backend(_) => "backend",
            Self::ReadOnly => "read_only",
            Self::OlderSchema { .. } => "older_schema",
            Self::Corrupt { .. } => "corrupt",
            Self::UndeclaredRead { .. } => "undeclared_read",
            Self::NotFound { .. } => "not_found",
            Self::NotAStore { .. } => "not_a_store",
            Self::SessionDeleted { .. } => "session_deleted",
        }
    }

    /// A damage report without a location yet.
    pub fn corrupt(damage: Damage, session: Option<&str>, position: Option<u64>) -> Self {
        Self::Corrupt {
            damage,
            session: session.map(str::to_owned),
            position,
            path: None,
        }
    }

    /// Names the store's file in a [`StoreError::Corrupt`] that does not
    /// name one yet; other errors pass unchanged.
    pub fn at_path(self, file: &std::path::Path) -> Self {
        match self {
            Self::Corrupt {
                damage,
                session,
                position,
                path: None,
            } => Self::Corrupt {
                damage,
                session,
                position,
                path: Some(file.display().to_string()),
            },
            other => other,
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

/// The storage contract (see the crate docs for each method's rules).
#[async_trait]
pub trait Store: Send + Sync {
    /// Appends one atomic batch to one session.
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError>;
    /// The session head (0 for an unknown session).
    async fn head(&self, session_id: &str) -> Result<u64, StoreError>;
    /// Session history after `after` (a sessionSequence), at most `limit`
    /// events and about [`PAGE_BYTES`] of them ([`page_full`]).
    async fn read_session(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError>;
    /// The stored events of `session_id` among `event_ids`, in session
    /// order; an id that is not stored is left out. This is how a host
    /// whose checker was restored without the eventIds of the events its
    /// snapshot covers ([`narad_core::checker::Checker::snapshot_for_store`])
    /// learns whether a record redelivers one of them (§4.1). Each event
    /// is checked against its key and its id ([`row::decode_found_event`]).
    async fn find_events(
        &self,
        session_id: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, StoreError>;
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
    /// Side records of `space` whose keys sort strictly after `after` in
    /// byte order, at most `limit`, in that order.
    async fn list_side(
        &self,
        space: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError>;
    /// Workspaces holding a watch stream, after `after` in byte order, at
    /// most `limit`.
    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    /// A workspace's watch stream after `after` (a revision), at most `limit`.
    async fn read_watch(
        &self,
        workspace_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<WatchPage, StoreError>;
    /// Filtered history with combined cursors (§10.2); see [`history`].
    async fn read_history(
        &self,
        session_id: &str,
        query: &HistoryQuery,
    ) -> Result<Page, StoreError> {
        history::read_history(self, session_id, query).await
    }
    /// Announces every later commit of this handle and its clones.
    fn subscribe(&self) -> Subscription;
    /// Finishes accepted appends and releases the backend; idempotent.
    async fn close(&self) -> Result<(), StoreError>;
}

#[cfg(feature = "test-suite")]
pub mod bench;
#[cfg(feature = "test-suite")]
pub mod bench_reclaim;
#[cfg(feature = "test-suite")]
pub mod damage;
#[cfg(feature = "test-suite")]
pub mod fault;
pub mod group;
pub mod history;
pub mod lifecycle;
pub mod migrate;
pub mod pages;
pub mod plan;
pub mod row;
#[cfg(feature = "test-suite")]
pub mod suite;
#[cfg(feature = "test-suite")]
pub mod suite_crash;
#[cfg(feature = "test-suite")]
pub mod suite_full;
#[cfg(feature = "test-suite")]
pub mod suite_history;
#[cfg(feature = "test-suite")]
pub mod suite_lifecycle;
#[cfg(feature = "test-suite")]
pub mod suite_listing;
#[cfg(feature = "test-suite")]
pub mod suite_read_only;
#[cfg(feature = "test-suite")]
pub mod suite_side;
mod writer_wait;

pub use group::{Commit, Notice, Subscription};
pub use history::HistoryQuery;
pub use pages::JournalPages;
pub use plan::{plan_batch, Plan, Reads, ScopeKey, View};
pub use row::Damage;
pub use writer_wait::{set_writer_spin, writer_spin, MAX_WRITER_SPIN};
