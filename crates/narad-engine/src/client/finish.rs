//! Finishes and closures: an executor's `client.tool.finish` validated
//! against its token, and the closure of a call without a finish
//! (delivery failure, expiry).

use narad_core::model::ControlPayload;
use narad_core::{Parsed, Record};
use narad_store::{Store, StoreError};
use serde_json::{json, Value};

use super::records::AcceptedFinish;
use super::{client_err, Closure, Finished};
use crate::append::{retry, Attempt};
use crate::command_loop::Plan;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};
use crate::journal::Draft;

impl<S: Store + 'static> Engine<S> {
    /// `client.tool.finish` (the control message's bytes, as received).
    /// The token is validated — its executor, its originating lease (even
    /// superseded), its tool call, its expiry — before `tool.call.finished`
    /// is appended with exactly the finish's outcome and response, in the
    /// same batch as the accepted finish. An identical repeat is
    /// [`Finished::Repeated`]; other data under the same token is refused.
    pub async fn client_finish(
        &self,
        p: &Principal,
        message: &[u8],
    ) -> Result<Finished, EngineError> {
        let parsed = narad_core::Validator::default()
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
            return Err(EngineError::InvalidCommand("not a control message".into()));
        };
        let ControlPayload::ClientToolFinish {
            client_executor_id,
            lease_id,
            execution_token,
            tool_call_id,
            outcome,
            response,
        } = c.payload
        else {
            return Err(EngineError::InvalidCommand("not client.tool.finish".into()));
        };
        let outcome = serde_json::to_value(outcome).unwrap_or(Value::Null);
        let finish = AcceptedFinish {
            outcome: outcome.clone(),
            response: response.clone(),
        };
        let lock = self.inner.clients.lock(&client_executor_id);
        let _guard = lock.lock().await;
        retry!(self, async {
            let Some((raw, t)) = self.token(&execution_token).await? else {
                return Err(client_err("token_unknown", "no such execution token"));
            };
            // The control acts on the token's session.
            self.authorize(
                p,
                Action::Write {
                    session_id: &t.session_id,
                    event_type: "client.tool.finish",
                },
            )?;
            if t.executor != client_executor_id {
                return Err(client_err(
                    "executor_mismatch",
                    "the token belongs to another executor",
                ));
            }
            if t.lease != lease_id || t.tool_call_id != tool_call_id {
                return Err(client_err(
                    "token_mismatch",
                    "the token was issued to another lease or tool call",
                ));
            }
            if let Some(prev) = &t.finish {
                return if *prev == finish {
                    Ok(Attempt::Done(Finished::Repeated))
                } else {
                    Err(client_err(
                        "finish_conflict",
                        "the token was finished with other data",
                    ))
                };
            }
            if t.closed.is_some() {
                return Err(client_err("call_closed", "the call was already closed"));
            }
            if self.inner.clock.now() >= t.expires_at {
                return Err(client_err(
                    "token_expired",
                    "the execution token has expired",
                ));
            }
            let timer = self.stored_timer_delete(&t.timer(&execution_token)).await?;
            let rec = self.executor(&client_executor_id).await?;
            let mut next = rec.clone();
            next.pending.retain(|x| *x != execution_token);
            let mut accepted = t.clone();
            accepted.finish = Some(finish.clone());
            let r = self
                .command(p, &t.session_id, |j| {
                    let (run, open) = j
                        .checker
                        .tool_call(&j.session_id, &tool_call_id)
                        .ok_or_else(|| EngineError::UnknownToolCall {
                            tool_call_id: tool_call_id.clone(),
                        })?;
                    if !open {
                        return Err(client_err("call_closed", "the call was already closed"));
                    }
                    let mut body = json!({"toolCallId": tool_call_id, "outcome": outcome});
                    body["response"] = response.clone();
                    let mut plan = Plan::of(
                        vec![Draft::new("tool.call.finished", j.run_at(run)?, body)],
                        (),
                    );
                    plan.side.push(accepted.replace(&execution_token, &raw)?);
                    plan.side.push(next.write(&client_executor_id)?);
                    plan.side.extend(timer.clone());
                    Ok(plan)
                })
                .await;
            match r {
                Ok(_) => Ok(Attempt::Done(Finished::Appended)),
                Err(EngineError::Store(StoreError::SideConflict)) => Ok(Attempt::Again),
                Err(e) => Err(e),
            }
        })
    }

    /// The transport could not deliver an execution: the call closes with
    /// `outcome=error`, `code=delivery_failed` (unless already closed).
    pub async fn client_delivery_failed(
        &self,
        p: &Principal,
        token: &str,
    ) -> Result<(), EngineError> {
        self.close_token(p, token, Closure::DeliveryFailed)
            .await
            .map(|_| ())
    }

    /// Closes a token's call without a finish. Returns the tool call id if
    /// it closed it.
    pub(crate) async fn close_token(
        &self,
        p: &Principal,
        token: &str,
        closure: Closure,
    ) -> Result<Option<String>, EngineError> {
        retry!(self, async {
            let Some((raw, t)) = self.token(token).await? else {
                return Err(client_err("token_unknown", "no such execution token"));
            };
            let done = !t.open();
            // The expiry leaves the due index with the closure.
            let timer = self.stored_timer_delete(&t.timer(token)).await?;
            let rec = self.executor(&t.executor).await?;
            let mut next = rec.clone();
            next.pending.retain(|x| x != token);
            let mut closed = t.clone();
            closed.closed = Some(closure.code().to_owned());
            let tool = t.tool_call_id.as_str();
            let r = self
                .command(p, &t.session_id, |j| {
                    let open_in = j
                        .checker
                        .tool_call(&j.session_id, tool)
                        .filter(|(_, open)| *open)
                        .map(|(run, _)| run.to_owned());
                    let mut plan = Plan::of(Vec::new(), false);
                    if !done {
                        plan.side.push(closed.replace(token, &raw)?);
                    }
                    if next.pending.len() != rec.pending.len() {
                        plan.side.push(next.write(&t.executor)?);
                    }
                    plan.side.extend(timer.clone());
                    if let (Some(run), false) = (open_in, done) {
                        plan.drafts.push(Draft::new(
                            "tool.call.finished",
                            j.run_at(&run)?,
                            closure.finished_body(tool),
                        ));
                        plan.out = true;
                    }
                    Ok(plan)
                })
                .await;
            match r {
                Ok((closed, _)) => Ok(Attempt::Done(closed.then(|| tool.to_owned()))),
                Err(EngineError::Store(StoreError::SideConflict)) => Ok(Attempt::Again),
                Err(e) => Err(e),
            }
        })
    }
}
