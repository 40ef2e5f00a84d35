//! The reduced state of a session as Rust types, read from the checker.

use std::collections::BTreeMap;

use narad_core::checker::{Checker, Documents, Message, Reasoning, Run, Slot, Workflow};
use serde::{Deserialize, Serialize};

/// Whether a tool call is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallState {
    /// Started, not finished.
    Open,
    /// Finished (exactly once, §7.9).
    Finished,
}

/// A tool call as the checker holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The run it belongs to.
    pub run: String,
    /// Open or finished.
    pub state: ToolCallState,
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
/// `state_json` but the checker's bookkeeping ones.
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
    /// The typed state of `session_id` in `checker` (`None`: no such session).
    pub fn from_checker(checker: &Checker, session_id: &str) -> Option<Self> {
        let json = checker.state_json(session_id)?;
        serde_json::from_str(&json).ok()
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

    /// The default primary transcript (§9.2): session and workflow
    /// messages and those of the last top-level run; a hidden redaction
    /// leaves its message out. `with_reasoning` joins reasoning text
    /// (display-sensitive: leave it out for principals who may not see it).
    pub fn transcript_view(&self, with_reasoning: bool) -> Vec<TranscriptMessage> {
        let top = self.last_top_run.as_deref();
        self.transcript
            .messages
            .iter()
            .filter(|m| match (&m.run_id, &m.root_run_id) {
                (Some(run), Some(root)) => run == root && Some(run.as_str()) == top,
                _ => true,
            })
            .filter_map(|m| {
                let text = match &m.redacted {
                    None => m.content.clone(),
                    Some(Some(shown)) => shown.clone(),
                    Some(None) => return None,
                };
                let joined = format!("reasoning:{}", m.message_id);
                let reasoning = if with_reasoning {
                    self.transcript
                        .reasoning
                        .iter()
                        .filter(|r| {
                            r.message_id.as_deref() == Some(m.message_id.as_str())
                                || r.reasoning_id == joined
                        })
                        .map(|r| r.content.clone())
                        .collect()
                } else {
                    Vec::new()
                };
                Some(TranscriptMessage {
                    message_id: m.message_id.clone(),
                    role: m.role.clone(),
                    text,
                    completed: m.completed,
                    run_id: m.run_id.clone(),
                    reasoning,
                })
            })
            .collect()
    }

    /// Open interrupts: `(interruptId, owning run or workflow, actions)`.
    pub fn open_interrupts(&self) -> Vec<(&str, &str, &[String])> {
        let runs = self.runs.iter().filter_map(|(id, r)| {
            r.open_interrupt
                .as_ref()
                .map(|i| (i.id.as_str(), id.as_str(), i.actions.as_slice()))
        });
        let wfs = self.workflows.iter().filter_map(|(id, w)| {
            w.open_interrupt
                .as_ref()
                .map(|i| (i.id.as_str(), id.as_str(), i.actions.as_slice()))
        });
        runs.chain(wfs).collect()
    }
}
