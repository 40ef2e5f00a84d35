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

pub mod client;
mod engine;
mod error;
pub mod executor;
pub mod host;
mod journal;
mod snapshot;
mod subscribe;
mod watch;

pub use engine::{
    Attached, Capabilities, Engine, EngineConfig, EngineStats, EventScope, Interrupt,
    InterruptScope, NewSession, Resolve, StartRun, Started, StopTarget, Terminal, ToolOutcome,
};
pub use error::EngineError;
pub use host::{
    Action, AllowAll, Authorizer, Clock, IdSource, ManualClock, Principal, RandomIds,
    SequentialIds, SystemClock,
};
pub use subscribe::Follow;
pub use watch::WatchFollow;
