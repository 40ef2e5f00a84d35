//! The public command types: what a caller passes to a command and what
//! a command answers.

use serde_json::Value;

use narad_core::ProfileSet;

/// A new session.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Its id; a fresh unguessable one when `None`.
    pub session_id: Option<String>,
    /// Its active profiles, fixed for its life (default: all).
    pub profiles: Option<ProfileSet>,
    /// The workspace whose watch stream announces it (`session.created`).
    pub workspace_id: Option<String>,
}

/// A run to start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartRun {
    /// Its id; fresh when `None`.
    pub run_id: Option<String>,
    /// The parent, for a nested run (its tree and workflow are inherited).
    pub parent_run_id: Option<String>,
    /// The workflow of a top-level workflow run.
    pub workflow_id: Option<String>,
    /// The client executor bound to the run (§3.3), recorded explicitly.
    pub client_executor_id: Option<String>,
    /// When the session slot is busy: wait for it instead of refusing.
    pub queue_if_busy: bool,
}

/// What `start_run` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// `run.started` is durable.
    Running(String),
    /// The slot is busy; the run starts when it frees. The queued start is
    /// a durable side record: it survives restarts and cache resets, and
    /// the batch that frees the slot, in any engine, starts it once.
    Queued(String),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    /// `run.finished`, with optional usage and artifacts.
    Finished {
        /// Token usage object.
        usage: Option<Value>,
        /// Produced artifacts.
        artifact_ids: Vec<String>,
    },
    /// `run.error`; the message must be user-safe (it is journaled).
    Error {
        /// Error code.
        code: String,
        /// User-safe message.
        message: String,
        /// Token usage so far.
        usage: Option<Value>,
    },
    /// `run.cancelled`.
    Cancelled {
        /// Optional code.
        code: Option<String>,
        /// Optional user-safe message.
        message: Option<String>,
        /// Token usage so far.
        usage: Option<Value>,
    },
}

/// A tool call's outcome (§7.9).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// `success`, `error` or `cancelled`.
    pub outcome: &'static str,
    /// Any JSON value.
    pub response: Value,
    /// Optional code.
    pub code: Option<String>,
    /// Optional user-safe message.
    pub message: Option<String>,
}

impl ToolOutcome {
    /// A successful result.
    pub fn success(response: Value) -> Self {
        Self {
            outcome: "success",
            response,
            code: None,
            message: None,
        }
    }
}

/// Where an interrupt waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterruptScope {
    /// On a run (the run pauses).
    Run(String),
    /// On a workflow (the workflow pauses).
    Workflow(String),
}

/// An interrupt to request.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupt {
    /// Run or workflow.
    pub scope: InterruptScope,
    /// Kind, e.g. `approval`.
    pub kind: String,
    /// Offered actions.
    pub actions: Vec<String>,
    /// Optional `input` object (HITL `members` live here).
    pub input: Option<Value>,
    /// When the engine resolves it as `expired` ([`Engine::expire_due`](crate::Engine::expire_due)).
    pub expires_at: Option<std::time::SystemTime>,
}

/// A resolution of an open interrupt, by `interruptId` alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolve {
    /// The interrupt.
    pub interrupt_id: String,
    /// One of its actions (or `expired`).
    pub decision: String,
    /// Optional reason.
    pub reason: Option<String>,
    /// The owning journal's position the caller saw: run-tree `sequence` for
    /// a run interrupt, `workflowSequence` for a workflow one.
    pub expected_revision: Option<u64>,
    /// HITL members' decisions.
    pub members: Option<Value>,
}

/// What to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopTarget {
    /// The session's active top-level run (`stop-active-root`).
    ActiveRoot,
    /// One run and everything under it.
    Run(String),
}

/// Where an [`Engine::append`](crate::Engine::append)ed event goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventScope {
    /// Session scope.
    Session,
    /// A started run (its tree and workflow are filled in).
    Run(String),
    /// A workflow.
    Workflow(String),
}
