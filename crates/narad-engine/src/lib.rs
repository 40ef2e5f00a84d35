//! # narad-engine
//!
//! The embedded Narad v1 host. Every command is authorized, planned from
//! the session's reduced state, turned into authority events with every
//! applicable sequence assigned, checked event by event by the
//! `narad-core` journal checker, and appended to the store in one atomic,
//! head-guarded batch before anyone can see it. A refused command appends
//! nothing and returns an [`EngineError`] with a stable code — the
//! checker's own rule code when the command would break the protocol.
//!
//! - [`Engine`]: commands (sessions, runs, nested runs, pause/resume,
//!   terminals, stop with its closing policy, interrupts and
//!   `resolve-interrupt` by id, backend tool calls, workflows, `message`,
//!   and any profile event through [`Engine::append`]), reads
//!   ([`Engine::history`], [`Engine::capabilities`]) and live attach
//!   ([`Engine::subscribe`] → [`Follow`]).
//! - [`host`]: the injected [`Clock`], [`IdSource`] and [`Authorizer`].
//!
//! See the example on [`Engine`].

mod append;
mod archive;
pub mod client;
mod closed_history;
mod command_loop;
mod command_types;
mod engine;
mod error;
pub mod executor;
mod fork;
pub mod host;
mod idempotency;
mod idempotent;
mod import;
mod index;
mod interrupt_index;
mod interrupts;
mod journal;
mod lifecycle;
mod listing;
mod meta;
mod operator;
mod outbox;
mod queue;
mod reads;
mod retention;
mod run_commands;
mod session_cache;
mod session_commands;
mod session_side;
mod snapshot;
mod stop;
mod stream;
mod subscribe;
mod telemetry;
mod timers;
mod typed;
mod watch;
mod workspace;

pub use archive::{ARCHIVE_ACTION, LABEL_ACTION};
pub use command_types::{
    EventScope, Expiry, Interrupt, InterruptScope, NewSession, Resolve, Resolved, StartRun,
    Started, StopTarget, Terminal, ToolOutcome,
};
pub use engine::{Engine, EngineConfig, EngineStats};
pub use error::EngineError;
pub use fork::StateAt;
pub use host::{
    timestamp, Action, AllowAll, Authorizer, Clock, IdSource, ManualClock, OrderedIds, Principal,
    RandomIds, SequentialIds, SystemClock,
};
pub use idempotent::Idempotent;
pub use index::{ActiveExecution, SessionEntry, SessionPage, SessionQuery, SessionStatus};
pub use interrupt_index::requested_interrupt;
pub use lifecycle::{Deleted, OpenWork, DELETE_ACTION};
pub use narad_core::model::Outcome;
pub use operator::{InterruptPage, ListedInterrupt};
pub use reads::{Attached, Capabilities};
pub use retention::{PruneReport, RetentionPolicy};
pub use stream::{ReasoningStream, Role, TextOptions, TextStream};
pub use subscribe::{Follow, FollowItem};
pub use timers::{FiredTimer, TimerKind, TimerReport, TIMER_PRINCIPAL};
pub use typed::assets::{Asset, AssetStep, ViewUpdate};
pub use typed::commands::{document_key, DocumentKind, Privacy, Progress, ProgressStatus};
pub use typed::details::ARGS_SUMMARY_MAX;
pub use typed::patch::{Patch, PatchOp};
pub use typed::state::{
    InterruptInfo, SessionState, ToolCall, ToolCallState, ToolResult, TranscriptMessage,
    TranscriptState, UsageTotals,
};
pub use typed::trace::{Span, SpanEnd, SpanStatus};
pub use typed::usage::Usage;
pub use watch::WatchFollow;
