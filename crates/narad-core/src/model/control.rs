use super::{Outcome, Wire};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A control message (§11): non-journal transport traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlMessage {
    /// Always `narad/v1`.
    pub protocol_version: String,
    /// The typed body.
    pub payload: ControlPayload,
    /// The record as received.
    pub wire: Wire,
}

/// Typed control bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum ControlPayload {
    /// `client.attached`: a fresh lease for a logical executor.
    #[serde(rename = "client.attached")]
    ClientAttached {
        /// Logical executor.
        client_executor_id: String,
        /// Fencing token.
        lease_id: String,
        /// Negotiated heartbeat interval.
        heartbeat_interval_ms: u64,
        /// When the lease lapses without a heartbeat.
        lease_expires_at: String,
    },
    /// `server.heartbeat`
    #[serde(rename = "server.heartbeat")]
    ServerHeartbeat {
        /// Optional server clock reading.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_time: Option<String>,
    },
    /// `client.heartbeat`
    #[serde(rename = "client.heartbeat")]
    ClientHeartbeat {
        /// Logical executor.
        client_executor_id: String,
        /// Lease being renewed.
        lease_id: String,
    },
    /// `client.tool.execute`: the only trigger for client-side execution.
    #[serde(rename = "client.tool.execute")]
    ClientToolExecute {
        /// Target executor.
        client_executor_id: String,
        /// Originating lease.
        lease_id: String,
        /// Single-call capability.
        execution_token: String,
        /// Token expiry.
        execution_token_expires_at: String,
        /// The tool call.
        tool_call_id: String,
        /// Equal to `tool.call.started`.
        tool_name: String,
        /// Equal to `tool.call.started`.
        args: Value,
    },
    /// `client.tool.finish`
    #[serde(rename = "client.tool.finish")]
    ClientToolFinish {
        /// Executor.
        client_executor_id: String,
        /// Lease the finish is sent under.
        lease_id: String,
        /// The token being finished.
        execution_token: String,
        /// The tool call.
        tool_call_id: String,
        /// Outcome.
        outcome: Outcome,
        /// Response (any JSON, including null).
        response: Value,
    },
}
