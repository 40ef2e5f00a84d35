//! The session slot (§3.1: at most one active top-level execution, an
//! independent run or a workflow) and a workflow's slot (§3.2: at most
//! one active top-level run).

use crate::checker::{fail, Session, Slot, R};

/// The slot a top-level run takes.
pub(super) enum Claim<'a> {
    /// The session's: an independent top-level run.
    Session,
    /// Its workflow's.
    Workflow(&'a str),
}

impl Session {
    /// §3.1, §3.2: the slot a top-level run of `workflow` (or of none) takes.
    pub(super) fn check_top_level_run<'a>(&self, workflow: Option<&'a str>) -> R<Claim<'a>> {
        match (workflow, &self.slot) {
            (None, Some(_)) => fail(
                "session_slot_busy",
                "3.1",
                "the session already has an active top-level execution",
            ),
            (None, None) => Ok(Claim::Session),
            (Some(wf_id), _) => {
                if self.open_workflow(wf_id)?.active_top_run.is_some() {
                    return fail(
                        "workflow_slot_busy",
                        "3.2",
                        "the workflow already has an active top-level run",
                    );
                }
                Ok(Claim::Workflow(wf_id))
            }
        }
    }

    /// §3.1: a workflow takes the session slot.
    pub(super) fn check_session_slot_free(&self) -> R {
        if self.slot.is_some() {
            return fail(
                "session_slot_busy",
                "3.1",
                "the session already has an active top-level execution",
            );
        }
        Ok(())
    }

    pub(super) fn claim(&mut self, claim: Claim<'_>, run_id: &str) {
        match claim {
            Claim::Session => self.slot = Some(Box::new(Slot::Run(run_id.to_owned()))),
            Claim::Workflow(wf_id) => {
                if let Some(wf) = self.x_mut().workflows.get_mut(wf_id) {
                    wf.active_top_run = Some(run_id.to_owned());
                }
            }
        }
    }

    pub(super) fn claim_for_workflow(&mut self, wf_id: &str) {
        self.slot = Some(Box::new(Slot::Workflow(wf_id.to_owned())));
    }

    /// Frees whichever slot the terminated run held.
    pub(super) fn release_run(&mut self, run_id: &str, workflow: Option<&str>) {
        if let Some(wf) = workflow.and_then(|w| self.x_mut().workflows.get_mut(w)) {
            if wf.active_top_run.as_deref() == Some(run_id) {
                wf.active_top_run = None;
            }
        }
        if matches!(self.slot.as_deref(), Some(Slot::Run(r)) if r == run_id) {
            self.slot = None;
        }
    }

    /// Frees the session slot if the terminated workflow held it.
    pub(super) fn release_workflow(&mut self, wf_id: &str) {
        if matches!(self.slot.as_deref(), Some(Slot::Workflow(w)) if w == wf_id) {
            self.slot = None;
        }
    }
}
