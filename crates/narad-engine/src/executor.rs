//! Client side of §11: the executor library an agent's desktop or worker
//! process links. It executes only from `client.tool.execute` addressed to
//! it, records the token as accepted **durably before** the user's tool
//! runs, never runs an accepted token again, and resends the recorded
//! finish on duplicate delivery. The ledger is any [`Store`] (a redb or
//! SQLite file), so acceptance survives a crash.
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_engine::EngineError> {
//! use narad_engine::executor::{ClientExecutor, Handled};
//! let ledger = narad_store_redb::RedbStore::open("executor-ledger.redb").await?;
//! let exec = ClientExecutor::new(ledger, "desktop-1");
//! # let message: Vec<u8> = vec![];
//! match exec
//!     .handle(&message, |name, args| async move { ("success", serde_json::json!({"ran": name})) })
//!     .await?
//! {
//!     Handled::Finish(bytes) => { /* send `bytes` to the host */ }
//!     other => { /* attached, ignored, or accepted before and never re-run */ let _ = other; }
//! }
//! # Ok(()) }
//! ```

use std::future::Future;

use bytes::Bytes;
use narad_core::model::ControlPayload;
use narad_core::{Parsed, Record, Validator};
use narad_store::{Batch, Expect, SideSpace, SideWrite, Store, StoreError};
use serde_json::{json, Value};

use crate::error::EngineError;

/// What [`ClientExecutor::handle`] did with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// The tool ran (now or before): send this `client.tool.finish`.
    Finish(Bytes),
    /// `client.attached` for this executor: its new lease.
    Attached(String),
    /// The token was accepted before but no finish was recorded (the
    /// process died during the call): it is **not** run again; the host
    /// closes the call when the token expires.
    AcceptedBefore,
    /// Not for execution (another executor, an authority event, a
    /// heartbeat, ...).
    Ignored(&'static str),
}

/// A client executor with a durable ledger.
#[derive(Debug)]
pub struct ClientExecutor<S> {
    ledger: S,
    executor_id: String,
}

impl<S: Store> ClientExecutor<S> {
    /// An executor `executor_id` keeping its ledger in `ledger`.
    pub fn new(ledger: S, executor_id: impl Into<String>) -> Self {
        Self {
            ledger,
            executor_id: executor_id.into(),
        }
    }

    /// The ledger store.
    pub fn ledger(&self) -> &S {
        &self.ledger
    }

    async fn write(&self, key: &str, expect: Expect, value: Value) -> Result<(), StoreError> {
        let batch = Batch {
            side: vec![SideWrite {
                space: SideSpace::Token,
                key: key.to_owned(),
                expect,
                value: Some(Bytes::from(value.to_string())),
            }],
            ..Batch::default()
        };
        self.ledger.append(batch).await.map(|_| ())
    }

    /// Handles one control message. `tool(name, args)` performs the side
    /// effect and returns `(outcome, response)` with outcome `success`,
    /// `error` or `cancelled`.
    pub async fn handle<F, Fut>(&self, message: &[u8], tool: F) -> Result<Handled, EngineError>
    where
        F: FnOnce(String, Value) -> Fut,
        Fut: Future<Output = (&'static str, Value)>,
    {
        let parsed = Validator::default()
            .parse(message)
            .map_err(|e| EngineError::Rejected {
                code: e.code.as_str(),
                section: "11",
                message: e.message,
            })?;
        let Parsed::Record {
            record: Record::Control(c),
            ..
        } = parsed
        else {
            // Authority, watch or hydrate records never trigger execution.
            return Ok(Handled::Ignored("not a control message"));
        };
        match c.payload {
            ControlPayload::ClientAttached {
                client_executor_id,
                lease_id,
                ..
            } if client_executor_id == self.executor_id => Ok(Handled::Attached(lease_id)),
            ControlPayload::ClientToolExecute {
                client_executor_id,
                lease_id,
                execution_token,
                tool_call_id,
                tool_name,
                args,
                ..
            } => {
                if client_executor_id != self.executor_id {
                    return Ok(Handled::Ignored("addressed to another executor"));
                }
                // Accept durably first; the store refuses a second accept.
                match self
                    .write(
                        &execution_token,
                        Expect::Absent,
                        json!({"state": "accepted"}),
                    )
                    .await
                {
                    Ok(()) => {}
                    Err(StoreError::SideConflict) => {
                        let rec = self.ledger.side(SideSpace::Token, &execution_token).await?;
                        let v: Value = rec
                            .and_then(|b| serde_json::from_slice(&b).ok())
                            .unwrap_or(Value::Null);
                        return Ok(match v.get("finish").and_then(Value::as_str) {
                            Some(f) => Handled::Finish(Bytes::from(f.to_owned())),
                            None => Handled::AcceptedBefore,
                        });
                    }
                    Err(e) => return Err(e.into()),
                }
                let (outcome, response) = tool(tool_name, args).await;
                let finish = json!({
                    "type": "client.tool.finish", "protocolVersion": narad_core::PROTOCOL_VERSION,
                    "clientExecutorId": self.executor_id, "leaseId": lease_id,
                    "executionToken": execution_token, "toolCallId": tool_call_id,
                    "outcome": outcome, "response": response,
                })
                .to_string();
                let accepted = Bytes::from(json!({"state": "accepted"}).to_string());
                self.write(
                    &execution_token,
                    Expect::Equals(accepted),
                    json!({"state": "finished", "finish": finish}),
                )
                .await?;
                Ok(Handled::Finish(Bytes::from(finish)))
            }
            ControlPayload::ClientAttached { .. } => {
                Ok(Handled::Ignored("addressed to another executor"))
            }
            _ => Ok(Handled::Ignored("no execution in this message")),
        }
    }
}
