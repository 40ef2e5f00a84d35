use super::Wire;
use serde::{Deserialize, Serialize};

/// A watch event (§8): "this scope changed; catch up". Never authority.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchEvent {
    /// Envelope fields shared by every watch event.
    pub envelope: WatchEnvelope,
    /// The typed body.
    pub payload: WatchPayload,
    /// The record as received.
    pub wire: Wire,
}

/// Envelope fields of a watch event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchEnvelope {
    /// Always `narad/v1`.
    pub protocol_version: String,
    /// Stable identity; dedup key with `sessionId` (or `workspaceId`).
    pub event_id: String,
    /// Informational ISO-8601 UTC time.
    pub timestamp: String,
    /// Monotonic within the scope.
    pub revision: u64,
    /// The authority position this notification covers, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

/// A typed authority cursor carried by watch events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Cursor {
    /// Session position.
    Session {
        /// `sessionSequence`
        #[serde(rename = "sessionSequence")]
        session_sequence: u64,
        /// Optional `sessionId`.
        #[serde(rename = "sessionId", default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
    },
    /// Workflow position.
    Workflow {
        /// `workflowId`
        #[serde(rename = "workflowId")]
        workflow_id: String,
        /// `workflowSequence`
        #[serde(rename = "workflowSequence")]
        workflow_sequence: u64,
    },
    /// Run-tree position.
    Run {
        /// `rootRunId`
        #[serde(rename = "rootRunId")]
        root_run_id: String,
        /// run-tree `sequence`
        sequence: u64,
    },
}

/// Typed watch bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum WatchPayload {
    /// `session.revision`
    #[serde(rename = "session.revision")]
    SessionRevision {
        /// Session scope.
        session_id: String,
    },
    /// `run.revision`
    #[serde(rename = "run.revision")]
    RunRevision {
        /// Session.
        session_id: String,
        /// Run journal.
        root_run_id: String,
        /// Run.
        run_id: String,
    },
    /// `workflow.revision`
    #[serde(rename = "workflow.revision")]
    WorkflowRevision {
        /// Session.
        session_id: String,
        /// Workflow.
        workflow_id: String,
        /// Optional node.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node_id: Option<String>,
    },
    /// `node.revision`
    #[serde(rename = "node.revision")]
    NodeRevision {
        /// Session.
        session_id: String,
        /// Workflow.
        workflow_id: String,
        /// Node.
        node_id: String,
    },
    /// `workspace.revision`
    #[serde(rename = "workspace.revision")]
    WorkspaceRevision {
        /// Workspace.
        workspace_id: String,
        /// Optional session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
    },
    /// `session.created`
    #[serde(rename = "session.created")]
    SessionCreated {
        /// Workspace.
        workspace_id: String,
        /// The affected session.
        session_id: String,
    },
    /// `session.updated`
    #[serde(rename = "session.updated")]
    SessionUpdated {
        /// Workspace.
        workspace_id: String,
        /// The affected session.
        session_id: String,
    },
    /// `session.archived`
    #[serde(rename = "session.archived")]
    SessionArchived {
        /// Workspace.
        workspace_id: String,
        /// The affected session.
        session_id: String,
    },
}
