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
use serde_json::{json, Value};

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

/// Why the host closed a client tool call without a finish (§11.3). Each
/// code is spelled here once; the checker's `CLOSURE_CODES` lists the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closure {
    /// No valid lease when the call started.
    ClientUnavailable,
    /// The transport could not deliver the execution.
    DeliveryFailed,
    /// The token expired before a finish arrived.
    ExecutionExpired,
}

impl Closure {
    /// Every closure.
    #[cfg(test)]
    const ALL: [Self; 3] = [
        Self::ClientUnavailable,
        Self::DeliveryFailed,
        Self::ExecutionExpired,
    ];

    /// The stable code, journaled as `code` and `response.code`.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::ClientUnavailable => "client_unavailable",
            Self::DeliveryFailed => "delivery_failed",
            Self::ExecutionExpired => "client_execution_expired",
        }
    }

    /// The user-safe message journaled with it.
    fn message(self) -> &'static str {
        match self {
            Self::ClientUnavailable => "The selected client executor is unavailable.",
            Self::DeliveryFailed => "The tool call could not be delivered to the client.",
            Self::ExecutionExpired => "The client did not finish the tool call in time.",
        }
    }

    /// The `tool.call.finished` body that closes `tool_call_id`.
    pub(crate) fn finished_body(self, tool_call_id: &str) -> Value {
        json!({"toolCallId": tool_call_id, "outcome": "error",
               "response": {"code": self.code()}, "code": self.code(),
               "message": self.message()})
    }
}

/// The pause reason of a run whose executor's lease lapsed.
pub(crate) const EXECUTOR_UNAVAILABLE: &str = "client_executor_unavailable";

#[cfg(test)]
mod tests {
    use super::Closure;

    #[test]
    fn the_closure_codes_are_the_checkers() {
        let mine: std::collections::BTreeSet<&str> =
            Closure::ALL.iter().map(|c| c.code()).collect();
        let core: std::collections::BTreeSet<&str> =
            narad_core::checker::CLOSURE_CODES.into_iter().collect();
        assert_eq!(mine, core);
    }
}
