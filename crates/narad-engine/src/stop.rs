//! `stop`: ends a run and its open subtree in one batch, by the engine's
//! closing policy.

use narad_core::checker::Slot;
use narad_store::Store;
use serde_json::json;

use crate::command_loop::Plan;
use crate::command_types::StopTarget;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::journal::{Draft, Journal};

impl<S: Store + 'static> Engine<S> {
    /// Stops a run (or the active root) and closes its open work by the
    /// engine's policy, deepest runs first: open tool calls finish as
    /// `cancelled`, an open interrupt resolves (`stop`, `cancel` or `deny`
    /// when offered, else `expired`), a pause resumes, and each run ends
    /// with `run.cancelled`. All of it is one atomic batch. Returns the
    /// stopped run. `StopTarget::ActiveRoot` with no active top-level run
    /// is refused as `nothing_running`.
    pub async fn stop(
        &self,
        p: &Principal,
        session_id: &str,
        target: StopTarget,
    ) -> Result<String, EngineError> {
        let (target, _) = self
            .command_keyed(p, session_id, |j| {
                let s = &j.session_id;
                let target = match &target {
                    StopTarget::Run(r) => r.clone(),
                    StopTarget::ActiveRoot => match j.checker.slot(s) {
                        Some(Slot::Run(r)) => r.clone(),
                        Some(Slot::Workflow(w)) => j
                            .checker
                            .workflow(s, w)
                            .and_then(|w| w.active_top_run.clone())
                            .ok_or(EngineError::NothingRunning)?,
                        None => return Err(EngineError::NothingRunning),
                    },
                };
                let mut drafts = vec![Draft::new(
                    "run.stop.requested",
                    j.run_at(&target)?,
                    json!({ "targetRunId": target }),
                )];
                close_subtree(j, &target, &mut drafts)?;
                Ok(Plan::of(drafts, target))
            })
            .await?;
        Ok(target)
    }
}

/// Appends the drafts that close `run` and its open subtree, deepest first.
fn close_subtree(j: &Journal, run: &str, drafts: &mut Vec<Draft>) -> Result<(), EngineError> {
    let s = &j.session_id;
    let r = j
        .checker
        .run(s, run)
        .ok_or_else(|| EngineError::UnknownRun {
            run_id: run.to_owned(),
        })?;
    if r.state.is_terminal() {
        return Ok(());
    }
    for child in &r.open_children {
        close_subtree(j, child, drafts)?;
    }
    let at = j.run_at(run)?;
    for tool in &r.open_tools {
        drafts.push(Draft::new(
            "tool.call.finished",
            at.clone(),
            json!({"toolCallId": tool, "outcome": "cancelled", "response": null}),
        ));
    }
    if let Some(i) = &r.open_interrupt {
        let decision = ["stop", "cancel", "deny"]
            .into_iter()
            .find(|d| i.actions.iter().any(|a| a == d))
            .unwrap_or("expired");
        drafts.push(Draft::new(
            "interrupt.resolved",
            at.clone(),
            json!({"interruptId": i.id, "waitId": i.wait_id, "decision": decision, "reason": "stopped"}),
        ));
    }
    if let Some(wait) = &r.open_pause {
        drafts.push(Draft::new(
            "run.resumed",
            at.clone(),
            json!({ "waitId": wait }),
        ));
    }
    drafts.push(Draft::new(
        "run.cancelled",
        at,
        json!({"code": "stopped", "message": "Run stopped."}),
    ));
    Ok(())
}
