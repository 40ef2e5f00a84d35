//! Runs: lineage of run-tree events (§3.3, §4.2, §7.1), the run state
//! machine (§6.1), the open-work invariant (§6.2), stop (§6.3, §7.4),
//! pause and resume (§6.4, §7.2, §7.3), terminals (§7.5) and progress
//! (§9.8).

use super::slot::Claim;
use super::{close, Change};
use crate::checker::{fail, Run, RunState, Session, R};
use crate::model::AuthorityEnvelope;
use std::collections::BTreeSet;

/// A checked `run.started`.
pub(super) struct Start<'a> {
    run: &'a str,
    root: &'a str,
    parent: Option<&'a str>,
    workflow: Option<&'a str>,
    client_executor: Option<&'a str>,
    /// The slot a top-level run takes; `None` for a nested run.
    claim: Option<Claim<'a>>,
}

impl Session {
    /// An event of a started run belongs to its root journal and carries
    /// exactly its workflow's fields (§4.2, §9.1).
    pub(super) fn check_lineage(&self, env: &AuthorityEnvelope, run_id: &str) -> R {
        let root = env.root_run_id.as_deref().unwrap_or_default();
        let Some(run) = self.run_ref(run_id) else {
            return fail(
                "run_not_started",
                "7.1",
                format!("run {run_id} has not started"),
            );
        };
        if run.root() != root {
            return fail(
                "run_root_mismatch",
                "3.3",
                format!("run {run_id} belongs to another root journal"),
            );
        }
        if run.workflow() != env.workflow_id.as_deref() {
            return fail(
                "run_workflow_mismatch",
                "4.2",
                format!("an event of run {run_id} must carry exactly its run's workflowId and workflowSequence"),
            );
        }
        Ok(())
    }

    /// A started run that has not reached a terminal.
    pub(super) fn open_run(&self, run_id: &str) -> R<&Run> {
        let Some(run) = self.w().runs.get(run_id) else {
            if self.is_closed_run(run_id) {
                return fail(
                    "run_terminated",
                    "6.1",
                    format!("run {run_id} already reached a terminal"),
                );
            }
            return fail(
                "run_not_started",
                "7.1",
                format!("run {run_id} has not started"),
            );
        };
        if run.state.is_terminal() {
            return fail(
                "run_terminated",
                "6.1",
                format!("run {run_id} already reached a terminal"),
            );
        }
        Ok(run)
    }

    /// §7.1: once per runId; a top-level run takes a slot (§3.1, §3.2), a
    /// nested one names an open, running parent of its lineage (§3.3) that
    /// no stop targets (§6.3).
    pub(super) fn check_run_started<'a>(
        &self,
        env: &'a AuthorityEnvelope,
        client_executor: Option<&'a str>,
    ) -> R<Start<'a>> {
        let run_id = env.run_id.as_deref().unwrap_or_default();
        let root = env.root_run_id.as_deref().unwrap_or_default();
        let workflow = env.workflow_id.as_deref();
        if self.run_ref(run_id).is_some() {
            return fail(
                "run_already_started",
                "7.1",
                format!("run {run_id} already started"),
            );
        }
        let mut start = Start {
            run: run_id,
            root,
            parent: None,
            workflow,
            client_executor,
            claim: None,
        };
        if run_id == root {
            if env.parent_run_id.is_some() {
                return fail(
                    "parent_invalid",
                    "3.3",
                    "a top-level run has no parentRunId",
                );
            }
            start.claim = Some(self.check_top_level_run(workflow)?);
        } else {
            let Some(parent_id) = env.parent_run_id.as_deref() else {
                return fail(
                    "parent_invalid",
                    "3.3",
                    "a nested run names its parentRunId",
                );
            };
            self.check_parent(parent_id, root, workflow)?;
            start.parent = Some(parent_id);
        }
        if let Some(wf) = workflow {
            self.open_workflow(wf)?;
        }
        Ok(start)
    }

    fn check_parent(&self, parent_id: &str, root: &str, workflow: Option<&str>) -> R {
        let Some(parent) = self.w().runs.get(parent_id) else {
            let Some(closed) = self.run_ref(parent_id) else {
                return fail(
                    "parent_invalid",
                    "3.3",
                    format!("parent run {parent_id} has not started"),
                );
            };
            if closed.root() != root || closed.workflow() != workflow {
                return fail(
                    "parent_invalid",
                    "3.3",
                    "the parent run is of another root journal or workflow",
                );
            }
            return fail(
                "parent_invalid",
                "3.3",
                "the parent run must be open and running",
            );
        };
        if parent.root != root || parent.workflow.as_deref() != workflow {
            return fail(
                "parent_invalid",
                "3.3",
                "the parent run is of another root journal or workflow",
            );
        }
        if parent.state != RunState::Running {
            return fail(
                "parent_invalid",
                "3.3",
                "the parent run must be open and running",
            );
        }
        if parent.stop_requested {
            return fail(
                "run_stop_requested",
                "6.3",
                "no new child runs after a stop request",
            );
        }
        Ok(())
    }

    pub(super) fn start_run(&mut self, s: Start<'_>) {
        match s.claim {
            Some(claim) => {
                self.claim(claim, s.run);
                self.last_top_run = Some(s.run.into());
            }
            None => {
                if let Some(parent) = s.parent.and_then(|p| self.w_mut().runs.get_mut(p)) {
                    parent.open_children.insert(s.run.to_owned());
                }
            }
        }
        if let Some(wf) = s.workflow.and_then(|w| self.x_mut().workflows.get_mut(w)) {
            wf.open_runs.insert(s.run.to_owned());
        }
        self.w_mut().runs.insert(
            s.run.to_owned(),
            Run {
                root: s.root.to_owned(),
                parent: s.parent.map(str::to_owned),
                workflow: s.workflow.map(str::to_owned),
                client_executor: s.client_executor.map(str::to_owned),
                state: RunState::Running,
                stop_requested: false,
                open_pause: None,
                open_interrupt: None,
                open_children: BTreeSet::new(),
                open_tools: BTreeSet::new(),
            },
        );
    }

    /// §7.2: a running run with no open pause.
    pub(super) fn check_run_paused<'a>(&self, run_id: &'a str, wait_id: &'a str) -> R<Change<'a>> {
        let run = self.open_run(run_id)?;
        if run.state != RunState::Running {
            return fail(
                "run_not_running",
                "6.1",
                format!("run {run_id} is not running"),
            );
        }
        if run.open_pause.is_some() {
            return fail(
                "pause_already_open",
                "7.2",
                "at most one pause cycle is open per run",
            );
        }
        Ok(Change::RunPaused {
            run: run_id,
            wait_id,
        })
    }

    pub(super) fn pause_run(&mut self, run_id: &str, wait_id: &str) {
        if let Some(run) = self.w_mut().runs.get_mut(run_id) {
            run.state = RunState::Paused;
            run.open_pause = Some(wait_id.to_owned());
        }
    }

    /// §7.3: the active pause's waitId, once its interrupt is resolved (§7.7).
    pub(super) fn check_run_resumed<'a>(&self, run_id: &'a str, wait_id: &str) -> R<Change<'a>> {
        let run = self.open_run(run_id)?;
        if run.state != RunState::Paused {
            return fail(
                "run_not_paused",
                "6.1",
                format!("run {run_id} is not paused"),
            );
        }
        if run.open_pause.as_deref() != Some(wait_id) {
            return fail(
                "wait_mismatch",
                "7.3",
                "run.resumed waitId does not match the active pause",
            );
        }
        if run
            .open_interrupt
            .as_ref()
            .is_some_and(|i| i.wait_id == wait_id)
        {
            return fail(
                "interrupt_unresolved",
                "7.7",
                "the pause's interrupt must be resolved before resuming",
            );
        }
        Ok(Change::RunResumed { run: run_id })
    }

    pub(super) fn resume_run(&mut self, run_id: &str) {
        if let Some(run) = self.w_mut().runs.get_mut(run_id) {
            run.state = RunState::Running;
            run.open_pause = None;
        }
    }

    /// §7.4: the target is open and of the same journal.
    pub(super) fn check_stop<'a>(
        &self,
        env: &AuthorityEnvelope,
        target_run_id: &'a str,
    ) -> R<Change<'a>> {
        let root = env.root_run_id.as_deref().unwrap_or_default();
        let Some(target) = self.w().runs.get(target_run_id) else {
            if self.is_closed_run(target_run_id) {
                return fail(
                    "stop_target_invalid",
                    "7.4",
                    "stop target must be open and of the same journal",
                );
            }
            return fail(
                "stop_target_invalid",
                "7.4",
                format!("stop target {target_run_id} has not started"),
            );
        };
        if target.state.is_terminal() || target.root != root {
            return fail(
                "stop_target_invalid",
                "7.4",
                "stop target must be open and of the same journal",
            );
        }
        Ok(Change::StopRequested {
            target: target_run_id,
        })
    }

    pub(super) fn request_stop(&mut self, target: &str) {
        if let Some(run) = self.w_mut().runs.get_mut(target) {
            run.stop_requested = true;
        }
    }

    /// §6.1, §6.2, §7.5: a terminal only from running, with no open work, once.
    pub(super) fn check_run_terminal<'a>(&self, run_id: &'a str, state: RunState) -> R<Change<'a>> {
        let run = self.open_run(run_id)?;
        if run.state == RunState::Paused {
            return fail(
                "run_paused",
                "6.1",
                "a paused run must resume before a terminal",
            );
        }
        let open = [
            (!run.open_children.is_empty(), "a child run"),
            (!run.open_tools.is_empty(), "a tool call"),
            (run.open_interrupt.is_some(), "an interrupt"),
            (run.open_pause.is_some(), "a pause cycle"),
        ];
        if let Some((_, what)) = open.iter().find(|(is_open, _)| *is_open) {
            return fail(
                "open_work",
                "6.2",
                format!("run {run_id} still owns {what}"),
            );
        }
        Ok(Change::RunTerminal { run: run_id, state })
    }

    /// Ends the run, and closes it in its parent, its workflow and the slot
    /// it held.
    pub(super) fn end_run(&mut self, run_id: &str, state: RunState) {
        let Some(run) = self.w_mut().runs.get_mut(run_id) else {
            return;
        };
        run.state = state;
        let (parent, workflow) = (run.parent.clone(), run.workflow.clone());
        if let Some(p) = parent.and_then(|p| self.w_mut().runs.get_mut(&p)) {
            close(&mut p.open_children, run_id);
        }
        if let Some(wf) = workflow
            .as_deref()
            .and_then(|w| self.x_mut().workflows.get_mut(w))
        {
            close(&mut wf.open_runs, run_id);
        }
        self.release_run(run_id, workflow.as_deref());
    }

    /// §9.8: progress of a started run of the lineage, not after its terminal.
    pub(super) fn check_progress(&self, run_id: &str) -> R<Change<'static>> {
        self.open_run(run_id)
            .map(|_| Change::Nothing)
            .map_err(|(_, _, m)| ("progress_run_invalid", "9.8", m))
    }
}
