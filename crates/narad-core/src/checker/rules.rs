//! The session rules: positions (§4.2, §9.3), the run state machine and
//! open work (§6.1–6.4), the session and workflow slots (§3.1, §3.2), stop
//! (§6.3, §7.4), interrupts and their pause adjacency (§7.6–7.7), tool
//! calls (§7.8–7.9), workflows (§6.5), progress (§9.8), and the hand-off of
//! conversation and document events. Each refusal leaves the session as
//! it was: checks come before changes.

use super::*;

impl Session {
    /// §4.2, §9.3: `Some(Skipped)` for a position covered by a transcript
    /// snapshot and never delivered before; an error for a taken position
    /// or a gap; `None` for the next position.
    pub(super) fn check_position(&self, env: &AuthorityEnvelope) -> R<Option<Applied>> {
        if env.session_sequence <= self.head {
            if env.session_sequence <= self.covered {
                return Ok(Some(Applied::Skipped));
            }
            return fail(
                "session_sequence_reused",
                "4.2",
                format!(
                    "sessionSequence {} is already taken by another event",
                    env.session_sequence
                ),
            );
        }
        if env.session_sequence != self.head + 1 {
            return fail(
                "session_sequence_gap",
                "4.2",
                format!(
                    "sessionSequence {} does not follow {}",
                    env.session_sequence, self.head
                ),
            );
        }
        Ok(None)
    }

    /// See [`Checker::ignored`].
    pub(super) fn ignored(&mut self, env: &AuthorityEnvelope, fp: u64) -> R<Applied> {
        if dedup(&self.seen, &env.event_id, fp)?.is_some() {
            return Ok(Applied::Skipped);
        }
        if let Some(skip) = self.check_position(env)? {
            return Ok(skip);
        }
        self.check_sequences(env)?;
        // §7.6: nothing of an interrupt's journal comes between it and its
        // pause, and an ignored event is never that pause.
        if self.x().pending.iter().any(|p| p.in_journal(env)) {
            return fail(
                "interrupt_pause_adjacency",
                "7.6",
                "an interrupt must be followed consecutively in its journal by the matching pause",
            );
        }
        if let (Some(root), Some(seq)) = (&env.root_run_id, env.sequence) {
            self.revive_graph(root);
            if let Some(g) = self.w_mut().derived.get_mut(root) {
                let packed = g.is_packed();
                g.with_live(root, |g| g.skip_to(seq));
                if packed {
                    g.pack(root);
                }
            }
        }
        self.advance_sequences(env);
        self.head = env.session_sequence;
        self.seen.insert(&env.event_id, fp);
        Ok(Applied::Skipped)
    }

    /// The workflow and run-tree domains (§4.2): each must take the next position.
    fn check_sequences(&self, env: &AuthorityEnvelope) -> R {
        if let (Some(wf), Some(seq)) = (&env.workflow_id, env.workflow_sequence) {
            let head = self.x().workflow_heads.get(wf).copied().unwrap_or(0);
            if seq != head + 1 {
                return fail(
                    "workflow_sequence_gap",
                    "4.2",
                    format!("workflowSequence {seq} of {wf} does not follow {head}"),
                );
            }
        }
        if let (Some(root), Some(seq)) = (&env.root_run_id, env.sequence) {
            let head = self.run_head(root).unwrap_or(0);
            if seq != head + 1 {
                return fail(
                    "run_sequence_gap",
                    "4.2",
                    format!("sequence {seq} of run journal {root} does not follow {head}"),
                );
            }
        }
        Ok(())
    }

    fn advance_sequences(&mut self, env: &AuthorityEnvelope) {
        if let (Some(wf), Some(seq)) = (&env.workflow_id, env.workflow_sequence) {
            self.x_mut().workflow_heads.insert(wf.clone(), seq);
        }
        if let (Some(root), Some(seq)) = (&env.root_run_id, env.sequence) {
            self.set_run_head(root, seq);
        }
    }

    pub(super) fn apply(&mut self, ev: &AuthorityEvent) -> R {
        let env = &ev.envelope;
        // Ordering domains (§4.2), checked before any state change.
        self.check_sequences(env)?;
        let satisfied = self.check_adjacency(ev)?;
        self.transition(ev)?;
        for i in satisfied.into_iter().rev() {
            self.x_mut().pending.remove(i);
        }
        self.advance_sequences(env);
        Ok(())
    }

    /// §7.6: a blocking interrupt is followed *consecutively in its journal*
    /// by the matching pause; nothing else of that journal may come between.
    /// Returns the pending entries this event satisfies; the caller removes
    /// them only once the event is accepted.
    fn check_adjacency(&self, ev: &AuthorityEvent) -> R<Vec<usize>> {
        let env = &ev.envelope;
        let mut satisfied_by_this = Vec::new();
        for (i, pending) in self.x().pending.iter().enumerate() {
            let in_journal = pending.in_journal(env);
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
            if in_journal {
                if !satisfied {
                    return fail("interrupt_pause_adjacency", "7.6", "an interrupt must be followed consecutively in its journal by the matching pause");
                }
                satisfied_by_this.push(i);
            }
        }
        Ok(satisfied_by_this)
    }

    fn run_mut(&mut self, run_id: &str) -> R<&mut Run> {
        if self.w().runs.get(run_id).is_none() && self.is_closed_run(run_id) {
            return fail(
                "run_terminated",
                "6.1",
                format!("run {run_id} already reached a terminal"),
            );
        }
        match self.w_mut().runs.get_mut(run_id) {
            Some(r) => Ok(r),
            None => fail(
                "run_not_started",
                "7.1",
                format!("run {run_id} has not started"),
            ),
        }
    }

    fn open_run(&mut self, run_id: &str) -> R<&mut Run> {
        let run = self.run_mut(run_id)?;
        if run.state.is_terminal() {
            return fail(
                "run_terminated",
                "6.1",
                format!("run {run_id} already reached a terminal"),
            );
        }
        Ok(run)
    }

    fn transition(&mut self, ev: &AuthorityEvent) -> R {
        use AuthorityPayload as P;
        let env = &ev.envelope;
        let run_id = env.run_id.clone().unwrap_or_default();
        let root = env.root_run_id.clone().unwrap_or_default();
        // Every run-tree event other than run.started needs its run started,
        // in the same root journal.
        if env.run_id.is_some() && !matches!(ev.payload, P::RunStarted { .. }) {
            let Some(run) = self.run_ref(&run_id) else {
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
            // §4.2, §9.1: every event of a workflow-owned run carries that
            // workflow's fields, and no other run's event claims one.
            if run.workflow() != env.workflow_id.as_deref() {
                return fail(
                    "run_workflow_mismatch",
                    "4.2",
                    format!("an event of run {run_id} must carry exactly its run's workflowId and workflowSequence"),
                );
            }
        }
        match &ev.payload {
            P::RunStarted { client_executor_id } => {
                self.run_started(env, &run_id, &root, client_executor_id.clone())
            }
            P::RunPaused { wait_id, .. } => {
                let run = self.open_run(&run_id)?;
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
                run.state = RunState::Paused;
                run.open_pause = Some(wait_id.clone());
                Ok(())
            }
            P::RunResumed { wait_id } => {
                let run = self.open_run(&run_id)?;
                if run.state != RunState::Paused {
                    return fail(
                        "run_not_paused",
                        "6.1",
                        format!("run {run_id} is not paused"),
                    );
                }
                if run.open_pause.as_deref() != Some(wait_id.as_str()) {
                    return fail(
                        "wait_mismatch",
                        "7.3",
                        "run.resumed waitId does not match the active pause",
                    );
                }
                if run
                    .open_interrupt
                    .as_ref()
                    .is_some_and(|i| i.wait_id == *wait_id)
                {
                    return fail(
                        "interrupt_unresolved",
                        "7.7",
                        "the pause's interrupt must be resolved before resuming",
                    );
                }
                run.state = RunState::Running;
                run.open_pause = None;
                Ok(())
            }
            P::RunStopRequested { target_run_id } => {
                let Some(target) = self.w_mut().runs.get_mut(target_run_id) else {
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
                target.stop_requested = true;
                Ok(())
            }
            P::RunFinished { .. } | P::RunError { .. } | P::RunCancelled { .. } => {
                let state = match &ev.payload {
                    P::RunFinished { .. } => RunState::Finished,
                    P::RunError { .. } => RunState::Error,
                    _ => RunState::Cancelled,
                };
                self.run_terminal(&run_id, state)
            }
            P::InterruptRequested {
                interrupt_id,
                wait_id,
                actions,
                scope,
                ..
            } => {
                let open = OpenInterrupt {
                    id: interrupt_id.clone(),
                    wait_id: wait_id.clone(),
                    actions: actions.clone(),
                };
                if *scope == Some(InterruptScope::Workflow) {
                    let wf_id = env.workflow_id.clone().unwrap_or_default();
                    let wf = self.open_workflow(&wf_id)?;
                    if wf.open_interrupt.is_some() {
                        return fail(
                            "interrupt_already_open",
                            "3.4",
                            "the workflow already has an open interrupt",
                        );
                    }
                    wf.open_interrupt = Some(open);
                    self.x_mut().pending.push(Adjacency::Workflow {
                        workflow: wf_id,
                        wait_id: wait_id.clone(),
                        interrupt_id: interrupt_id.clone(),
                    });
                    return Ok(());
                }
                let run = self.open_run(&run_id)?;
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
                run.open_interrupt = Some(open);
                self.x_mut().pending.push(Adjacency::Run {
                    root,
                    run: run_id,
                    wait_id: wait_id.clone(),
                    interrupt_id: interrupt_id.clone(),
                });
                Ok(())
            }
            P::InterruptResolved {
                interrupt_id,
                wait_id,
                decision,
                members,
                scope,
                ..
            } => {
                let slot = if *scope == Some(InterruptScope::Workflow) || env.run_id.is_none() {
                    let wf_id = env.workflow_id.clone().unwrap_or_default();
                    &mut self.open_workflow(&wf_id)?.open_interrupt
                } else {
                    &mut self.open_run(&run_id)?.open_interrupt
                };
                let Some(open) = slot.as_ref().filter(|i| i.id == *interrupt_id) else {
                    return fail(
                        "interrupt_unknown",
                        "7.7",
                        format!("interrupt {interrupt_id} is not open here"),
                    );
                };
                if open.wait_id != *wait_id {
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
                    if members.len() > 1
                        && fold(members.iter().map(|m| m.decision.as_str())) != *decision
                    {
                        return fail(
                            "members_fold_mismatch",
                            "7.7",
                            "decision does not equal the fold of the member decisions",
                        );
                    }
                }
                *slot = None;
                Ok(())
            }
            P::ToolCallStarted {
                tool_call_id,
                executor,
                ..
            } => {
                if self.tool_ref(tool_call_id).is_some() {
                    return fail(
                        "tool_call_duplicate",
                        "7.8",
                        format!("toolCallId {tool_call_id} was already used"),
                    );
                }
                let run = self.open_run(&run_id)?;
                if run.state != RunState::Running {
                    return fail("run_not_running", "6.4", "no run work while paused");
                }
                if run.stop_requested {
                    return fail(
                        "run_stop_requested",
                        "6.3",
                        "no new tool calls after a stop request",
                    );
                }
                if *executor == Executor::Client && run.client_executor.is_none() {
                    return fail(
                        "client_executor_missing",
                        "3.3",
                        "executor=client requires the run's clientExecutorId",
                    );
                }
                run.open_tools.insert(tool_call_id.clone());
                self.w_mut().tools.insert(
                    tool_call_id.clone(),
                    Tool {
                        run: run_id.into(),
                        state: ToolState::Open,
                    },
                );
                Ok(())
            }
            P::ToolCallFinished { tool_call_id, .. } => {
                let Some(tool) = self.w_mut().tools.get_mut(tool_call_id) else {
                    if self.tool_ref(tool_call_id).is_some() {
                        return fail(
                            "tool_call_finished_twice",
                            "7.9",
                            "exactly one finish follows each start",
                        );
                    }
                    return fail(
                        "tool_call_unknown",
                        "7.9",
                        format!("tool call {tool_call_id} has not started"),
                    );
                };
                if tool.state == ToolState::Finished {
                    return fail(
                        "tool_call_finished_twice",
                        "7.9",
                        "exactly one finish follows each start",
                    );
                }
                if *tool.run != *run_id {
                    return fail(
                        "tool_call_run_mismatch",
                        "3.5",
                        "a tool call is finished by the run that owns it",
                    );
                }
                tool.state = ToolState::Finished;
                close(&mut self.open_run(&run_id)?.open_tools, tool_call_id);
                Ok(())
            }
            P::ProgressRecorded { .. } => {
                // Started (checked above), same lineage, not terminal (§9.8).
                self.open_run(&run_id)
                    .map(drop)
                    .map_err(|(_, _, m)| ("progress_run_invalid", "9.8", m))
            }
            P::WorkflowStarted(_) => {
                let wf_id = env.workflow_id.clone().unwrap_or_default();
                if self.x().workflows.contains_key(&wf_id) {
                    return fail(
                        "workflow_already_started",
                        "6.5",
                        format!("workflow {wf_id} already started"),
                    );
                }
                if self.slot.is_some() {
                    return fail(
                        "session_slot_busy",
                        "3.1",
                        "the session already has an active top-level execution",
                    );
                }
                self.slot = Some(Box::new(Slot::Workflow(wf_id.clone())));
                self.x_mut().workflows.insert(wf_id, Workflow::default());
                Ok(())
            }
            P::WorkflowPaused {
                wait_id,
                interrupt_id,
                ..
            } => {
                let wf = self.open_workflow(env.workflow_id.as_deref().unwrap_or_default())?;
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
                    .is_some_and(|i| i.id == *interrupt_id && i.wait_id == *wait_id)
                {
                    return fail(
                        "interrupt_unknown",
                        "7.6",
                        "workflow.paused must name the open workflow interrupt",
                    );
                }
                wf.open_pause = Some(wait_id.clone());
                Ok(())
            }
            P::WorkflowResumed { wait_id } => {
                let wf = self.open_workflow(env.workflow_id.as_deref().unwrap_or_default())?;
                if wf.open_pause.as_deref() != Some(wait_id.as_str()) {
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
                wf.open_pause = None;
                Ok(())
            }
            P::WorkflowStepStarted {}
            | P::WorkflowEdgeTaken { .. }
            | P::WorkflowCustom(_)
            | P::WorkflowRaw(_)
            | P::NodeCustom(_)
            | P::NodeRaw(_) => self
                .open_workflow(env.workflow_id.as_deref().unwrap_or_default())
                .map(drop),
            P::WorkflowFinished(_) | P::WorkflowError(_) | P::WorkflowCancelled(_) => {
                let wf_id = env.workflow_id.clone().unwrap_or_default();
                let wf = self.open_workflow(&wf_id)?;
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
                wf.terminal = true;
                if self.slot.as_deref() == Some(&Slot::Workflow(wf_id)) {
                    self.slot = None;
                }
                Ok(())
            }
            // Run-scoped extensions need an open run (checked above for run
            // existence); session-scoped profile events have no lifecycle here.
            P::RunCustom(_) | P::RunRaw(_) => self.open_run(&run_id).map(drop),
            P::MessageUserRecorded { .. }
            | P::MessageTextStarted { .. }
            | P::MessageTextDelta { .. }
            | P::MessageTextCompleted { .. }
            | P::MessageRedacted { .. }
            | P::ReasoningStarted(_)
            | P::ReasoningDelta(_)
            | P::ReasoningCompleted(_) => self.x_mut().transcript.apply(env, &ev.payload),
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
            | P::ArtifactFailed(_) => {
                self.x_mut()
                    .documents
                    .apply(env, &ev.payload, ev.wire.json())
            }
            _ => Ok(()),
        }
    }

    fn open_workflow(&mut self, wf_id: &str) -> R<&mut Workflow> {
        match self.x_mut().workflows.get_mut(wf_id) {
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

    fn run_started(
        &mut self,
        env: &crate::model::AuthorityEnvelope,
        run_id: &str,
        root: &str,
        client_executor: Option<String>,
    ) -> R {
        if self.run_ref(run_id).is_some() {
            return fail(
                "run_already_started",
                "7.1",
                format!("run {run_id} already started"),
            );
        }
        let top_level = run_id == root;
        if top_level {
            if env.parent_run_id.is_some() {
                return fail(
                    "parent_invalid",
                    "3.3",
                    "a top-level run has no parentRunId",
                );
            }
            match (&env.workflow_id, &self.slot) {
                (None, Some(_)) => {
                    return fail(
                        "session_slot_busy",
                        "3.1",
                        "the session already has an active top-level execution",
                    )
                }
                (None, None) => self.slot = Some(Box::new(Slot::Run(run_id.to_owned()))),
                (Some(wf_id), _) => {
                    let wf = self.open_workflow(wf_id)?;
                    if wf.active_top_run.is_some() {
                        return fail(
                            "workflow_slot_busy",
                            "3.2",
                            "the workflow already has an active top-level run",
                        );
                    }
                    wf.active_top_run = Some(run_id.to_owned());
                }
            }
        } else {
            let Some(parent_id) = env.parent_run_id.as_deref() else {
                return fail(
                    "parent_invalid",
                    "3.3",
                    "a nested run names its parentRunId",
                );
            };
            let Some(parent) = self.w_mut().runs.get_mut(parent_id) else {
                let Some(closed) = self.run_ref(parent_id) else {
                    return fail(
                        "parent_invalid",
                        "3.3",
                        format!("parent run {parent_id} has not started"),
                    );
                };
                if closed.root() != root || closed.workflow() != env.workflow_id.as_deref() {
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
            if parent.root != root || parent.workflow != env.workflow_id {
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
            parent.open_children.insert(run_id.to_owned());
        }
        if let Some(wf_id) = &env.workflow_id {
            self.open_workflow(wf_id)?
                .open_runs
                .insert(run_id.to_owned());
        }
        if top_level {
            self.last_top_run = Some(run_id.into());
        }
        self.w_mut().runs.insert(
            run_id.to_owned(),
            Run {
                root: root.to_owned(),
                parent: env.parent_run_id.clone(),
                workflow: env.workflow_id.clone(),
                client_executor,
                state: RunState::Running,
                stop_requested: false,
                open_pause: None,
                open_interrupt: None,
                open_children: BTreeSet::new(),
                open_tools: BTreeSet::new(),
            },
        );
        Ok(())
    }

    /// §6.1, §6.2, §7.5: a terminal only from running, with no open work, once.
    fn run_terminal(&mut self, run_id: &str, state: RunState) -> R {
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
        run.state = state;
        let (parent, workflow) = (run.parent.clone(), run.workflow.clone());
        if let Some(p) = parent.and_then(|p| self.w_mut().runs.get_mut(&p)) {
            close(&mut p.open_children, run_id);
        }
        if let Some(wf) = workflow.and_then(|w| self.x_mut().workflows.get_mut(&w)) {
            close(&mut wf.open_runs, run_id);
            if wf.active_top_run.as_deref() == Some(run_id) {
                wf.active_top_run = None;
            }
        }
        if self.slot.as_deref() == Some(&Slot::Run(run_id.to_owned())) {
            self.slot = None;
        }
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
