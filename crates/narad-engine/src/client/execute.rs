//! The start of a client tool call: `tool.call.started` and its durable
//! token in one batch, then `client.tool.execute` to the executor's outbox
//! (or an immediate `client_unavailable` closure without a lease).

use narad_store::{Store, StoreError};
use serde_json::{json, Value};

use super::records::{execute_message, TokenRecord};
use super::Closure;
use crate::append::{retry, Attempt};
use crate::command_loop::Plan;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
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
                    let run = j.run(run_id).ok_or_else(|| EngineError::UnknownRun {
                        run_id: run_id.to_owned(),
                    })?;
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
        retry!(self, async {
            let rec = self.executor(&executor).await?;
            let now = self.inner.clock.now();
            let lease = rec.valid_lease(now).map(str::to_owned);
            let token_record = lease.clone().map(|lease| TokenRecord {
                v: 1,
                executor: executor.clone(),
                lease,
                session_id: session_id.to_owned(),
                tool_call_id: tool_call_id.clone(),
                run_id: run_id.to_owned(),
                expires_at: crate::host::after(now, self.inner.config.token_ttl),
                tool_name: tool_name.to_owned(),
                args: args.clone(),
                finish: None,
                closed: None,
            });
            let r = self
                .command(p, session_id, |j| {
                    let at = j.run_at(run_id)?;
                    let started = Draft::new(
                        "tool.call.started",
                        at.clone(),
                        json!({"toolCallId": tool_call_id, "toolName": tool_name, "executor": "client", "args": args}),
                    );
                    let Some(token_record) = &token_record else {
                        let closed = Draft::new(
                            "tool.call.finished",
                            at,
                            Closure::ClientUnavailable.finished_body(&tool_call_id),
                        );
                        return Ok(Plan::of(vec![started, closed], false));
                    };
                    let mut next = rec.clone();
                    next.pending.push(token.clone());
                    let mut plan = Plan::of(vec![started], true);
                    plan.side.push(token_record.create(&token)?);
                    plan.side.push(token_record.timer(&token).create()?);
                    plan.side.push(next.write(&executor)?);
                    Ok(plan)
                })
                .await;
            match (r, &token_record) {
                (Ok((true, _)), Some(t)) => {
                    self.inner
                        .clients
                        .outbox(&executor)
                        .push(true, execute_message(&token, t));
                    Ok(Attempt::Done(()))
                }
                (Ok(_), _) => Ok(Attempt::Done(())),
                (Err(EngineError::Store(StoreError::SideConflict)), _) => Ok(Attempt::Again),
                (Err(e), _) => Err(e),
            }
        })?;
        Ok(tool_call_id)
    }
}
