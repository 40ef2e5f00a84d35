//! Run and tool commands: start (or queue) a run, backend tool calls,
//! pause and resume, terminals, and the queue of top-level starts.

use narad_core::checker::Slot;
use narad_store::Store;
use serde_json::{json, Value};

use crate::command_loop::{sanitize, strip_nulls, Plan};
use crate::command_types::{StartRun, Started, Terminal, ToolOutcome};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::idempotency::Keyed;
use crate::journal::{At, Draft, Journal};
use crate::queue::QueuedStart;
use crate::timers::TimerRecord;

impl<S: Store + 'static> Engine<S> {
    /// Starts a run: top-level (independent or in a workflow) or nested.
    pub async fn start_run(
        &self,
        p: &Principal,
        session_id: &str,
        start: StartRun,
    ) -> Result<Started, EngineError> {
        let run_id = start
            .run_id
            .clone()
            .unwrap_or_else(|| self.inner.ids.next_id("run"));
        let (started, _) = self
            .command_keyed(p, session_id, |j| {
                let (root, workflow, inherited) = match &start.parent_run_id {
                    Some(parent) => {
                        let pr = j.run(parent).ok_or_else(|| EngineError::UnknownRun {
                            run_id: parent.clone(),
                        })?;
                        (
                            pr.root.clone(),
                            pr.workflow.clone(),
                            pr.client_executor.clone(),
                        )
                    }
                    None => (run_id.clone(), start.workflow_id.clone(), None),
                };
                // A nested run records its executor binding explicitly: the
                // one asked for, else its parent's.
                let executor = start.client_executor_id.clone().or(inherited);
                if start.parent_run_id.is_none() && start.queue_if_busy && slot_busy(j, &start) {
                    let mut plan = Plan::of(Vec::new(), Started::Queued(run_id.clone()));
                    plan.enqueue = Some(QueuedStart::new(run_id.clone(), &start));
                    return Ok(plan);
                }
                let body = json!({
                    "parentRunId": start.parent_run_id,
                    "clientExecutorId": executor,
                });
                let draft = Draft::new(
                    "run.started",
                    At::Run {
                        run: run_id.clone(),
                        root,
                        workflow,
                    },
                    strip_nulls(body),
                );
                Ok(Plan::of(vec![draft], Started::Running(run_id.clone())))
            })
            .await?;
        Ok(started)
    }

    /// Starts the head of the session's durable queue if the slot is free.
    /// The batch that frees the slot does this itself; this pass is for a
    /// queue left waiting behind a free slot (e.g. freed by an import).
    pub async fn drain_queue(&self, p: &Principal, session_id: &str) -> Result<(), EngineError> {
        self.command(p, session_id, |j| {
            let mut plan = Plan::of(Vec::new(), ());
            plan.drain = j.checker.slot(&j.session_id).is_none();
            Ok(plan)
        })
        .await
        .map(|_| ())
    }

    /// Starts a tool call on a running run; returns its `toolCallId`.
    pub async fn start_tool_call(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        tool_call::start_tool_call(self, p, session_id, run_id, None, tool_name, args).await
    }

    /// [`Self::start_tool_call`] with the caller's `toolCallId`, which is
    /// its idempotency key: a retry with the same id, run, name and args
    /// (after a crash, a timeout, a restart) appends nothing and answers
    /// the id; the same id with another request is refused
    /// (`idempotency_conflict`). The key is recorded durably with the
    /// call, as under [`Engine::idempotent`].
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// let args = serde_json::json!({"q": "Lisbon"});
    /// let id = engine.start_tool_call_with_id(&me, &sid, &run, "call-1", "search", args.clone()).await?;
    /// // The answer was lost: the retry records nothing.
    /// assert_eq!(engine.start_tool_call_with_id(&me, &sid, &run, "call-1", "search", args).await?, id);
    /// # Ok(()) }
    /// ```
    pub async fn start_tool_call_with_id(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_call_id: &str,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        let req = (session_id, run_id, tool_call_id, tool_name, &args);
        let keyed = Keyed::for_id("toolCallId", tool_call_id, "start_tool_call", &req)?;
        let keyed = self.with_key(keyed);
        let id = Some(tool_call_id);
        tool_call::start_tool_call(&keyed, p, session_id, run_id, id, tool_name, args).await
    }

    /// Finishes a tool call (exactly once, §7.9).
    pub async fn finish_tool_call(
        &self,
        p: &Principal,
        session_id: &str,
        tool_call_id: &str,
        outcome: ToolOutcome,
    ) -> Result<(), EngineError> {
        self.command_keyed(p, session_id, |j| {
            let (run, _) =
                j.tool_call(tool_call_id)
                    .ok_or_else(|| EngineError::UnknownToolCall {
                        tool_call_id: tool_call_id.to_owned(),
                    })?;
            let mut body = strip_nulls(json!({
                "toolCallId": tool_call_id, "outcome": outcome.outcome,
                "code": outcome.code, "message": outcome.message.as_deref().map(sanitize)
            }));
            // `response` is required and may be null (§7.9).
            body["response"] = outcome.response.clone();
            Ok(Plan::of(
                vec![Draft::new("tool.call.finished", j.run_at(run)?, body)],
                (),
            ))
        })
        .await
        .map(|_| ())
    }

    /// Pauses a run without an interrupt; returns the `waitId`.
    pub async fn pause_run(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        reason: &str,
        automatic: bool,
    ) -> Result<String, EngineError> {
        let wait = self.inner.ids.next_id("wait");
        let mode = if automatic { "automatic" } else { "command" };
        let (wait, _) = self
            .command_keyed(p, session_id, |j| {
                let body = json!({"waitId": wait, "reason": reason, "resumeMode": mode});
                Ok(Plan::of(
                    vec![Draft::new("run.paused", j.run_at(run_id)?, body)],
                    wait.clone(),
                ))
            })
            .await?;
        Ok(wait)
    }

    /// Pauses a run with `resumeMode=automatic` until `retry_at`: the
    /// pause's `retryAt` is recorded in the due index in the same batch,
    /// and the timer driver resumes the run then (unless it resumed
    /// before). Returns the `waitId`.
    pub async fn pause_run_until(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        reason: &str,
        retry_at: std::time::SystemTime,
    ) -> Result<String, EngineError> {
        let wait = self.inner.ids.next_id("wait");
        let (wait, _) = self
            .command_keyed(p, session_id, |j| {
                let body = json!({"waitId": wait, "reason": reason, "resumeMode": "automatic",
                                  "retryAt": timestamp(retry_at)});
                Ok(Plan::of(
                    vec![Draft::new("run.paused", j.run_at(run_id)?, body)],
                    wait.clone(),
                ))
            })
            .await?;
        Ok(wait)
    }

    /// The automatic resume of a pause at its `retryAt`, claiming `timer`
    /// in the same batch. `false` (and the timer dropped) when the pause
    /// is no longer open.
    pub(crate) async fn resume_firing(
        &self,
        p: &Principal,
        timer: &TimerRecord,
    ) -> Result<bool, EngineError> {
        let claim = timer.delete()?;
        let wait = timer.id.as_str();
        let run_id = timer.run_id.clone().unwrap_or_default();
        let (resumed, _) = self
            .command(p, &timer.session_id, |j| {
                let open = j
                    .run(&run_id)
                    .is_some_and(|r| r.open_pause.as_deref() == Some(wait));
                let mut plan = Plan::of(Vec::new(), open);
                if open {
                    plan.drafts.push(Draft::new(
                        "run.resumed",
                        j.run_at(&run_id)?,
                        json!({ "waitId": wait }),
                    ));
                }
                plan.side.push(claim.clone());
                Ok(plan)
            })
            .await?;
        Ok(resumed)
    }

    /// Resumes a paused run; `wait_id` must be its active pause's.
    pub async fn resume_run(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        wait_id: &str,
    ) -> Result<(), EngineError> {
        self.command_keyed(p, session_id, |j| {
            Ok(Plan::of(
                vec![Draft::new(
                    "run.resumed",
                    j.run_at(run_id)?,
                    json!({ "waitId": wait_id }),
                )],
                (),
            ))
        })
        .await
        .map(|_| ())
    }

    /// Ends a run. Open work (tool calls, children, a pause) must be closed
    /// first; the checker refuses otherwise (`open_work`, `run_paused`).
    pub async fn end_run(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        terminal: Terminal,
    ) -> Result<(), EngineError> {
        if let Some(usage) = terminal.usage() {
            crate::typed::usage::check_usage(usage)?;
        }
        self.command_keyed(p, session_id, |j| {
            Ok(Plan::of(
                vec![terminal_draft(j.run_at(run_id)?, &terminal)],
                (),
            ))
        })
        .await
        .map(|_| ())
    }
}

fn slot_busy(j: &Journal, start: &StartRun) -> bool {
    match j.checker.slot(&j.session_id) {
        None => false,
        Some(Slot::Run(_)) => true,
        Some(Slot::Workflow(w)) => start.workflow_id.as_deref() != Some(w.as_str()),
    }
}

fn terminal_draft(at: At, t: &Terminal) -> Draft {
    match t {
        Terminal::Finished {
            usage,
            artifact_ids,
        } => {
            let mut body = strip_nulls(json!({ "usage": usage }));
            if !artifact_ids.is_empty() {
                body["artifactIds"] = json!(artifact_ids);
            }
            Draft::new("run.finished", at, body)
        }
        Terminal::Error {
            code,
            message,
            usage,
        } => Draft::new(
            "run.error",
            at,
            strip_nulls(json!({"code": code, "message": sanitize(message), "usage": usage})),
        ),
        Terminal::Cancelled {
            code,
            message,
            usage,
        } => Draft::new(
            "run.cancelled",
            at,
            strip_nulls(
                json!({"code": code, "message": message.as_deref().map(sanitize), "usage": usage}),
            ),
        ),
    }
}

/// The start of a backend tool call, a function named like the command so
/// that its span is `start_tool_call` with or without a caller's id.
mod tool_call {
    use narad_store::Store;
    use serde_json::{json, Value};

    use crate::command_loop::Plan;
    use crate::engine::Engine;
    use crate::error::EngineError;
    use crate::host::Principal;
    use crate::journal::Draft;

    pub(super) async fn start_tool_call<S: Store + 'static>(
        engine: &Engine<S>,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_call_id: Option<&str>,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        let id = match tool_call_id {
            Some(id) => id.to_owned(),
            None => engine.inner.ids.next_id("tool"),
        };
        let (id, _) = engine
                .command_keyed(p, session_id, |j| {
                    let body = json!({"toolCallId": id, "toolName": tool_name, "executor": "backend", "args": args});
                    Ok(Plan::of(
                        vec![Draft::new("tool.call.started", j.run_at(run_id)?, body)],
                        id.clone(),
                    ))
                })
                .await?;
        Ok(id)
    }
}
