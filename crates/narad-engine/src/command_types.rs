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
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
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

impl StartRun {
    /// A top-level run (the default).
    pub fn new() -> Self {
        Self::default()
    }
    /// A nested run under `parent`.
    pub fn child_of(parent: impl Into<String>) -> Self {
        Self {
            parent_run_id: Some(parent.into()),
            ..Self::default()
        }
    }
    /// Sets the run id (a retried start with the same id is recognized).
    pub fn id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }
    /// A top-level run of `workflow_id`.
    pub fn in_workflow(mut self, workflow_id: impl Into<String>) -> Self {
        self.workflow_id = Some(workflow_id.into());
        self
    }
    /// Binds a client executor (§3.3).
    pub fn client_executor(mut self, id: impl Into<String>) -> Self {
        self.client_executor_id = Some(id.into());
        self
    }
    /// Waits for a busy session slot instead of refusing.
    pub fn queue_if_busy(mut self) -> Self {
        self.queue_if_busy = true;
        self
    }
}

/// What `start_run` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Started {
    /// `run.started` is durable.
    Running(String),
    /// The slot is busy; the run starts when it frees. The queued start is
    /// a durable side record: it survives restarts and cache resets, and
    /// the batch that frees the slot, in any engine, starts it once.
    Queued(String),
}

impl Started {
    /// The run's id, running or queued.
    pub fn run_id(&self) -> &str {
        match self {
            Self::Running(r) | Self::Queued(r) => r,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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

    /// A failed call: a machine `code` and a user-safe `message`
    /// (journaled); the response is `null`.
    ///
    /// ```
    /// let o = narad_engine::ToolOutcome::error("not_found", "No such file.");
    /// assert_eq!((o.outcome, o.code.as_deref()), ("error", Some("not_found")));
    /// ```
    pub fn error(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            outcome: "error",
            response: Value::Null,
            code: Some(code.into()),
            message: Some(message.into()),
        }
    }

    /// A cancelled call; the response is `null`.
    pub fn cancelled() -> Self {
        Self {
            outcome: "cancelled",
            response: Value::Null,
            code: None,
            message: None,
        }
    }

    /// The same outcome with `response` (e.g. partial output of an error).
    pub fn with_response(mut self, response: Value) -> Self {
        self.response = response;
        self
    }
}

impl Terminal {
    /// `run.finished` without usage or artifacts.
    pub fn finished() -> Self {
        Self::Finished {
            usage: None,
            artifact_ids: Vec::new(),
        }
    }

    /// `run.finished` with typed usage.
    ///
    /// ```
    /// use narad_engine::{Terminal, Usage};
    /// let t = Terminal::finished_with(Usage::tokens(10, 5));
    /// assert!(matches!(t, Terminal::Finished { usage: Some(_), .. }));
    /// ```
    pub fn finished_with(usage: crate::Usage) -> Self {
        Self::Finished {
            usage: Some(usage.to_value()),
            artifact_ids: Vec::new(),
        }
    }

    /// `run.error` with a machine code and a user-safe message.
    pub fn error(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Error {
            code: code.into(),
            message: message.into(),
            usage: None,
        }
    }

    /// `run.cancelled` without code or message.
    pub fn cancelled() -> Self {
        Self::Cancelled {
            code: None,
            message: None,
            usage: None,
        }
    }

    /// The `usage` this terminal carries.
    pub(crate) fn usage(&self) -> Option<&Value> {
        match self {
            Self::Finished { usage, .. }
            | Self::Error { usage, .. }
            | Self::Cancelled { usage, .. } => usage.as_ref(),
        }
    }
}

/// Where an interrupt waits (serialized `{"run": ID}` or `{"workflow": ID}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InterruptScope {
    /// On a run (the run pauses).
    Run(String),
    /// On a workflow (the workflow pauses).
    Workflow(String),
}

impl InterruptScope {
    /// On a run; takes `&str`, `&String` or `String`.
    pub fn run(run_id: impl Into<String>) -> Self {
        Self::Run(run_id.into())
    }

    /// On a workflow.
    pub fn workflow(workflow_id: impl Into<String>) -> Self {
        Self::Workflow(workflow_id.into())
    }
}

/// An interrupt to request.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Interrupt {
    /// Run or workflow.
    pub scope: InterruptScope,
    /// Kind, e.g. `approval`.
    pub kind: String,
    /// Offered actions.
    pub actions: Vec<String>,
    /// Optional `input` object (HITL `members` live here).
    pub input: Option<Value>,
    /// Optional user-facing title.
    pub title: Option<String>,
    /// When the engine resolves it as `expired` ([`Engine::expire_due`](crate::Engine::expire_due)):
    /// at a time, or a duration after the engine's clock when the command
    /// runs. A `SystemTime` converts: `expires_at: Some(at.into())`.
    pub expires_at: Option<Expiry>,
}

/// When an interrupt expires.
///
/// A duration is read against the engine's injected [`Clock`](crate::Clock)
/// when the command runs, not when the request is built, so a request
/// retried under an idempotency key is the same request.
///
/// ```
/// use narad_engine::{Clock, Expiry, ManualClock};
/// let clock = ManualClock::at_unix(1_780_000_000);
/// let ten = std::time::Duration::from_secs(10);
/// assert_eq!(Expiry::In(ten).at(clock.now()), clock.now() + ten);
/// let fixed = Expiry::from(clock.now());
/// assert_eq!(fixed.at(clock.now() + ten), clock.now());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expiry {
    /// At this time.
    At(std::time::SystemTime),
    /// This long after the engine's clock reads when the command runs.
    In(std::time::Duration),
}

impl Expiry {
    /// The time it names, given what the engine's clock reads now: for
    /// `In(d)`, `now + d`, or the latest time a timestamp names
    /// (9999-12-31T23:59:59.999Z) when that comes first.
    pub fn at(self, now: std::time::SystemTime) -> std::time::SystemTime {
        match self {
            Self::At(t) => t,
            Self::In(d) => crate::host::after(now, d),
        }
    }
}

impl From<std::time::SystemTime> for Expiry {
    fn from(t: std::time::SystemTime) -> Self {
        Self::At(t)
    }
}

impl Interrupt {
    /// An interrupt of `kind` on a run, offering `actions`.
    ///
    /// ```
    /// use narad_engine::Interrupt;
    /// let ask = Interrupt::on_run("run-1", "approval", ["approve", "deny"])
    ///     .title("Send the email?")
    ///     .expires_in(std::time::Duration::from_secs(600));
    /// assert_eq!(ask.actions, ["approve", "deny"]);
    /// ```
    pub fn on_run<A: Into<String>>(
        run_id: impl Into<String>,
        kind: impl Into<String>,
        actions: impl IntoIterator<Item = A>,
    ) -> Self {
        Self {
            scope: InterruptScope::Run(run_id.into()),
            kind: kind.into(),
            actions: actions.into_iter().map(Into::into).collect(),
            input: None,
            title: None,
            expires_at: None,
        }
    }

    /// An interrupt of `kind` on a workflow, offering `actions`.
    pub fn on_workflow<A: Into<String>>(
        workflow_id: impl Into<String>,
        kind: impl Into<String>,
        actions: impl IntoIterator<Item = A>,
    ) -> Self {
        Self {
            scope: InterruptScope::Workflow(workflow_id.into()),
            ..Self::on_run(String::new(), kind, actions)
        }
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the `input` object.
    pub fn input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    /// Sets `expiresAt`.
    pub fn expires_at(mut self, at: std::time::SystemTime) -> Self {
        self.expires_at = Some(Expiry::At(at));
        self
    }

    /// Sets `expiresAt` to `d` after the engine's clock when the command
    /// runs (see [`Expiry::In`]).
    pub fn expires_in(mut self, d: std::time::Duration) -> Self {
        self.expires_at = Some(Expiry::In(d));
        self
    }
}

/// A resolution of an open interrupt, by `interruptId` alone.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
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

impl Resolve {
    /// Resolves `interrupt_id` with `decision`.
    ///
    /// ```
    /// let r = narad_engine::Resolve::new("interrupt-1", "approve").reason("looks fine");
    /// assert_eq!(r.expected_revision, None);
    /// ```
    pub fn new(interrupt_id: impl Into<String>, decision: impl Into<String>) -> Self {
        Self {
            interrupt_id: interrupt_id.into(),
            decision: decision.into(),
            ..Self::default()
        }
    }

    /// Sets the reason.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Sets the expected revision of the owning journal.
    pub fn expected_revision(mut self, revision: u64) -> Self {
        self.expected_revision = Some(revision);
        self
    }
}

/// What [`Engine::resolve_interrupt`](crate::Engine::resolve_interrupt)
/// did: `interrupt.resolved` and the resume of its run or workflow are
/// durable, in one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The owning session.
    pub session_id: String,
    /// The interrupt.
    pub interrupt_id: String,
    /// The decision recorded.
    pub decision: String,
    /// Where it waited (the run or workflow that resumed).
    pub scope: InterruptScope,
}

/// What to stop.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum StopTarget {
    /// The session's active top-level run (`stop-active-root`).
    ActiveRoot,
    /// One run and everything under it.
    Run(String),
}

impl StopTarget {
    /// One run and everything under it; takes `&str`, `&String` or
    /// `String`.
    ///
    /// ```
    /// let run = String::from("run-1");
    /// assert_eq!(narad_engine::StopTarget::run(&run), narad_engine::StopTarget::Run(run));
    /// ```
    pub fn run(run_id: impl Into<String>) -> Self {
        Self::Run(run_id.into())
    }
}

/// Where an [`Engine::append`](crate::Engine::append)ed event goes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum EventScope {
    /// Session scope.
    Session,
    /// A started run (its tree and workflow are filled in).
    Run(String),
    /// A workflow.
    Workflow(String),
}

impl EventScope {
    /// A run's scope; takes `&str`, `&String` or `String`, so a caller
    /// keeps its id.
    ///
    /// ```
    /// use narad_engine::EventScope;
    /// let run = String::from("run-1");
    /// let at = EventScope::run(&run);
    /// assert_eq!(at, EventScope::Run(run));
    /// ```
    pub fn run(run_id: impl Into<String>) -> Self {
        Self::Run(run_id.into())
    }

    /// A workflow's scope.
    pub fn workflow(workflow_id: impl Into<String>) -> Self {
        Self::Workflow(workflow_id.into())
    }
}

/// Commands take `impl Into<EventScope>`: a scope kept for several calls
/// is passed as `&at`, without a `clone()`.
impl From<&EventScope> for EventScope {
    fn from(scope: &EventScope) -> Self {
        scope.clone()
    }
}
