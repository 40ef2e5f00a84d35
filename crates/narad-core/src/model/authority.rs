use super::{PatchOp, Scope, Wire};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An authority event: an immutable journal fact (§2, §7, §9).
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorityEvent {
    /// Identity and ordering fields.
    pub envelope: AuthorityEnvelope,
    /// The typed body.
    pub payload: AuthorityPayload,
    /// The record exactly as appended.
    pub wire: Wire,
}

/// Identity and ordering fields of an authority event (§4, §5.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorityEnvelope {
    /// Always `narad/v1`.
    pub protocol_version: String,
    /// Stable identity; dedup key with `sessionId`.
    pub event_id: String,
    /// Informational ISO-8601 UTC time; never used to order.
    pub timestamp: String,
    /// Session.
    pub session_id: String,
    /// Contiguous from 1 across the session.
    pub session_sequence: u64,
    /// Owning workflow, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Contiguous within the workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_sequence: Option<u64>,
    /// Run journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_run_id: Option<String>,
    /// Run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Contiguous within the run journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// A nested run's parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// The tool call that spawned a nested run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// Workflow node, for node-scoped events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
}

/// How a paused run or workflow resumes (§6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeMode {
    /// The backend resumes when its condition is met.
    Automatic,
    /// An accepted external request is required.
    Command,
}

/// Where a tool call executes (§3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Executor {
    /// The backend.
    Backend,
    /// The run's bound `clientExecutorId`.
    Client,
}

/// A tool call's outcome (§7.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Succeeded.
    Success,
    /// Failed.
    Error,
    /// Cancelled.
    Cancelled,
}

/// Interrupt scope (§7.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InterruptScope {
    /// Run-tree authority (default).
    Run,
    /// Workflow authority; no run-tree fields.
    Workflow,
}

/// Streamed message author.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Assistant.
    Assistant,
    /// System.
    System,
}

/// Progress item status (§9.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressStatus {
    /// In progress.
    Active,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// Progress privacy class (§9.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Privacy {
    /// Anyone authorized for the session.
    Public,
    /// Operators.
    Internal,
    /// Restricted.
    Sensitive,
}

/// `view.updated` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ViewOperation {
    /// Replace the model.
    Replace,
    /// Apply a patch.
    Patch,
}

/// Token counters of a run terminal; other additive fields (such as
/// `elapsedMs`) are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Total tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Implementation-defined additive fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One HITL member decision of `interrupt.resolved` (§7.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberDecision {
    /// Member request.
    pub request_id: String,
    /// Tool call, if the member is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_type: Option<String>,
    /// One of the request's actions, or `expired`.
    pub decision: String,
}

/// Lifecycle fields shared by workflow start and terminals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowLifecycle {
    /// Default executor for the workflow's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_client_executor_id: Option<String>,
    /// Machine code (terminals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Sanitized message (terminals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Fields of `attachment.*` events; references and metadata stay in the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentFields {
    /// Attachment identity.
    pub attachment_id: String,
    /// Failure code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Sanitized message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Fields of `artifact.*` events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactFields {
    /// Artifact identity.
    pub artifact_id: String,
    /// Failure code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Sanitized message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A JSON document snapshot (`state.snapshot`, `ui.state.snapshot`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentSnapshot {
    /// Document scope.
    pub scope: Scope,
    /// Document revision.
    pub revision: u64,
    /// The document.
    pub state: Value,
}

/// A JSON document delta (`state.delta`, `ui.state.delta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentDelta {
    /// Document scope.
    pub scope: Scope,
    /// Revision the patch applies to.
    pub base_revision: u64,
    /// Always `baseRevision + 1`.
    pub revision: u64,
    /// RFC 6902 patch.
    pub patch: Vec<PatchOp>,
}

/// Fields of `view.*` events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewFields {
    /// View identity.
    pub view_id: String,
    /// Required on `view.updated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<ViewOperation>,
    /// Model for `replace` (may be JSON null).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::present"
    )]
    pub model: Option<Value>,
    /// Patch for `patch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Vec<PatchOp>>,
}

/// `*.custom` extension body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomFields {
    /// Namespaced name; unknown names are ignored by reducers.
    pub name: String,
    /// Any JSON value.
    pub value: Value,
}

/// `*.raw` extension body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawFields {
    /// Media type of `payload`.
    pub content_type: String,
    /// Opaque encoded payload; untrusted, never executed.
    pub payload: String,
}

/// Reasoning events (`reasoning.*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningFields {
    /// Reasoning identity, e.g. `reasoning:{assistantMessageId}`.
    pub reasoning_id: String,
    /// Correlated message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Text fragment (`reasoning.delta` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
}

/// Typed authority bodies, one variant per core and profile authority type.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum AuthorityPayload {
    /// `run.started` (§7.1)
    #[serde(rename = "run.started")]
    RunStarted {
        /// Immutable client executor binding; absent means none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_executor_id: Option<String>,
    },
    /// `run.paused` (§7.2)
    #[serde(rename = "run.paused")]
    RunPaused {
        /// Pause cycle.
        wait_id: String,
        /// Open namespaced reason.
        reason: String,
        /// Resume mode.
        resume_mode: ResumeMode,
        /// Interrupt that caused the pause.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interrupt_id: Option<String>,
        /// Scheduled retry.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_at: Option<String>,
        /// User-safe message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// `run.resumed` (§7.3)
    #[serde(rename = "run.resumed")]
    RunResumed {
        /// The active pause cycle.
        wait_id: String,
    },
    /// `run.stop.requested` (§7.4)
    #[serde(rename = "run.stop.requested")]
    RunStopRequested {
        /// The run being stopped.
        target_run_id: String,
    },
    /// `run.finished` (§7.5)
    #[serde(rename = "run.finished")]
    RunFinished {
        /// Produced artifacts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        artifact_ids: Option<Vec<String>>,
        /// Usage.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// `run.error` (§7.5)
    #[serde(rename = "run.error")]
    RunError {
        /// Opaque machine code.
        code: String,
        /// Sanitized message.
        message: String,
        /// Partial usage.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// `run.cancelled` (§7.5)
    #[serde(rename = "run.cancelled")]
    RunCancelled {
        /// Machine code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// Sanitized message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Partial usage.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// `interrupt.requested` (§7.6)
    #[serde(rename = "interrupt.requested")]
    InterruptRequested {
        /// Interrupt identity.
        interrupt_id: String,
        /// Pause cycle it opens.
        wait_id: String,
        /// Open namespaced kind.
        kind: String,
        /// Allowed decisions (non-empty, unique).
        actions: Vec<String>,
        /// `run` (default) or `workflow`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<InterruptScope>,
        /// Backend expiry time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<String>,
        /// Title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Kind-specific structured input (may be JSON null).
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "super::present"
        )]
        input: Option<Value>,
    },
    /// `interrupt.resolved` (§7.7)
    #[serde(rename = "interrupt.resolved")]
    InterruptResolved {
        /// The interrupt.
        interrupt_id: String,
        /// Its pause cycle.
        wait_id: String,
        /// One of the actions, or `expired`.
        decision: String,
        /// Reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// `workflow` for a workflow-scope interrupt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<InterruptScope>,
        /// HITL member decisions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        members: Option<Vec<MemberDecision>>,
    },
    /// `tool.call.started` (§7.8)
    #[serde(rename = "tool.call.started")]
    ToolCallStarted {
        /// Tool call identity.
        tool_call_id: String,
        /// Tool name.
        tool_name: String,
        /// Immutable executor.
        executor: Executor,
        /// Complete arguments.
        args: Value,
    },
    /// `tool.call.finished` (§7.9)
    #[serde(rename = "tool.call.finished")]
    ToolCallFinished {
        /// Tool call identity.
        tool_call_id: String,
        /// Outcome.
        outcome: Outcome,
        /// Any JSON value, including null.
        response: Value,
        /// Machine code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// User-safe message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// `workflow.started` (§6.5)
    #[serde(rename = "workflow.started")]
    WorkflowStarted(WorkflowLifecycle),
    /// `workflow.paused`
    #[serde(rename = "workflow.paused")]
    WorkflowPaused {
        /// Pause cycle.
        wait_id: String,
        /// The workflow-scope interrupt.
        interrupt_id: String,
        /// Reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Resume mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_mode: Option<ResumeMode>,
        /// Message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// `workflow.resumed`
    #[serde(rename = "workflow.resumed")]
    WorkflowResumed {
        /// The active pause cycle.
        wait_id: String,
    },
    /// `workflow.step.started` (target node in the envelope's `nodeId`)
    #[serde(rename = "workflow.step.started")]
    WorkflowStepStarted {},
    /// `workflow.edge.taken` (§6.6)
    #[serde(rename = "workflow.edge.taken")]
    WorkflowEdgeTaken {
        /// Source node.
        from: String,
        /// Selected target node.
        to: String,
        /// Index of the matching condition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        case_index: Option<u64>,
        /// Field the condition read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pointer: Option<String>,
        /// Comparison, or `default`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op: Option<String>,
    },
    /// `workflow.finished`
    #[serde(rename = "workflow.finished")]
    WorkflowFinished(WorkflowLifecycle),
    /// `workflow.error`
    #[serde(rename = "workflow.error")]
    WorkflowError(WorkflowLifecycle),
    /// `workflow.cancelled`
    #[serde(rename = "workflow.cancelled")]
    WorkflowCancelled(WorkflowLifecycle),
    /// `message.user.recorded` (§9.2)
    #[serde(rename = "message.user.recorded")]
    MessageUserRecorded {
        /// Message identity.
        message_id: String,
        /// Scope.
        message_scope: Scope,
        /// Text.
        content: String,
        /// Admitted attachments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attachment_ids: Option<Vec<String>>,
    },
    /// `message.text.started`
    #[serde(rename = "message.text.started")]
    MessageTextStarted {
        /// Message identity.
        message_id: String,
        /// Author.
        role: Role,
        /// Scope.
        message_scope: Scope,
    },
    /// `message.text.delta`
    #[serde(rename = "message.text.delta")]
    MessageTextDelta {
        /// Message identity.
        message_id: String,
        /// Appended text.
        delta: String,
    },
    /// `message.text.completed`
    #[serde(rename = "message.text.completed")]
    MessageTextCompleted {
        /// Message identity.
        message_id: String,
    },
    /// `message.redacted` (§9.4)
    #[serde(rename = "message.redacted")]
    MessageRedacted {
        /// Message identity.
        message_id: String,
        /// Reason.
        reason: String,
        /// Display replacement (null hides the message).
        display_replacement: Option<String>,
    },
    /// `reasoning.started`
    #[serde(rename = "reasoning.started")]
    ReasoningStarted(ReasoningFields),
    /// `reasoning.delta`
    #[serde(rename = "reasoning.delta")]
    ReasoningDelta(ReasoningFields),
    /// `reasoning.completed`
    #[serde(rename = "reasoning.completed")]
    ReasoningCompleted(ReasoningFields),
    /// `attachment.added`
    #[serde(rename = "attachment.added")]
    AttachmentAdded(AttachmentFields),
    /// `attachment.ready`
    #[serde(rename = "attachment.ready")]
    AttachmentReady(AttachmentFields),
    /// `attachment.failed`
    #[serde(rename = "attachment.failed")]
    AttachmentFailed(AttachmentFields),
    /// `attachment.removed`
    #[serde(rename = "attachment.removed")]
    AttachmentRemoved(AttachmentFields),
    /// `artifact.added`
    #[serde(rename = "artifact.added")]
    ArtifactAdded(ArtifactFields),
    /// `artifact.ready`
    #[serde(rename = "artifact.ready")]
    ArtifactReady(ArtifactFields),
    /// `artifact.failed`
    #[serde(rename = "artifact.failed")]
    ArtifactFailed(ArtifactFields),
    /// `state.snapshot` (§9.6)
    #[serde(rename = "state.snapshot")]
    StateSnapshot(DocumentSnapshot),
    /// `state.delta`
    #[serde(rename = "state.delta")]
    StateDelta(DocumentDelta),
    /// `state.compacted`
    #[serde(rename = "state.compacted")]
    StateCompacted {
        /// Document scope.
        scope: Scope,
        /// Session position the compaction covers.
        covers_through_session_sequence: u64,
        /// Snapshot revision that replaces the compacted history.
        snapshot_revision: u64,
    },
    /// `ui.state.snapshot`
    #[serde(rename = "ui.state.snapshot")]
    UiStateSnapshot(DocumentSnapshot),
    /// `ui.state.delta`
    #[serde(rename = "ui.state.delta")]
    UiStateDelta(DocumentDelta),
    /// `view.opened`
    #[serde(rename = "view.opened")]
    ViewOpened(ViewFields),
    /// `view.updated`
    #[serde(rename = "view.updated")]
    ViewUpdated(ViewFields),
    /// `view.closed`
    #[serde(rename = "view.closed")]
    ViewClosed(ViewFields),
    /// `progress.recorded` (§9.8)
    #[serde(rename = "progress.recorded")]
    ProgressRecorded {
        /// Activity identity.
        progress_id: String,
        /// Open namespaced category.
        category: String,
        /// User-visible summary.
        label: String,
        /// Detail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// Status.
        status: ProgressStatus,
        /// Privacy.
        privacy: Privacy,
    },
    /// `session.custom` (§9.9)
    #[serde(rename = "session.custom")]
    SessionCustom(CustomFields),
    /// `session.raw`
    #[serde(rename = "session.raw")]
    SessionRaw(RawFields),
    /// `workflow.custom`
    #[serde(rename = "workflow.custom")]
    WorkflowCustom(CustomFields),
    /// `workflow.raw`
    #[serde(rename = "workflow.raw")]
    WorkflowRaw(RawFields),
    /// `run.custom`
    #[serde(rename = "run.custom")]
    RunCustom(CustomFields),
    /// `run.raw`
    #[serde(rename = "run.raw")]
    RunRaw(RawFields),
    /// `node.custom`
    #[serde(rename = "node.custom")]
    NodeCustom(CustomFields),
    /// `node.raw`
    #[serde(rename = "node.raw")]
    NodeRaw(RawFields),
    /// `trace.span.started` (body is profile-defined; kept in the wire)
    #[serde(rename = "trace.span.started")]
    TraceSpanStarted {},
    /// `trace.span.completed`
    #[serde(rename = "trace.span.completed")]
    TraceSpanCompleted {},
    /// `trace.event`
    #[serde(rename = "trace.event")]
    TraceEvent {},
    /// `debug.log`
    #[serde(rename = "debug.log")]
    DebugLog {},
    /// `debug.snapshot`
    #[serde(rename = "debug.snapshot")]
    DebugSnapshot {},
}
