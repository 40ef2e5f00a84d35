//! The engine's typed errors. Codes are stable; the checker's codes pass
//! through unchanged (they are the spec rule that the command would break).

use narad_store::StoreError;

/// Why a command or read was refused. Nothing was appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The command would break a protocol rule; `code` is the checker's
    /// (e.g. `session_slot_busy`, `open_work`, `wait_mismatch`).
    #[error("{message} (§{section})")]
    Rejected {
        /// Stable rule code.
        code: &'static str,
        /// Spec section.
        section: &'static str,
        /// Sanitized message (ids only).
        message: String,
    },
    /// The principal may not do this.
    #[error("not authorized")]
    NotAuthorized,
    /// No such session.
    #[error("no session `{}` in this store", session_id.escape_debug())]
    UnknownSession {
        /// The session asked for.
        session_id: String,
    },
    /// The session exists already.
    #[error("session `{}` exists already", session_id.escape_debug())]
    SessionExists {
        /// The session asked for.
        session_id: String,
    },
    /// No such run in the session.
    #[error("no run `{}` in this session", run_id.escape_debug())]
    UnknownRun {
        /// The run asked for.
        run_id: String,
    },
    /// No such tool call in the session.
    #[error("no tool call `{}` in this session", tool_call_id.escape_debug())]
    UnknownToolCall {
        /// The tool call asked for.
        tool_call_id: String,
    },
    /// No open interrupt with this id.
    #[error("no open interrupt `{}` in this store", interrupt_id.escape_debug())]
    UnknownInterrupt {
        /// The interrupt asked for.
        interrupt_id: String,
    },
    /// The interrupt was resolved already (by a person, expiry or a stop).
    #[error(
        "interrupt `{}` was already resolved with decision `{}`",
        interrupt_id.escape_debug(),
        decision.escape_debug()
    )]
    AlreadyResolved {
        /// The interrupt.
        interrupt_id: String,
        /// The decision it was resolved with.
        decision: String,
    },
    /// A retried command with the same id (its idempotency key) but a
    /// different body.
    #[error("{what} was recorded already with a different body; a retry must repeat it exactly")]
    IdempotencyConflict {
        /// The id that was reused (kind and id, no content).
        what: String,
    },
    /// `stop` of the active top-level run when none is running.
    #[error("nothing is running in this session: no active top-level run to stop")]
    NothingRunning,
    /// A page limit of 0 (a paging loop would never move).
    #[error("a page limit must be at least 1")]
    ZeroLimit,
    /// The interrupt's `expiresAt` has passed on the engine's clock: a
    /// request with it is refused, and so is a resolution other than
    /// `expired`.
    #[error("the interrupt's expiry has passed")]
    InterruptExpired,
    /// `expectedRevision` did not match the owning journal's position.
    #[error("owning journal is at {current}, not the expected {expected}")]
    RevisionConflict {
        /// What the caller expected.
        expected: u64,
        /// The journal's current position.
        current: u64,
    },
    /// The event's profile is not active in this session.
    #[error("profile of `{event_type}` is not active in this session")]
    ProfileInactive {
        /// The refused type.
        event_type: String,
    },
    /// A command argument is malformed (e.g. not a JSON object).
    #[error("{0}")]
    InvalidCommand(String),
    /// A client-execution control was refused (§11): `lease_invalid`,
    /// `token_unknown`, `token_mismatch`, `token_expired`,
    /// `finish_conflict`, `call_closed`, `executor_mismatch`.
    #[error("{message}")]
    Client {
        /// Stable code.
        code: &'static str,
        /// Sanitized message (ids only).
        message: String,
    },
    /// A stored engine record (a client-execution lease or token record)
    /// lacks a field, holds one of the wrong type, or has an unknown
    /// version. Nothing was written.
    #[error("the {space} record {key} is unreadable")]
    CorruptRecord {
        /// The record's side space (`lease`, `token`).
        space: &'static str,
        /// Its key (a token's only by its kind prefix: it is a credential).
        key: String,
    },
    /// A read → modify → conditional write kept losing to other writers
    /// (of a session, an executor record or a workspace stream); retry later.
    #[error("session is contended; retry")]
    Contended,
    /// A delete (or retention) was refused because the session has open
    /// work; `open` names it (ids only). Force it to discard that work.
    #[error("session has open work: {open}")]
    OpenWork {
        /// What is open, e.g. `runs run-1; interrupts int-2`.
        open: String,
    },
    /// The session is archived: read-only. Commands are refused; reads,
    /// history and subscriptions still work.
    #[error("session is archived")]
    SessionArchived,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Rejected { code, .. } => code,
            Self::NotAuthorized => "not_authorized",
            Self::UnknownSession { .. } => "unknown_session",
            Self::SessionExists { .. } => "session_exists",
            Self::UnknownRun { .. } => "unknown_run",
            Self::UnknownToolCall { .. } => "unknown_tool_call",
            Self::UnknownInterrupt { .. } => "unknown_interrupt",
            Self::InterruptExpired => "interrupt_expired",
            Self::AlreadyResolved { .. } => "interrupt_already_resolved",
            Self::NothingRunning => "nothing_running",
            Self::IdempotencyConflict { .. } => "idempotency_conflict",
            Self::ZeroLimit => "invalid_limit",
            Self::RevisionConflict { .. } => "revision_conflict",
            Self::ProfileInactive { .. } => "profile_inactive",
            Self::InvalidCommand(_) => "invalid_command",
            Self::Client { code, .. } => code,
            Self::CorruptRecord { .. } => "corrupt_record",
            Self::Contended => "contended",
            Self::OpenWork { .. } => "session_has_open_work",
            Self::SessionArchived => "session_archived",
            Self::Store(e) => e.code(),
        }
    }
}
