//! Finishes and closures: an executor's `client.tool.finish` validated
//! against its token, and the closure of a call without a finish
//! (delivery failure, expiry).

use narad_core::model::ControlPayload;
use narad_core::{Parsed, Record};
use narad_store::{Expect, SideSpace, Store, StoreError};
use serde_json::{json, Value};

use super::records::{parse_time, str_field};
use super::{client_err, closure_message, Finished};
use crate::command_loop::{side, Plan};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
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
                message: e.to_string(),
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
        self.authorize(
            p,
            crate::Action::Write {
                session_id: "",
                event_type: "client.tool.finish",
            },
        )?;
        let outcome = serde_json::to_value(outcome).unwrap_or(Value::Null);
        let finish = json!({"outcome": outcome, "response": response});
        let lock = self.inner.clients.lock(&client_executor_id);
        let _guard = lock.lock().await;
        for _ in 0..=self.inner.config.max_retries {
            let Some((raw, t)) = self.token(&execution_token).await? else {
                return Err(client_err("token_unknown", "no such execution token"));
            };
            let field = |k: &str| str_field(&t, k);
            if field("executor") != client_executor_id {
                return Err(client_err(
                    "executor_mismatch",
                    "the token belongs to another executor",
                ));
            }
            if field("lease") != lease_id || field("toolCallId") != tool_call_id {
                return Err(client_err(
                    "token_mismatch",
                    "the token was issued to another lease or tool call",
                ));
            }
            if let Some(prev) = t.get("finish").filter(|f| !f.is_null()) {
                return if *prev == finish {
                    Ok(Finished::Repeated)
                } else {
                    Err(client_err(
                        "finish_conflict",
                        "the token was finished with other data",
                    ))
                };
            }
            if t.get("closed").is_some_and(|c| !c.is_null()) {
                return Err(client_err("call_closed", "the call was already closed"));
            }
            let now = self.inner.clock.now();
            if parse_time(&t, "expiresAt").is_none_or(|e| now >= e) {
                return Err(client_err(
                    "token_expired",
                    "the execution token has expired",
                ));
            }
            let sid = field("sessionId");
            let rec = self.executor(&client_executor_id).await?;
            let mut next = rec.clone();
            next.pending.retain(|x| *x != execution_token);
            let mut accepted = t.clone();
            accepted["finish"] = finish.clone();
            let r = self
                .command(p, &sid, |j| {
                    let (run, open) = j
                        .checker
                        .tool_call(&j.session_id, &tool_call_id)
                        .ok_or(EngineError::UnknownToolCall)?;
                    if !open {
                        return Err(client_err("call_closed", "the call was already closed"));
                    }
                    let mut body = json!({"toolCallId": tool_call_id, "outcome": outcome});
                    body["response"] = response.clone();
                    let mut plan = Plan::of(
                        vec![Draft::new("tool.call.finished", j.run_at(run)?, body)],
                        (),
                    );
                    plan.side.push(side(
                        SideSpace::Token,
                        &execution_token,
                        Expect::Equals(raw.clone()),
                        accepted.to_string().into_bytes(),
                    ));
                    plan.side.push(next.write(&client_executor_id));
                    Ok(plan)
                })
                .await;
            match r {
                Ok(_) => return Ok(Finished::Appended),
                Err(EngineError::Store(StoreError::SideConflict)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::Contended)
    }

    /// The transport could not deliver an execution: the call closes with
    /// `outcome=error`, `code=delivery_failed` (unless already closed).
    pub async fn client_delivery_failed(
        &self,
        p: &Principal,
        token: &str,
    ) -> Result<(), EngineError> {
        self.close_token(p, token, "delivery_failed")
            .await
            .map(|_| ())
    }

    /// Closes a token's call without a finish (`code` is the closure code).
    /// Returns the tool call id if it closed it.
    pub(crate) async fn close_token(
        &self,
        p: &Principal,
        token: &str,
        code: &'static str,
    ) -> Result<Option<String>, EngineError> {
        for _ in 0..=self.inner.config.max_retries {
            let Some((raw, t)) = self.token(token).await? else {
                return Err(client_err("token_unknown", "no such execution token"));
            };
            let field = |k: &str| str_field(&t, k);
            let executor = field("executor");
            let done = t.get("finish").is_some_and(|f| !f.is_null())
                || t.get("closed").is_some_and(|c| !c.is_null());
            let rec = self.executor(&executor).await?;
            let mut next = rec.clone();
            next.pending.retain(|x| x != token);
            let (sid, tool) = (field("sessionId"), field("toolCallId"));
            let mut closed = t.clone();
            closed["closed"] = code.into();
            let r = self
                .command(p, &sid, |j| {
                    let open_in = j
                        .checker
                        .tool_call(&j.session_id, &tool)
                        .filter(|(_, open)| *open)
                        .map(|(run, _)| run.to_owned());
                    let mut plan = Plan::of(Vec::new(), false);
                    if !done {
                        plan.side.push(side(
                            SideSpace::Token,
                            token,
                            Expect::Equals(raw.clone()),
                            closed.to_string().into_bytes(),
                        ));
                    }
                    if next.pending.len() != rec.pending.len() {
                        plan.side.push(next.write(&executor));
                    }
                    if let (Some(run), false) = (open_in, done) {
                        plan.drafts.push(Draft::new(
                            "tool.call.finished",
                            j.run_at(&run)?,
                            json!({"toolCallId": tool, "outcome": "error",
                                   "response": {"code": code}, "code": code,
                                   "message": closure_message(code)}),
                        ));
                        plan.out = true;
                    }
                    Ok(plan)
                })
                .await;
            match r {
                Ok((closed, _)) => return Ok(closed.then_some(tool)),
                Err(EngineError::Store(StoreError::SideConflict)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::Contended)
    }
}
