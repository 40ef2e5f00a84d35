//! Interrupts (§7.6, §7.7): at most one open per run or workflow (§3.4),
//! requested by a running run, followed consecutively in its journal by
//! the matching pause, and resolved with one of the offered actions.

use crate::checker::{fail, fold, Adjacency, OpenInterrupt, RunState, Session, R};
use crate::model::{
    AuthorityEnvelope, AuthorityEvent, AuthorityPayload, InterruptScope, MemberDecision,
};

/// Whose interrupt slot an interrupt event names.
#[derive(Clone, Copy)]
pub(super) enum Owner<'a> {
    Run(&'a str),
    Workflow(&'a str),
}

/// A checked `interrupt.requested`.
pub(super) struct Opened<'a> {
    owner: Owner<'a>,
    root: &'a str,
    interrupt_id: &'a str,
    wait_id: &'a str,
    actions: &'a [String],
}

impl Session {
    /// §7.6: a blocking interrupt is followed *consecutively in its journal*
    /// by the matching pause; nothing else of that journal may come between.
    /// Returns the pending entries this event satisfies; the commit removes
    /// them.
    pub(super) fn check_adjacency(&self, ev: &AuthorityEvent) -> R<Vec<usize>> {
        let env = &ev.envelope;
        let mut satisfied_by_this = Vec::new();
        for (i, pending) in self.x().pending.iter().enumerate() {
            if !pending.in_journal(env) {
                continue;
            }
            let satisfied = match pending {
                Adjacency::Run {
                    run,
                    wait_id,
                    interrupt_id,
                    ..
                } => {
                    env.run_id.as_deref() == Some(run.as_str())
                        && matches!(&ev.payload, AuthorityPayload::RunPaused { wait_id: w, interrupt_id: Some(i), .. } if w == wait_id && i == interrupt_id)
                }
                Adjacency::Workflow {
                    wait_id,
                    interrupt_id,
                    ..
                } => {
                    matches!(&ev.payload, AuthorityPayload::WorkflowPaused { wait_id: w, interrupt_id: i, .. } if w == wait_id && i == interrupt_id)
                }
            };
            if !satisfied {
                return fail(
                    "interrupt_pause_adjacency",
                    "7.6",
                    "an interrupt must be followed consecutively in its journal by the matching pause",
                );
            }
            satisfied_by_this.push(i);
        }
        Ok(satisfied_by_this)
    }

    pub(super) fn check_interrupt_requested<'a>(
        &self,
        env: &'a AuthorityEnvelope,
        interrupt_id: &'a str,
        wait_id: &'a str,
        actions: &'a [String],
        scope: Option<InterruptScope>,
    ) -> R<Opened<'a>> {
        let root = env.root_run_id.as_deref().unwrap_or_default();
        let owner = if scope == Some(InterruptScope::Workflow) {
            let wf_id = env.workflow_id.as_deref().unwrap_or_default();
            if self.open_workflow(wf_id)?.open_interrupt.is_some() {
                return fail(
                    "interrupt_already_open",
                    "3.4",
                    "the workflow already has an open interrupt",
                );
            }
            Owner::Workflow(wf_id)
        } else {
            let run_id = env.run_id.as_deref().unwrap_or_default();
            let run = self.open_run(run_id)?;
            if run.state != RunState::Running {
                return fail(
                    "run_not_running",
                    "7.6",
                    "an interrupt is requested by a running run",
                );
            }
            if run.open_interrupt.is_some() {
                return fail(
                    "interrupt_already_open",
                    "3.4",
                    format!("run {run_id} already has an open interrupt"),
                );
            }
            Owner::Run(run_id)
        };
        Ok(Opened {
            owner,
            root,
            interrupt_id,
            wait_id,
            actions,
        })
    }

    /// Opens the interrupt, and waits for its pause (§7.6).
    pub(super) fn open_interrupt(&mut self, o: Opened<'_>) {
        let open = OpenInterrupt {
            id: o.interrupt_id.to_owned(),
            wait_id: o.wait_id.to_owned(),
            actions: o.actions.to_vec(),
        };
        let pending = match o.owner {
            Owner::Workflow(wf_id) => {
                if let Some(wf) = self.x_mut().workflows.get_mut(wf_id) {
                    wf.open_interrupt = Some(open);
                }
                Adjacency::Workflow {
                    workflow: wf_id.to_owned(),
                    wait_id: o.wait_id.to_owned(),
                    interrupt_id: o.interrupt_id.to_owned(),
                }
            }
            Owner::Run(run_id) => {
                if let Some(run) = self.w_mut().runs.get_mut(run_id) {
                    run.open_interrupt = Some(open);
                }
                Adjacency::Run {
                    root: o.root.to_owned(),
                    run: run_id.to_owned(),
                    wait_id: o.wait_id.to_owned(),
                    interrupt_id: o.interrupt_id.to_owned(),
                }
            }
        };
        self.x_mut().pending.push(pending);
    }

    /// §7.7: the open interrupt, its waitId, and a decision (and member
    /// decisions) among its actions or `expired`; with several members the
    /// decision is their fold.
    pub(super) fn check_interrupt_resolved<'a>(
        &self,
        env: &'a AuthorityEnvelope,
        interrupt_id: &str,
        wait_id: &str,
        decision: &str,
        members: Option<&[MemberDecision]>,
        scope: Option<InterruptScope>,
    ) -> R<Owner<'a>> {
        let (owner, slot) = if scope == Some(InterruptScope::Workflow) || env.run_id.is_none() {
            let wf_id = env.workflow_id.as_deref().unwrap_or_default();
            let wf = self.open_workflow(wf_id)?;
            (Owner::Workflow(wf_id), &wf.open_interrupt)
        } else {
            let run_id = env.run_id.as_deref().unwrap_or_default();
            (Owner::Run(run_id), &self.open_run(run_id)?.open_interrupt)
        };
        let Some(open) = slot.as_ref().filter(|i| i.id == interrupt_id) else {
            return fail(
                "interrupt_unknown",
                "7.7",
                format!("interrupt {interrupt_id} is not open here"),
            );
        };
        if open.wait_id != wait_id {
            return fail(
                "wait_mismatch",
                "7.7",
                "interrupt.resolved waitId does not match the request",
            );
        }
        let valid = |d: &str| d == "expired" || open.actions.iter().any(|a| a == d);
        if !valid(decision) {
            return fail(
                "decision_invalid",
                "7.7",
                "decision is not one of the request's actions",
            );
        }
        if let Some(members) = members {
            if members.iter().any(|m| !valid(&m.decision)) {
                return fail(
                    "decision_invalid",
                    "7.7",
                    "a member decision is not one of the request's actions",
                );
            }
            if members.len() > 1 && fold(members.iter().map(|m| m.decision.as_str())) != decision {
                return fail(
                    "members_fold_mismatch",
                    "7.7",
                    "decision does not equal the fold of the member decisions",
                );
            }
        }
        Ok(owner)
    }

    pub(super) fn close_interrupt(&mut self, owner: Owner<'_>) {
        match owner {
            Owner::Workflow(wf_id) => {
                if let Some(wf) = self.x_mut().workflows.get_mut(wf_id) {
                    wf.open_interrupt = None;
                }
            }
            Owner::Run(run_id) => {
                if let Some(run) = self.w_mut().runs.get_mut(run_id) {
                    run.open_interrupt = None;
                }
            }
        }
    }
}
