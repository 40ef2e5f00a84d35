//! The start of a client tool call: `tool.call.started` and its durable
//! token in one batch, then `client.tool.execute` to the executor's outbox
//! (or an immediate `client_unavailable` closure without a lease).

use narad_store::{Expect, SideSpace, Store, StoreError};
use serde_json::{json, Value};

use super::closure_message;
use super::records::execute_message;
use crate::command_loop::{side, Plan};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::journal::Draft;

impl<S: Store + 'static> Engine<S> {
    /// Starts a client tool call on a run bound to an executor. With a valid
    /// lease: `tool.call.started` and the durable token commit together,
    /// then exactly one `client.tool.execute` goes to that executor's
    /// outbox. Without one, delivery cannot be accepted: the call is closed
    /// at once with `client_unavailable` (§11.3 rule 11).
    pub async fn start_client_tool_call(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        let tool_call_id = self.inner.ids.next_id("tool");
        let token = self.inner.ids.next_id("token");
        // The executor comes from the run's binding (read under the session
        // lock by the plan; here only to pick the executor lock).
        let executor = {
            let (e, _) = self
                .command(p, session_id, |j| {
                    let run = j
                        .checker
                        .run(&j.session_id, run_id)
                        .ok_or(EngineError::UnknownRun)?;
                    Ok(Plan::of(Vec::new(), run.client_executor.clone()))
                })
                .await?;
            e
        };
        let Some(executor) = executor else {
            // Let the checker refuse it with its own code.
            let (_, _) = self
                .command(p, session_id, |j| {
                    let body = json!({"toolCallId": tool_call_id, "toolName": tool_name, "executor": "client", "args": args});
                    Ok(Plan::of(vec![Draft::new("tool.call.started", j.run_at(run_id)?, body)], ()))
                })
                .await?;
            return Ok(tool_call_id);
        };
        self.remember_executor(&executor).await?;
        let lock = self.inner.clients.lock(&executor);
        let _guard = lock.lock().await;
        for _ in 0..=self.inner.config.max_retries {
            let rec = self.executor(&executor).await?;
            let now = self.inner.clock.now();
            let lease = rec.valid_lease(now).map(str::to_owned);
            let expires = now + self.inner.config.token_ttl;
            let token_record = json!({
                "executor": executor, "lease": lease, "sessionId": session_id,
                "toolCallId": tool_call_id, "runId": run_id,
                "expiresAt": timestamp(expires), "toolName": tool_name, "args": args,
                "finish": null, "closed": null,
            });
            let r = self
                .command(p, session_id, |j| {
                    let at = j.run_at(run_id)?;
                    let started = Draft::new(
                        "tool.call.started",
                        at.clone(),
                        json!({"toolCallId": tool_call_id, "toolName": tool_name, "executor": "client", "args": args}),
                    );
                    if lease.is_none() {
                        let closed = Draft::new(
                            "tool.call.finished",
                            at,
                            json!({"toolCallId": tool_call_id, "outcome": "error",
                                   "response": {"code": "client_unavailable"}, "code": "client_unavailable",
                                   "message": closure_message("client_unavailable")}),
                        );
                        return Ok(Plan::of(vec![started, closed], false));
                    }
                    let mut next = rec.clone();
                    next.pending.push(token.clone());
                    let mut plan = Plan::of(vec![started], true);
                    plan.side.push(side(
                        SideSpace::Token,
                        &token,
                        Expect::Absent,
                        token_record.to_string().into_bytes(),
                    ));
                    plan.side.push(next.write(&executor));
                    Ok(plan)
                })
                .await;
            match r {
                Ok((true, _)) => {
                    self.inner
                        .clients
                        .outbox(&executor)
                        .push(true, execute_message(&token, &token_record));
                    return Ok(tool_call_id);
                }
                Ok((false, _)) => return Ok(tool_call_id),
                Err(EngineError::Store(StoreError::SideConflict)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::Contended)
    }
}
