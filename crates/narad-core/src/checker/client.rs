//! Client execution controls (§11): leases, heartbeats, targeted execution,
//! token binding and finish equality, checked when control messages appear
//! in the stream. Token and lease *expiry* need a clock and belong to the
//! engine; the checker takes no clock.

use super::{fail, R};
use crate::model::{ControlPayload, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// A client tool call as its `tool.call.started` recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClientCall {
    executor: String,
    tool_name: String,
    args: Value,
    token: Option<String>,
    closed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Token {
    executor: String,
    lease: String,
    tool_call_id: String,
    execute: Value,
    finish: Option<(Outcome, Value)>,
}

/// Leases, calls and tokens seen in one stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientLedger {
    /// Whether any control message was seen (the rules apply only then).
    pub controls_seen: bool,
    /// executor -> current lease.
    leases: BTreeMap<String, String>,
    /// every lease seen -> its executor.
    known_leases: BTreeMap<String, String>,
    calls: BTreeMap<String, ClientCall>,
    tokens: BTreeMap<String, Token>,
}

/// The backend closure codes of §11.3 rules 9 and 11.
pub const CLOSURE_CODES: [&str; 3] = [
    "client_unavailable",
    "delivery_failed",
    "client_execution_expired",
];

impl ClientLedger {
    /// Records a started client tool call.
    pub(super) fn started(
        &mut self,
        tool_call_id: &str,
        executor: &str,
        tool_name: &str,
        args: &Value,
    ) {
        self.calls.insert(
            tool_call_id.to_owned(),
            ClientCall {
                executor: executor.to_owned(),
                tool_name: tool_name.to_owned(),
                args: args.clone(),
                token: None,
                closed: false,
            },
        );
    }

    /// Checks a client tool's `tool.call.finished` (§11.3 rule 7, README):
    /// equal to the accepted finish, or a backend closure, or a cancellation
    /// after a stop request. Returns whether the call is a known client call.
    pub(super) fn check_finished(
        &self,
        tool_call_id: &str,
        outcome: Outcome,
        response: &Value,
        code: Option<&str>,
        stop_requested: bool,
    ) -> R {
        if !self.controls_seen {
            return Ok(());
        }
        let Some(call) = self.calls.get(tool_call_id) else {
            return Ok(());
        };
        let accepted = call
            .token
            .as_ref()
            .and_then(|t| self.tokens.get(t))
            .and_then(|t| t.finish.as_ref());
        let closure =
            outcome != Outcome::Success && code.is_some_and(|c| CLOSURE_CODES.contains(&c));
        let cancelled = outcome == Outcome::Cancelled && stop_requested;
        match accepted {
            Some((o, r)) if *o == outcome && r == response => Ok(()),
            Some(_) => fail("finish_mismatch", "11.3", "tool.call.finished must equal the accepted client.tool.finish"),
            None if closure || cancelled => Ok(()),
            None => fail("client_finish_missing", "11.3", "a client tool closes with its accepted finish, a backend closure code, or cancellation after stop"),
        }
    }

    pub(super) fn closed(&mut self, tool_call_id: &str) {
        if let Some(c) = self.calls.get_mut(tool_call_id) {
            c.closed = true;
        }
    }

    /// Applies one control message; on refusal nothing changes.
    pub(super) fn control(
        &mut self,
        payload: &ControlPayload,
        raw: &serde_json::Map<String, Value>,
    ) -> R {
        self.control_in(payload, raw)?;
        self.controls_seen = true;
        Ok(())
    }

    fn control_in(&mut self, payload: &ControlPayload, raw: &serde_json::Map<String, Value>) -> R {
        match payload {
            ControlPayload::ClientAttached {
                client_executor_id,
                lease_id,
                ..
            } => {
                match self.known_leases.get(lease_id) {
                    // A redelivered attachment of a lease already seen: stale, no change.
                    Some(owner) if owner == client_executor_id => Ok(()),
                    Some(_) => fail(
                        "lease_reused",
                        "11.1",
                        "a leaseId belongs to one executor attachment",
                    ),
                    None => {
                        // Reattachment creates a new lease and supersedes the prior one.
                        self.known_leases
                            .insert(lease_id.clone(), client_executor_id.clone());
                        self.leases
                            .insert(client_executor_id.clone(), lease_id.clone());
                        Ok(())
                    }
                }
            }
            ControlPayload::ClientHeartbeat {
                client_executor_id,
                lease_id,
            } => {
                // A heartbeat on a superseded lease renews nothing (stale); one
                // on a lease never attached for this executor is refused.
                if self.known_leases.get(lease_id) != Some(client_executor_id) {
                    return fail(
                        "lease_invalid",
                        "11.2",
                        "a heartbeat names a lease attached for its executor",
                    );
                }
                Ok(())
            }
            ControlPayload::ServerHeartbeat { .. } => Ok(()),
            ControlPayload::ClientToolExecute {
                client_executor_id,
                lease_id,
                execution_token,
                tool_call_id,
                tool_name,
                args,
                ..
            } => {
                let mut execute = raw.clone();
                execute.remove("timestamp");
                let execute = Value::Object(execute);
                if let Some(t) = self.tokens.get(execution_token) {
                    // Duplicate delivery of an accepted token: identical or refused.
                    if t.execute != execute {
                        return fail(
                            "execute_conflict",
                            "11.3",
                            "an execution token was re-sent with different data",
                        );
                    }
                    return Ok(());
                }
                let Some(call) = self.calls.get(tool_call_id) else {
                    return fail(
                        "tool_call_unknown",
                        "11.3",
                        "client.tool.execute follows tool.call.started with executor=client",
                    );
                };
                if call.executor != *client_executor_id {
                    return fail(
                        "execute_misdirected",
                        "11.3",
                        "client.tool.execute goes to the run's bound executor only",
                    );
                }
                if call.tool_name != *tool_name || call.args != *args {
                    return fail(
                        "execute_payload_mismatch",
                        "11.3",
                        "toolName and args must equal tool.call.started",
                    );
                }
                if call.token.is_some() || call.closed {
                    return fail(
                        "execute_duplicate",
                        "11.3",
                        "exactly one execution is sent per client tool call",
                    );
                }
                if self.leases.get(client_executor_id) != Some(lease_id) {
                    return fail(
                        "lease_invalid",
                        "11.1",
                        "an expired, superseded or unknown lease accepts no new execution",
                    );
                }
                if let Some(c) = self.calls.get_mut(tool_call_id) {
                    c.token = Some(execution_token.clone());
                }
                self.tokens.insert(
                    execution_token.clone(),
                    Token {
                        executor: client_executor_id.clone(),
                        lease: lease_id.clone(),
                        tool_call_id: tool_call_id.clone(),
                        execute,
                        finish: None,
                    },
                );
                Ok(())
            }
            ControlPayload::ClientToolFinish {
                client_executor_id,
                lease_id,
                execution_token,
                tool_call_id,
                outcome,
                response,
            } => {
                let Some(t) = self.tokens.get(execution_token) else {
                    return fail(
                        "token_unknown",
                        "11.3",
                        "client.tool.finish names a token that was never executed",
                    );
                };
                if t.executor != *client_executor_id
                    || t.tool_call_id != *tool_call_id
                    || t.lease != *lease_id
                {
                    return fail(
                        "token_mismatch",
                        "11.3",
                        "a token is bound to its executor, originating lease and tool call",
                    );
                }
                match &t.finish {
                    Some((o, r)) if o == outcome && r == response => Ok(()),
                    Some(_) => fail(
                        "finish_conflict",
                        "11.3",
                        "a token represents one logical finish; different data is refused",
                    ),
                    None if self.calls.get(tool_call_id).is_some_and(|c| c.closed) => fail(
                        "tool_call_closed",
                        "11.3",
                        "the tool call was already closed by the backend",
                    ),
                    None => {
                        if let Some(t) = self.tokens.get_mut(execution_token) {
                            t.finish = Some((*outcome, response.clone()));
                        }
                        Ok(())
                    }
                }
            }
        }
    }
}
