//! Client execution, host side (§11): leases, heartbeats, fenced targeted
//! execution with single-call tokens, finishes, expiry and delivery
//! failure. The engine has no transport: control messages for an executor
//! go to its [`ClientOutbox`], which the embedding transport drains.
//!
//! Durable records (store side records, written in the same batch as the
//! authority they accompany):
//! - `Lease/<executor>`: the current lease, its expiry, the executor's
//!   unfinished tokens and the runs paused for its absence;
//! - `Lease/*`: every executor ever seen (so a restarted engine finds them);
//! - `Token/<token>`: executor, originating lease, session, tool call,
//!   expiry, the execute payload, and the accepted finish or closure.
//!
//! Every change of an executor record is conditional on the bytes read
//! (`Expect::Equals`), so two engines over one file cannot lose an update;
//! a conflict re-reads and retries.
//!
//! Modules: `records` holds the durable records, `lease` attach and
//! heartbeats, `execute` the start of a client tool call, `finish`
//! finishes and closures, `tick` expiry and unavailability. The in-memory
//! outboxes live in the crate's `outbox` module, which the engine owns.

mod execute;
mod finish;
mod lease;
mod records;
mod tick;

use bytes::Bytes;
use narad_core::model::ControlPayload;
use serde_json::Value;

use crate::error::EngineError;

pub use crate::outbox::{ClientOutbox, OUTBOX_CAPACITY};

pub(crate) fn client_err(code: &'static str, message: impl Into<String>) -> EngineError {
    EngineError::Client {
        code,
        message: message.into(),
    }
}

/// What `client_finish` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// `tool.call.finished` was appended.
    Appended,
    /// The identical finish was accepted before; nothing appended.
    Repeated,
}

/// What one `client_tick` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Tool calls closed with `client_execution_expired`.
    pub expired_calls: Vec<String>,
    /// Runs paused with `client_executor_unavailable`.
    pub paused_runs: Vec<String>,
    /// Executors whose lease lapsed.
    pub unavailable: Vec<String>,
}

pub(crate) fn control(payload: &ControlPayload) -> Bytes {
    let mut v = serde_json::to_value(payload).unwrap_or(Value::Null);
    v["protocolVersion"] = narad_core::PROTOCOL_VERSION.into();
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

/// The user-safe message of a closure code.
pub(crate) fn closure_message(code: &str) -> &'static str {
    match code {
        "client_unavailable" => "The selected client executor is unavailable.",
        "client_execution_expired" => "The client did not finish the tool call in time.",
        "delivery_failed" => "The tool call could not be delivered to the client.",
        _ => "The tool call was closed.",
    }
}
