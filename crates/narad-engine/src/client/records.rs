//! The durable client-execution records: executor (lease) records, the
//! list of executors, and execution tokens.

use std::time::SystemTime;

use bytes::Bytes;
use narad_core::model::ControlPayload;
use narad_store::{Expect, SideSpace, SideWrite, Store, StoreError};
use serde_json::{json, Value};

use super::control;
use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::timestamp;

pub(crate) fn corrupt() -> EngineError {
    EngineError::Store(StoreError::Backend(
        "a client execution record is unreadable".into(),
    ))
}

/// A string field of a stored record (`""` when absent).
pub(crate) fn str_field(v: &Value, field: &str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn parse_time(v: &Value, field: &str) -> Option<SystemTime> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|t| humantime::parse_rfc3339(t).ok())
}

/// An executor's durable record.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExecutorRecord {
    raw: Option<Bytes>,
    pub(crate) lease: Option<String>,
    pub(crate) lease_expires: Option<SystemTime>,
    pub(crate) pending: Vec<String>,
    /// `(session, run, waitId)` paused for this executor's absence.
    pub(crate) paused: Vec<(String, String, String)>,
}

impl ExecutorRecord {
    fn decode(raw: Option<Bytes>) -> Result<Self, EngineError> {
        let Some(b) = raw else {
            return Ok(Self::default());
        };
        let v: Value = serde_json::from_slice(&b).map_err(|_| corrupt())?;
        let strs = |k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let paused = v
            .get("paused")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| {
                        let f = |i: usize| p.get(i).and_then(Value::as_str).map(str::to_owned);
                        Some((f(0)?, f(1)?, f(2)?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            lease: v.get("leaseId").and_then(Value::as_str).map(str::to_owned),
            lease_expires: parse_time(&v, "leaseExpiresAt"),
            pending: strs("pending"),
            paused,
            raw: Some(b),
        })
    }

    fn encode(&self) -> Vec<u8> {
        json!({
            "leaseId": self.lease,
            "leaseExpiresAt": self.lease_expires.map(timestamp),
            "pending": self.pending,
            "paused": self.paused.iter().map(|(s, r, w)| json!([s, r, w])).collect::<Vec<_>>(),
        })
        .to_string()
        .into_bytes()
    }

    pub(crate) fn valid_lease(&self, now: SystemTime) -> Option<&str> {
        match (&self.lease, self.lease_expires) {
            (Some(l), Some(t)) if now < t => Some(l),
            _ => None,
        }
    }

    /// The conditional write replacing this record.
    pub(crate) fn write(&self, executor: &str) -> SideWrite {
        let expect = match &self.raw {
            Some(b) => Expect::Equals(b.clone()),
            None => Expect::Absent,
        };
        side(SideSpace::Lease, executor, expect, self.encode())
    }
}

pub(crate) const EXECUTORS_KEY: &str = "*";

impl<S: Store + 'static> Engine<S> {
    pub(crate) async fn executor(&self, executor: &str) -> Result<ExecutorRecord, EngineError> {
        ExecutorRecord::decode(self.inner.store.side(SideSpace::Lease, executor).await?)
    }

    pub(crate) async fn token(&self, token: &str) -> Result<Option<(Bytes, Value)>, EngineError> {
        match self.inner.store.side(SideSpace::Token, token).await? {
            Some(b) => {
                let v = serde_json::from_slice(&b).map_err(|_| corrupt())?;
                Ok(Some((b, v)))
            }
            None => Ok(None),
        }
    }
}

pub(crate) fn execute_message(token: &str, t: &Value) -> Bytes {
    let field = |k: &str| str_field(t, k);
    control(&ControlPayload::ClientToolExecute {
        client_executor_id: field("executor"),
        lease_id: field("lease"),
        execution_token: token.to_owned(),
        execution_token_expires_at: field("expiresAt"),
        tool_call_id: field("toolCallId"),
        tool_name: field("toolName"),
        args: t.get("args").cloned().unwrap_or(Value::Null),
    })
}
