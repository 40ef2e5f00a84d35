//! Workflows (§6.5, §7.6): started once, taking the session slot; paused
//! only by their open workflow-scope interrupt and resumed by its waitId
//! once it is resolved; a terminal only with no open run, pause or
//! interrupt. Steps, edges and workflow-scoped extensions need the
//! workflow open.

use super::Change;
use crate::checker::{fail, Session, Workflow, R};
use crate::model::AuthorityEnvelope;

fn workflow_id(env: &AuthorityEnvelope) -> &str {
    env.workflow_id.as_deref().unwrap_or_default()
}

impl Session {
    /// A started workflow that has not reached a terminal.
    pub(super) fn open_workflow(&self, wf_id: &str) -> R<&Workflow> {
        match self.x().workflows.get(wf_id) {
            None => fail(
                "workflow_not_started",
                "6.5",
                format!("workflow {wf_id} has not started"),
            ),
            Some(wf) if wf.terminal => fail(
                "workflow_terminated",
                "6.5",
                format!("workflow {wf_id} already reached a terminal"),
            ),
            Some(wf) => Ok(wf),
        }
    }

    pub(super) fn check_workflow_started<'a>(&self, env: &'a AuthorityEnvelope) -> R<Change<'a>> {
        let wf_id = workflow_id(env);
        if self.x().workflows.contains_key(wf_id) {
            return fail(
                "workflow_already_started",
                "6.5",
                format!("workflow {wf_id} already started"),
            );
        }
        self.check_session_slot_free()?;
        Ok(Change::WorkflowStarted { workflow: wf_id })
    }

    pub(super) fn start_workflow(&mut self, wf_id: &str) {
        self.claim_for_workflow(wf_id);
        self.x_mut()
            .workflows
            .insert(wf_id.to_owned(), Workflow::default());
    }

    pub(super) fn check_workflow_paused<'a>(
        &self,
        env: &'a AuthorityEnvelope,
        wait_id: &'a str,
        interrupt_id: &str,
    ) -> R<Change<'a>> {
        let wf_id = workflow_id(env);
        let wf = self.open_workflow(wf_id)?;
        if wf.open_pause.is_some() {
            return fail(
                "pause_already_open",
                "7.6",
                "the workflow already has an open pause",
            );
        }
        if !wf
            .open_interrupt
            .as_ref()
            .is_some_and(|i| i.id == interrupt_id && i.wait_id == wait_id)
        {
            return fail(
                "interrupt_unknown",
                "7.6",
                "workflow.paused must name the open workflow interrupt",
            );
        }
        Ok(Change::WorkflowPaused {
            workflow: wf_id,
            wait_id,
        })
    }

    pub(super) fn pause_workflow(&mut self, wf_id: &str, wait_id: &str) {
        if let Some(wf) = self.x_mut().workflows.get_mut(wf_id) {
            wf.open_pause = Some(wait_id.to_owned());
        }
    }

    pub(super) fn check_workflow_resumed<'a>(
        &self,
        env: &'a AuthorityEnvelope,
        wait_id: &str,
    ) -> R<Change<'a>> {
        let wf_id = workflow_id(env);
        let wf = self.open_workflow(wf_id)?;
        if wf.open_pause.as_deref() != Some(wait_id) {
            return fail(
                "wait_mismatch",
                "6.5",
                "workflow.resumed waitId does not match the open pause",
            );
        }
        if wf.open_interrupt.is_some() {
            return fail(
                "interrupt_unresolved",
                "7.7",
                "the workflow's interrupt must be resolved before resuming",
            );
        }
        Ok(Change::WorkflowResumed { workflow: wf_id })
    }

    pub(super) fn resume_workflow(&mut self, wf_id: &str) {
        if let Some(wf) = self.x_mut().workflows.get_mut(wf_id) {
            wf.open_pause = None;
        }
    }

    pub(super) fn check_workflow_terminal<'a>(&self, env: &'a AuthorityEnvelope) -> R<Change<'a>> {
        let wf_id = workflow_id(env);
        let wf = self.open_workflow(wf_id)?;
        if !wf.open_runs.is_empty() {
            return fail(
                "workflow_open_runs",
                "6.5",
                "a workflow terminal while runs of it are open",
            );
        }
        if wf.open_pause.is_some() || wf.open_interrupt.is_some() {
            return fail(
                "open_work",
                "6.5",
                "a workflow terminal while its pause or interrupt is open",
            );
        }
        Ok(Change::WorkflowTerminal { workflow: wf_id })
    }

    pub(super) fn end_workflow(&mut self, wf_id: &str) {
        if let Some(wf) = self.x_mut().workflows.get_mut(wf_id) {
            wf.terminal = true;
        }
        self.release_workflow(wf_id);
    }
}
