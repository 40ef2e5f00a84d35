//! The session rules, one module per aggregate: the ordering domains and
//! positions ([`order`], §4.2, §9.3), runs ([`runs`], §6.1–6.4, §7.1–7.5,
//! §9.8), the session and workflow slots ([`slot`], §3.1, §3.2),
//! interrupts and their pause adjacency ([`interrupts`], §7.6–7.7), tool
//! calls ([`tools`], §7.8–7.9) and workflows ([`workflows`], §6.5), plus
//! the hand-off of conversation and document events.
//!
//! Every rule has two halves, as [`crate::graph`]'s prepare and finish do.
//! A check reads the session and the event and returns a [`Change`] (or a
//! refusal); [`Session::commit`] then applies the change and cannot refuse.
//! Refusals come only from checks, which take `&self`, so a refused event
//! changes nothing by construction. The one fallible step of a commit is
//! the hand-off to the transcript or the documents, whose own checks
//! precede their change (a refused patch is reverted by `json_patch`); it
//! runs first, before anything here changes.
//!
//! The match over payload types names every type: a new payload variant
//! does not compile until it is given a rule.

mod interrupts;
mod order;
mod runs;
mod slot;
mod tools;
mod workflows;

use super::{RunState, Session, R};
use crate::model::{AuthorityEvent, AuthorityPayload};
use std::collections::BTreeSet;

/// What an accepted event changes in the session's aggregates, borrowed
/// from the event. Built by a check, applied by [`Session::commit`].
enum Change<'a> {
    /// Accepted; nothing here keeps anything of it.
    Nothing,
    RunStarted(runs::Start<'a>),
    RunPaused {
        run: &'a str,
        wait_id: &'a str,
    },
    RunResumed {
        run: &'a str,
    },
    StopRequested {
        target: &'a str,
    },
    RunTerminal {
        run: &'a str,
        state: RunState,
    },
    InterruptOpened(interrupts::Opened<'a>),
    InterruptResolved(interrupts::Owner<'a>),
    ToolStarted {
        run: &'a str,
        tool: &'a str,
    },
    ToolFinished {
        run: &'a str,
        tool: &'a str,
    },
    WorkflowStarted {
        workflow: &'a str,
    },
    WorkflowPaused {
        workflow: &'a str,
        wait_id: &'a str,
    },
    WorkflowResumed {
        workflow: &'a str,
    },
    WorkflowTerminal {
        workflow: &'a str,
    },
    /// A conversation event, for the transcript.
    Transcript,
    /// A state, UI, view, attachment or artifact event, for the documents.
    Documents,
}

/// A checked event: its change, and the pending adjacency entries (by
/// index) it satisfies.
struct Plan<'a> {
    change: Change<'a>,
    satisfied: Vec<usize>,
}

impl Session {
    /// Checks `ev` against every session rule, then applies it.
    pub(super) fn apply(&mut self, ev: &AuthorityEvent) -> R {
        let plan = self.check(ev)?;
        self.commit(ev, plan)
    }

    fn check<'a>(&self, ev: &'a AuthorityEvent) -> R<Plan<'a>> {
        // Ordering domains (§4.2) first, then the pause adjacency (§7.6).
        self.check_sequences(&ev.envelope)?;
        let satisfied = self.check_adjacency(ev)?;
        let change = self.check_event(ev)?;
        Ok(Plan { change, satisfied })
    }

    fn check_event<'a>(&self, ev: &'a AuthorityEvent) -> R<Change<'a>> {
        use AuthorityPayload as P;
        let env = &ev.envelope;
        let run_id = env.run_id.as_deref().unwrap_or_default();
        // Every run-tree event other than run.started needs its run started,
        // in the same root journal and workflow.
        if env.run_id.is_some() && !matches!(ev.payload, P::RunStarted { .. }) {
            self.check_lineage(env, run_id)?;
        }
        match &ev.payload {
            P::RunStarted { client_executor_id } => self
                .check_run_started(env, client_executor_id.as_deref())
                .map(Change::RunStarted),
            P::RunPaused { wait_id, .. } => self.check_run_paused(run_id, wait_id),
            P::RunResumed { wait_id } => self.check_run_resumed(run_id, wait_id),
            P::RunStopRequested { target_run_id } => self.check_stop(env, target_run_id),
            P::RunFinished { .. } => self.check_run_terminal(run_id, RunState::Finished),
            P::RunError { .. } => self.check_run_terminal(run_id, RunState::Error),
            P::RunCancelled { .. } => self.check_run_terminal(run_id, RunState::Cancelled),
            P::ProgressRecorded { .. } => self.check_progress(run_id),
            // Run-scoped extensions need an open run.
            P::RunCustom(_) | P::RunRaw(_) => self.open_run(run_id).map(|_| Change::Nothing),
            P::InterruptRequested {
                interrupt_id,
                wait_id,
                actions,
                scope,
                ..
            } => self
                .check_interrupt_requested(env, interrupt_id, wait_id, actions, *scope)
                .map(Change::InterruptOpened),
            P::InterruptResolved {
                interrupt_id,
                wait_id,
                decision,
                members,
                scope,
                ..
            } => self
                .check_interrupt_resolved(
                    env,
                    interrupt_id,
                    wait_id,
                    decision,
                    members.as_deref(),
                    *scope,
                )
                .map(Change::InterruptResolved),
            P::ToolCallStarted {
                tool_call_id,
                executor,
                ..
            } => self.check_tool_started(run_id, tool_call_id, *executor),
            P::ToolCallFinished { tool_call_id, .. } => {
                self.check_tool_finished(run_id, tool_call_id)
            }
            P::WorkflowStarted(_) => self.check_workflow_started(env),
            P::WorkflowPaused {
                wait_id,
                interrupt_id,
                ..
            } => self.check_workflow_paused(env, wait_id, interrupt_id),
            P::WorkflowResumed { wait_id } => self.check_workflow_resumed(env, wait_id),
            P::WorkflowStepStarted {}
            | P::WorkflowEdgeTaken { .. }
            | P::WorkflowCustom(_)
            | P::WorkflowRaw(_)
            | P::NodeCustom(_)
            | P::NodeRaw(_) => self
                .open_workflow(env.workflow_id.as_deref().unwrap_or_default())
                .map(|_| Change::Nothing),
            P::WorkflowFinished(_) | P::WorkflowError(_) | P::WorkflowCancelled(_) => {
                self.check_workflow_terminal(env)
            }
            P::MessageUserRecorded { .. }
            | P::MessageTextStarted { .. }
            | P::MessageTextDelta { .. }
            | P::MessageTextCompleted { .. }
            | P::MessageRedacted { .. }
            | P::ReasoningStarted(_)
            | P::ReasoningDelta(_)
            | P::ReasoningCompleted(_) => Ok(Change::Transcript),
            P::StateSnapshot(_)
            | P::StateDelta(_)
            | P::StateCompacted { .. }
            | P::UiStateSnapshot(_)
            | P::UiStateDelta(_)
            | P::ViewOpened(_)
            | P::ViewUpdated(_)
            | P::ViewClosed(_)
            | P::AttachmentAdded(_)
            | P::AttachmentReady(_)
            | P::AttachmentFailed(_)
            | P::AttachmentRemoved(_)
            | P::ArtifactAdded(_)
            | P::ArtifactReady(_)
            | P::ArtifactFailed(_) => Ok(Change::Documents),
            // Session-scoped profile events have no lifecycle. They may carry
            // a run's fields (checked above), and, like conversation events,
            // are accepted after that run's terminal: the spec bars only run
            // work (§6.1–6.4, §7) and progress (§9.8) there.
            P::SessionCustom(_)
            | P::SessionRaw(_)
            | P::TraceSpanStarted {}
            | P::TraceSpanCompleted {}
            | P::TraceEvent {}
            | P::DebugLog {}
            | P::DebugSnapshot {} => Ok(Change::Nothing),
        }
    }

    /// Applies a checked event. Only the hand-off can refuse, and it runs
    /// before anything else changes.
    fn commit(&mut self, ev: &AuthorityEvent, plan: Plan<'_>) -> R {
        let env = &ev.envelope;
        match plan.change {
            Change::Nothing => {}
            Change::Transcript => self.x_mut().transcript.apply(env, &ev.payload)?,
            Change::Documents => self
                .x_mut()
                .documents
                .apply(env, &ev.payload, ev.wire.json())?,
            Change::RunStarted(start) => self.start_run(start),
            Change::RunPaused { run, wait_id } => self.pause_run(run, wait_id),
            Change::RunResumed { run } => self.resume_run(run),
            Change::StopRequested { target } => self.request_stop(target),
            Change::RunTerminal { run, state } => self.end_run(run, state),
            Change::InterruptOpened(opened) => self.open_interrupt(opened),
            Change::InterruptResolved(owner) => self.close_interrupt(owner),
            Change::ToolStarted { run, tool } => self.start_tool(run, tool),
            Change::ToolFinished { run, tool } => self.finish_tool(run, tool),
            Change::WorkflowStarted { workflow } => self.start_workflow(workflow),
            Change::WorkflowPaused { workflow, wait_id } => self.pause_workflow(workflow, wait_id),
            Change::WorkflowResumed { workflow } => self.resume_workflow(workflow),
            Change::WorkflowTerminal { workflow } => self.end_workflow(workflow),
        }
        for i in plan.satisfied.into_iter().rev() {
            self.x_mut().pending.remove(i);
        }
        self.advance_sequences(env);
        Ok(())
    }
}

/// Removes closed work from an open set, and frees the set's node once it
/// is empty (an emptied B-tree keeps its root node allocated).
fn close(open: &mut BTreeSet<String>, id: &str) {
    open.remove(id);
    if open.is_empty() {
        *open = BTreeSet::new();
    }
}
