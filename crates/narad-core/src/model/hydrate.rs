use super::{PatchOp, Wire};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A hydrate record: a derived projection anchored to an authority cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct HydrateRecord {
    /// Always `narad/v1`.
    pub protocol_version: String,
    /// Informational time.
    pub timestamp: String,
    /// The typed body.
    pub payload: HydratePayload,
    /// The record as received.
    pub wire: Wire,
}

/// Graph scope of a graph hydrate record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphScope {
    /// A run tree.
    Run,
    /// Reserved for orchestration.
    Workflow,
}

/// A graph record's anchor in a run journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceRunCursor {
    /// Positive committed run-tree sequence.
    pub sequence: u64,
    /// Optional root run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_run_id: Option<String>,
}

/// A graph record's anchor in a workflow journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceWorkflowCursor {
    /// Positive committed workflow sequence.
    pub sequence: u64,
    /// Optional workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
}

/// Fields shared by `graph.snapshot` and `graph.delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphAnchor {
    /// Session.
    pub session_id: String,
    /// Run or workflow.
    pub scope: GraphScope,
    /// e.g. `narad.graph/v1`.
    pub graph_schema_version: String,
    /// Graph revision, contiguous per scope key.
    pub revision: u64,
    /// Root journal for `scope=run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_run_id: Option<String>,
    /// Workflow for `scope=workflow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Anchor for `scope=run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_run_cursor: Option<SourceRunCursor>,
    /// Anchor for `scope=workflow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_workflow_cursor: Option<SourceWorkflowCursor>,
}

/// Typed hydrate bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum HydratePayload {
    /// `messages.snapshot` (§9.3).
    #[serde(rename = "messages.snapshot")]
    MessagesSnapshot {
        /// Snapshot identity.
        snapshot_id: String,
        /// Session.
        session_id: String,
        /// Authority covered; the client applies only greater sequences.
        covers_through_session_sequence: u64,
        /// The transcript messages.
        messages: Vec<Value>,
    },
    /// `graph.snapshot` (§9.7).
    #[serde(rename = "graph.snapshot")]
    GraphSnapshot {
        /// Scope and anchor.
        #[serde(flatten)]
        anchor: GraphAnchor,
        /// Root node.
        root_node_id: String,
        /// Nodes.
        nodes: Vec<Value>,
        /// Edges.
        edges: Vec<Value>,
    },
    /// `graph.delta` (§9.7).
    #[serde(rename = "graph.delta")]
    GraphDelta {
        /// Scope and anchor.
        #[serde(flatten)]
        anchor: GraphAnchor,
        /// Revision this delta applies to.
        base_revision: u64,
        /// RFC 6902 patch.
        patch: Vec<PatchOp>,
    },
}
