//! The reduced state of a session as Rust types: what the checker holds,
//! completed from the session's journal with what it does not keep (tool
//! names, args summaries and results, interrupt details, usage totals).

use std::collections::BTreeMap;

use narad_core::checker::{Checker, Documents, Message, Reasoning, Run, Slot, Workflow};
use narad_core::model::Outcome;
use serde::{Deserialize, Serialize};

use crate::command_types::InterruptScope;
use crate::typed::details::Details;
use crate::typed::usage::Usage;

/// Whether a tool call is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallState {
    /// Started, not finished.
    Open,
    /// Finished (exactly once, §7.9).
    Finished,
}

/// A tool call: its run and state as the checker holds them, and its
/// name, args summary and result from its `tool.call.started` and
/// `tool.call.finished` events (filled by [`Engine::state`](crate::Engine::state)
/// and [`SessionState::with_journal`]; `None` in a state read from the
/// checker alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The run it belongs to.
    pub run: String,
    /// Open or finished.
    pub state: ToolCallState,
    /// `toolName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The arguments as compact JSON, cut to
    /// [`ARGS_SUMMARY_MAX`](crate::ARGS_SUMMARY_MAX) bytes (`…` when cut).
    /// Produced from the stored `tool.call.started` event; the engine
    /// keeps it with the cached session (never in the checker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_summary: Option<String>,
    /// How it finished (`None` while open). The response is not copied:
    /// read it from the `tool.call.finished` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResult>,
}

/// How a tool call finished (§7.9), without its response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// `success`, `error` or `cancelled`.
    pub outcome: Outcome,
    /// The machine code, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The user-safe message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An open interrupt: its owner, pause and actions as the checker holds
/// them, and the details of its `interrupt.requested` (filled by
/// [`Engine::state`](crate::Engine::state) and
/// [`SessionState::with_journal`]; `kind` is `None` in a state read from
/// the checker alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptInfo {
    /// The run or workflow waiting on it.
    pub scope: InterruptScope,
    /// The `waitId` of the pause it opened.
    pub wait_id: String,
    /// The decisions offered.
    pub actions: Vec<String>,
    /// Its namespaced `kind` (`approval`, `acme.review`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its title, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its message, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Its backend expiry (`expiresAt`, RFC 3339), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// Usage totals from the run terminals' `usage` (§7.5): the counters and
/// `elapsedMs` added up, per run and for the session. Implementation-
/// defined extra keys are not added up (they are not known to be
/// additive); read them from the terminal events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// All runs of the session.
    pub session: Usage,
    /// Per run that recorded usage.
    pub runs: BTreeMap<String, Usage>,
}

impl UsageTotals {
    /// Whether no run recorded usage.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    pub(crate) fn add(&mut self, run: &str, u: &Usage) {
        let counters = |u: Usage| Usage {
            extra: serde_json::Map::new(),
            ..u
        };
        let run_total = self.runs.get(run).cloned().unwrap_or_default().add(u);
        self.runs.insert(run.to_owned(), counters(run_total));
        self.session = counters(self.session.add(u));
    }
}

/// The transcript of a session (§9.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptState {
    /// Messages in authority order.
    pub messages: Vec<Message>,
    /// Reasoning streams in authority order.
    pub reasoning: Vec<Reasoning>,
}

/// The reduced state of one session, typed. It holds every key of
/// `state_json` but the checker's bookkeeping ones, and three more:
/// `interrupts` (the open ones, with the details of their request),
/// `usage` (totals), and on each tool call its `name`, `argsSummary` and
/// `result`. The details the checker does not keep are folded from the
/// session's journal ([`SessionState::with_journal`]);
/// [`Engine::state`](crate::Engine::state) folds it once and then only the
/// events appended since, while `state_json` answers from memory.
///
/// # The layout of `state_json`
///
/// [`Engine::state_json`](crate::Engine::state_json) is the checker's
/// deterministic JSON of one session (maps in key order), an object with:
///
/// | key | value |
/// |---|---|
/// | `head` | the session's `sessionSequence` |
/// | `covered` | the position the last transcript snapshot covers (§9.3) |
/// | `lastTopRun` | the active, or most recently started, top-level run |
/// | `transcript` | `{messages: [Message], reasoning: [Reasoning]}` (§9.2) |
/// | `documents` | `{documents: {KEY: {revision, value}}, views, attachments, artifacts}`; KEY is [`document_key`](crate::document_key) |
/// | `workflowHeads`, `runHeads` | `workflowSequence` per workflow, run-tree `sequence` per root run |
/// | `runs` | run id → `{root, parent, workflow, clientExecutor, state, stopRequested, openPause, openInterrupt, openChildren, openTools}` |
/// | `tools` | tool call id → `{run, state: open \| finished}` |
/// | `workflows` | workflow id → `{terminal, openRuns, activeTopRun, openPause, openInterrupt}` |
/// | `slot` | the session slot: `{"run": ID}`, `{"workflow": ID}` or null |
/// | `pending`, `graphs`, `watch` | checker bookkeeping (interrupt adjacency, graph and watch revisions) |
///
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// The session's `sessionSequence`.
    pub head: u64,
    /// The position the last transcript snapshot covers.
    pub covered: u64,
    /// The active, or most recently started, top-level run.
    pub last_top_run: Option<String>,
    /// The transcript.
    pub transcript: TranscriptState,
    /// State and UI documents, views, attachments, artifacts.
    pub documents: Documents,
    /// `workflowSequence` per workflow.
    pub workflow_heads: BTreeMap<String, u64>,
    /// Run-tree `sequence` per root run.
    pub run_heads: BTreeMap<String, u64>,
    /// Every run, with its status and place in its tree.
    pub runs: BTreeMap<String, Run>,
    /// Every tool call.
    pub tools: BTreeMap<String, ToolCall>,
    /// Every workflow.
    pub workflows: BTreeMap<String, Workflow>,
    /// The session slot (§3.1).
    pub slot: Option<Slot>,
    /// Open interrupts by `interruptId`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interrupts: BTreeMap<String, InterruptInfo>,
    /// Usage totals (empty in a state read from the checker alone).
    #[serde(default, skip_serializing_if = "UsageTotals::is_empty")]
    pub usage: UsageTotals,
    /// Per reasoning stream, how many transcript messages began before it
    /// (folded from the journal): places reasoning whose message never
    /// appeared ([`SessionState::transcript_view`]).
    #[serde(skip)]
    pub(crate) reasoning_after: BTreeMap<String, usize>,
}

/// One message of a transcript view, with its reasoning joined (§9.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptMessage {
    /// `messageId`.
    pub message_id: String,
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// The text shown: the display replacement after a redaction.
    pub text: String,
    /// Whether streaming finished.
    pub completed: bool,
    /// The run it belongs to, for a run-scoped message.
    pub run_id: Option<String>,
    /// Reasoning joined to it: streams naming it by `messageId`, or with
    /// `reasoningId` `reasoning:{messageId}`.
    pub reasoning: Vec<String>,
}

impl SessionState {
    /// The typed state of `session_id` in `checker` (`None`: no such
    /// session), without the details only the journal holds (see
    /// [`SessionState::with_journal`]).
    pub fn from_checker(checker: &Checker, session_id: &str) -> Option<Self> {
        let json = checker.state_json(session_id)?;
        let mut state: Self = serde_json::from_str(&json).ok()?;
        let runs = state.runs.iter().filter_map(|(id, r)| {
            let i = r.open_interrupt.as_ref()?;
            Some((i, InterruptScope::Run(id.clone())))
        });
        let wfs = state.workflows.iter().filter_map(|(id, w)| {
            let i = w.open_interrupt.as_ref()?;
            Some((i, InterruptScope::Workflow(id.clone())))
        });
        let open: BTreeMap<String, InterruptInfo> = runs
            .chain(wfs)
            .map(|(i, scope)| {
                let info = InterruptInfo {
                    scope,
                    wait_id: i.wait_id.clone(),
                    actions: i.actions.clone(),
                    kind: None,
                    title: None,
                    message: None,
                    expires_at: None,
                };
                (i.id.clone(), info)
            })
            .collect();
        state.interrupts = open;
        Some(state)
    }

    /// Completes a state read from the checker with what only the journal
    /// holds, folding `events` (the stored events of `session_id` through
    /// [`SessionState::head`], in order; events of other sessions are
    /// skipped): tool names, args summaries and results, the kind, title,
    /// message and expiry of open interrupts, and usage totals.
    ///
    /// ```
    /// use narad_core::checker::Checker;
    /// use narad_engine::SessionState;
    /// let journal = [
    ///     r#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#,
    ///     r#"{"type":"tool.call.started","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2,"toolCallId":"t1","toolName":"search","executor":"backend","args":{"q":"rust"}}"#,
    /// ];
    /// let mut c = Checker::default();
    /// for line in journal {
    ///     c.push_bytes(line.as_bytes()).unwrap();
    /// }
    /// let state = SessionState::from_checker(&c, "s").unwrap()
    ///     .with_journal("s", journal.iter().map(|l| l.as_bytes()));
    /// let call = &state.tools["t1"];
    /// assert_eq!(call.name.as_deref(), Some("search"));
    /// assert_eq!(call.args_summary.as_deref(), Some(r#"{"q":"rust"}"#));
    /// ```
    pub fn with_journal<'a>(
        mut self,
        session_id: &str,
        events: impl IntoIterator<Item = &'a [u8]>,
    ) -> Self {
        let mut d = Details::default();
        for bytes in events {
            d.push(session_id, bytes);
        }
        d.fill(&mut self);
        self
    }

    /// The runs of one tree (`root`), parents before children.
    pub fn tree<'a>(&'a self, root: &'a str) -> Vec<(&'a str, &'a Run)> {
        let mut out: Vec<(&str, &Run)> = Vec::new();
        let mut frontier = vec![root];
        while let Some(id) = frontier.pop() {
            if let Some(r) = self.runs.get(id) {
                if r.root == root {
                    out.push((id, r));
                }
            }
            for (child, r) in &self.runs {
                if r.parent.as_deref() == Some(id) {
                    frontier.push(child);
                }
            }
        }
        out
    }

    /// Open interrupts: `(interruptId, its details)`, in id order.
    pub fn open_interrupts(&self) -> Vec<(&str, &InterruptInfo)> {
        self.interrupts
            .iter()
            .map(|(id, i)| (id.as_str(), i))
            .collect()
    }
}
