//! Canonical `narad.graph/v1` derivation (§9.7): the graph of one run tree,
//! built from its authority events alone.
//!
//! The spec requires that the same ordered authority and schema version give
//! byte-equivalent graph state, deterministic node and edge ids, revisions
//! and delta order, and that a rebuild reproduces any emitted snapshot. It
//! does not fix the node format, so this module defines it (documented in
//! `conformance/NOTES.md`, "Graph derivation"):
//!
//! - nodes: `{"id","kind","label","state"}` (plus `"runId"` for tool and
//!   interrupt nodes), with ids `run:{runId}`, `tool:{toolCallId}`,
//!   `interrupt:{interruptId}`;
//! - edges: `{"id","kind","from","to"}` with kind `child` (parent run → nested
//!   run), `tool` (run → tool call) or `interrupt` (run → run-scope
//!   interrupt) and id `{kind}:{from}->{to}`;
//! - nodes and edges appear in the order their creating events appear in the
//!   run journal, so positions never move and a delta only appends or
//!   replaces a `state`;
//! - the revision counts the events that changed the graph: the root's
//!   `run.started` makes revision 1.
//!
//! [`RunGraph::canonical_bytes`] is RFC 8785 canonical JSON (the
//! `canon-json` crate sorts keys itself), so the bytes do not depend on
//! serde_json's map order: they hold when any crate in the build turns on
//! serde_json's `preserve_order`.
//!
//! ```
//! use narad_core::{graph::RunGraph, Parsed, Record, Validator};
//! let lines = [
//!     br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#.as_slice(),
//!     br#"{"type":"tool.call.started","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2,"toolCallId":"t1","toolName":"search","executor":"backend","args":{}}"#,
//! ];
//! let mut graph = RunGraph::new("r");
//! for line in lines {
//!     if let Parsed::Record { record: Record::Authority(ev), .. } = Validator::default().parse(line)? {
//!         graph.apply(&ev)?;
//!     }
//! }
//! assert_eq!(graph.revision(), 2);
//! assert_eq!(graph.nodes().len(), 2);
//! assert_eq!(graph.edges()[0].id, "tool:run:r->tool:t1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::small_map::SmallMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::model::{
    AuthorityEvent, AuthorityPayload, InterruptScope, Outcome, PatchOp, PatchOpKind,
};

/// The graph payload schema this module derives.
pub const GRAPH_SCHEMA_VERSION: &str = "narad.graph/v1";

/// Why an event cannot extend a graph (the journal is not a valid run tree).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// An event of the tree arrived before the root's `run.started`.
    #[error("graph event before the root run started")]
    RootNotStarted,
    /// An event refers to a node the graph does not hold.
    #[error("graph event refers to an unknown {0} node")]
    UnknownNode(&'static str),
    /// A node id would be created twice.
    #[error("graph node created twice")]
    DuplicateNode,
    /// A run-tree `sequence` does not follow the last one applied.
    #[error("run-tree sequence {got} does not follow {last}")]
    OutOfOrder {
        /// Last applied sequence.
        last: u64,
        /// The event's sequence.
        got: u64,
    },
}

impl GraphError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::RootNotStarted => "graph_root_not_started",
            Self::UnknownNode(_) => "graph_unknown_node",
            Self::DuplicateNode => "graph_duplicate_node",
            Self::OutOfOrder { .. } => "graph_out_of_order",
        }
    }
}

/// Node kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A run (root or nested).
    Run,
    /// A tool call.
    Tool,
    /// A run-scope interrupt.
    Interrupt,
}

/// One graph node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Stable id (`run:…`, `tool:…`, `interrupt:…`).
    pub id: String,
    /// What the node stands for.
    pub kind: NodeKind,
    /// Run id, tool name or interrupt kind.
    pub label: String,
    /// Run: `running|paused|finished|error|cancelled`; tool: `running` or its
    /// outcome; interrupt: `open` or its decision.
    pub state: String,
    /// The run a tool call or interrupt belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// Edge kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    /// Parent run → nested run.
    Child,
    /// Run → tool call.
    Tool,
    /// Run → interrupt.
    Interrupt,
}

impl EdgeKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Child => "child",
            Self::Tool => "tool",
            Self::Interrupt => "interrupt",
        }
    }
}

/// One graph edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// Stable id `{kind}:{from}->{to}`.
    pub id: String,
    /// Edge kind.
    pub kind: EdgeKind,
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Change {
    Node(Node),
    Edge(Edge),
    State(usize, String),
}

/// A graph's root, nodes, edges, revision and cursor.
pub(crate) type Parts<'a> = (&'a str, &'a [Node], &'a [Edge], u64, u64);

/// `(sequence, revision, changes)` per graph-changing event.
type History = Vec<(u64, u64, Vec<Change>)>;

/// Nodes up to which a graph is searched by a scan rather than an index,
/// and up to which its vectors grow one slot at a time: most run trees are
/// small, and a finished one is kept for as long as its session.
const LINEAR: usize = 8;

fn push_lean<T>(v: &mut Vec<T>, item: T) {
    if v.len() == v.capacity() && v.len() < LINEAR {
        v.reserve_exact(1);
    }
    v.push(item);
}

/// A checked, not yet applied, graph step.
#[derive(Debug)]
pub(crate) struct Prepared(Option<(u64, Vec<Change>)>);

/// The derived graph of one run tree, with its revision and source cursor.
/// (Serde form: the checker's snapshot only; the wire form is [`RunGraph::body`].)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGraph {
    root_run_id: String,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    index: SmallMap<usize>,
    revision: u64,
    cursor: u64,
    /// `(sequence, revision, changes)` per graph-changing event, kept only
    /// when built with [`RunGraph::with_history`].
    history: Option<Box<History>>,
}

impl RunGraph {
    /// An empty graph for the run tree rooted at `root_run_id` (revision 0).
    pub fn new(root_run_id: &str) -> Self {
        Self {
            root_run_id: root_run_id.to_owned(),
            ..Self::default()
        }
    }

    /// Like [`RunGraph::new`], also keeping every revision so that
    /// [`RunGraph::at`] can rebuild the graph at an earlier cursor.
    pub fn with_history(root_run_id: &str) -> Self {
        Self {
            history: Some(Box::default()),
            ..Self::new(root_run_id)
        }
    }

    /// Its root, nodes, edges, revision and cursor, for a packed copy;
    /// `None` when it keeps history (which a packed copy would lose).
    pub(crate) fn parts(&self) -> Option<Parts<'_>> {
        self.history.is_none().then_some((
            self.root_run_id.as_str(),
            self.nodes.as_slice(),
            self.edges.as_slice(),
            self.revision,
            self.cursor,
        ))
    }

    /// The graph [`RunGraph::parts`] came from.
    pub(crate) fn from_parts(
        root_run_id: String,
        nodes: Vec<Node>,
        edges: Vec<Edge>,
        revision: u64,
        cursor: u64,
    ) -> Self {
        let index = if nodes.len() > LINEAR {
            nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.clone(), i))
                .collect()
        } else {
            SmallMap::default()
        };
        Self {
            root_run_id,
            nodes,
            edges,
            index,
            revision,
            cursor,
            history: None,
        }
    }

    /// The root run.
    pub fn root_run_id(&self) -> &str {
        &self.root_run_id
    }
    /// The root node id, `run:{rootRunId}`.
    pub fn root_node_id(&self) -> String {
        joined(&["run:", &self.root_run_id])
    }
    /// Current revision (0 before the root started).
    pub fn revision(&self) -> u64 {
        self.revision
    }
    /// Run-tree sequence of the last event applied.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }
    /// Nodes in creation order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    /// Edges in creation order.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Applies one authority event and returns the RFC 6902 patch that moves
    /// the previous revision to the new one (empty when the event does not
    /// change the graph; then the revision stays). Events of other run trees,
    /// and redelivered events at or below the cursor, change nothing. On an
    /// error nothing changes.
    pub fn apply(&mut self, ev: &AuthorityEvent) -> Result<Vec<PatchOp>, GraphError> {
        let changes = self.plan(ev)?;
        let Some(seq) = self.in_tree(ev) else {
            return Ok(Vec::new());
        };
        Ok(self.commit(seq, changes, true))
    }

    /// Checks `ev` against the graph without changing it; [`RunGraph::finish`]
    /// then applies the result. Lets a caller (the checker) validate first
    /// and mutate only once every other check has passed.
    pub(crate) fn prepare(&self, ev: &AuthorityEvent) -> Result<Prepared, GraphError> {
        let changes = self.plan(ev)?;
        Ok(Prepared(self.in_tree(ev).map(|seq| (seq, changes))))
    }

    /// Applies a [`RunGraph::prepare`] result. Unlike [`RunGraph::apply`]
    /// it builds no patch: the checker keeps the graph, not the patch
    /// (building and dropping the patch's JSON values was a fifth of the
    /// checker's work per event).
    pub(crate) fn finish(&mut self, prepared: Prepared) {
        if let Some((seq, changes)) = prepared.0 {
            self.commit(seq, changes, false);
        }
    }

    /// Moves the cursor past an event the graph does not see (one of an
    /// inactive profile), so the next event of the tree is in order.
    pub(crate) fn skip_to(&mut self, sequence: u64) {
        self.cursor = self.cursor.max(sequence);
    }

    /// The changes `ev` would make, without making them.
    fn plan(&self, ev: &AuthorityEvent) -> Result<Vec<Change>, GraphError> {
        let Some(seq) = self.in_tree(ev) else {
            return Ok(Vec::new());
        };
        if self.cursor != 0 && seq != self.cursor + 1 {
            return Err(GraphError::OutOfOrder {
                last: self.cursor,
                got: seq,
            });
        }
        let run = ev.envelope.run_id.as_deref().unwrap_or(&self.root_run_id);
        // Built on first use: most events (progress, deltas, custom) change
        // no node, and need no id.
        let node_id = std::cell::OnceCell::new();
        let run_node = || node_id.get_or_init(|| joined(&["run:", run])).as_str();
        let started = self.revision > 0;
        if !started && !matches!(ev.payload, AuthorityPayload::RunStarted { .. }) {
            return Err(GraphError::RootNotStarted);
        }
        let run_state = |state: &str| -> Result<Vec<Change>, GraphError> {
            let i = self.position(run_node(), "run")?;
            Ok(vec![Change::State(i, state.to_owned())])
        };
        Ok(match &ev.payload {
            AuthorityPayload::RunStarted { .. } => {
                if self.find(run_node()).is_some() {
                    return Err(GraphError::DuplicateNode);
                }
                let mut changes = vec![Change::Node(Node {
                    id: run_node().to_owned(),
                    kind: NodeKind::Run,
                    label: run.to_owned(),
                    state: "running".into(),
                    run_id: None,
                })];
                if let Some(parent) = ev.envelope.parent_run_id.as_deref() {
                    let from = joined(&["run:", parent]);
                    self.position(&from, "run")?;
                    changes.push(Change::Edge(edge(
                        EdgeKind::Child,
                        from,
                        run_node().to_owned(),
                    )));
                } else if started {
                    // A second parentless run in one tree is not a run tree.
                    return Err(GraphError::UnknownNode("parent run"));
                }
                changes
            }
            AuthorityPayload::RunPaused { .. } => run_state("paused")?,
            AuthorityPayload::RunResumed { .. } => run_state("running")?,
            AuthorityPayload::RunFinished { .. } => run_state("finished")?,
            AuthorityPayload::RunError { .. } => run_state("error")?,
            AuthorityPayload::RunCancelled { .. } => run_state("cancelled")?,
            AuthorityPayload::ToolCallStarted {
                tool_call_id,
                tool_name,
                ..
            } => self.child(
                run_node(),
                run,
                joined(&["tool:", tool_call_id]),
                NodeKind::Tool,
                tool_name,
                "running",
                EdgeKind::Tool,
            )?,
            AuthorityPayload::ToolCallFinished {
                tool_call_id,
                outcome,
                ..
            } => {
                let i = self.position(&joined(&["tool:", tool_call_id]), "tool")?;
                let state = match outcome {
                    Outcome::Success => "success",
                    Outcome::Error => "error",
                    Outcome::Cancelled => "cancelled",
                };
                vec![Change::State(i, state.into())]
            }
            AuthorityPayload::InterruptRequested {
                interrupt_id,
                kind,
                scope,
                ..
            } if *scope != Some(InterruptScope::Workflow) => self.child(
                run_node(),
                run,
                joined(&["interrupt:", interrupt_id]),
                NodeKind::Interrupt,
                kind,
                "open",
                EdgeKind::Interrupt,
            )?,
            AuthorityPayload::InterruptResolved {
                interrupt_id,
                decision,
                scope,
                ..
            } if *scope != Some(InterruptScope::Workflow) => {
                let i = self.position(&joined(&["interrupt:", interrupt_id]), "interrupt")?;
                vec![Change::State(i, decision.clone())]
            }
            _ => Vec::new(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn child(
        &self,
        run_node: &str,
        run: &str,
        id: String,
        kind: NodeKind,
        label: &str,
        state: &str,
        edge_kind: EdgeKind,
    ) -> Result<Vec<Change>, GraphError> {
        self.position(run_node, "run")?;
        if self.find(&id).is_some() {
            return Err(GraphError::DuplicateNode);
        }
        Ok(vec![
            Change::Node(Node {
                id: id.clone(),
                kind,
                label: label.to_owned(),
                state: state.to_owned(),
                run_id: Some(run.to_owned()),
            }),
            Change::Edge(edge(edge_kind, run_node.to_owned(), id)),
        ])
    }

    fn position(&self, id: &str, what: &'static str) -> Result<usize, GraphError> {
        self.find(id).ok_or(GraphError::UnknownNode(what))
    }

    /// The position of node `id`: a small graph is scanned; past
    /// [`LINEAR`] nodes the index answers.
    pub(crate) fn find(&self, id: &str) -> Option<usize> {
        if self.nodes.len() <= LINEAR {
            self.nodes.iter().position(|n| n.id == id)
        } else {
            self.index.get(id).copied()
        }
    }

    /// The run-tree sequence of `ev` if it belongs to this tree and is new.
    fn in_tree(&self, ev: &AuthorityEvent) -> Option<u64> {
        let env = &ev.envelope;
        let seq = env.sequence?;
        (env.root_run_id.as_deref() == Some(self.root_run_id.as_str()) && seq > self.cursor)
            .then_some(seq)
    }

    /// Applies `changes` as the step to `seq`; returns their patch when
    /// `patch` is set (empty otherwise).
    fn commit(&mut self, seq: u64, changes: Vec<Change>, patch: bool) -> Vec<PatchOp> {
        self.cursor = seq;
        if changes.is_empty() {
            return Vec::new();
        }
        self.revision += 1;
        if patch {
            let patch = changes.iter().map(|c| self.change(c)).collect();
            if let Some(h) = &mut self.history {
                h.push((seq, self.revision, changes));
            }
            return patch;
        }
        if self.history.is_none() {
            // Nothing keeps the changes: they move in rather than copy.
            changes.into_iter().for_each(|c| self.apply_change(c));
        } else {
            changes.iter().for_each(|c| self.apply_change(c.clone()));
            if let Some(h) = &mut self.history {
                h.push((seq, self.revision, changes));
            }
        }
        Vec::new()
    }

    /// Applies one change and returns its patch operation.
    fn change(&mut self, c: &Change) -> PatchOp {
        self.apply_change(c.clone());
        match c {
            Change::Node(n) => add("/nodes/-", to_value(n)),
            Change::Edge(e) => add("/edges/-", to_value(e)),
            Change::State(i, state) => PatchOp {
                op: PatchOpKind::Replace,
                path: format!("/nodes/{i}/state"),
                from: None,
                value: Some(Value::String(state.clone())),
            },
        }
    }

    /// Applies one change to the nodes, edges and index.
    fn apply_change(&mut self, c: Change) {
        match c {
            Change::Node(n) => {
                let id = (self.nodes.len() >= LINEAR).then(|| n.id.clone());
                push_lean(&mut self.nodes, n);
                if let Some(id) = id {
                    if self.index.len() + 1 < self.nodes.len() {
                        self.index = self
                            .nodes
                            .iter()
                            .enumerate()
                            .map(|(i, n)| (n.id.clone(), i))
                            .collect();
                    } else {
                        self.index.insert(id, self.nodes.len() - 1);
                    }
                }
            }
            Change::Edge(e) => push_lean(&mut self.edges, e),
            Change::State(i, state) => {
                if let Some(n) = self.nodes.get_mut(i) {
                    n.state = state;
                }
            }
        }
    }

    /// The graph as it stood once the run journal reached `sequence`, with
    /// its revision. `None` without history or before the root started.
    pub fn at(&self, sequence: u64) -> Option<RunGraph> {
        let history = self.history.as_ref()?;
        let mut g = RunGraph::new(&self.root_run_id);
        for (seq, _, changes) in history.iter().take_while(|(s, _, _)| *s <= sequence) {
            g.commit(*seq, changes.clone(), false);
        }
        g.cursor = sequence.min(self.cursor);
        (g.revision > 0).then_some(g)
    }

    /// The graph body `{"edges","nodes","rootNodeId"}` as carried by a
    /// `graph.snapshot`.
    pub fn body(&self) -> Value {
        json!({
            "rootNodeId": self.root_node_id(),
            "nodes": self.nodes.iter().map(to_value).collect::<Vec<_>>(),
            "edges": self.edges.iter().map(to_value).collect::<Vec<_>>(),
        })
    }

    /// Canonical bytes of [`RunGraph::body`] (RFC 8785): equal graphs give
    /// equal bytes, whatever serde_json's map order.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        use canon_json::CanonJsonSerialize;
        self.body().to_canon_json_vec().unwrap_or_default()
    }

    /// A complete `graph.snapshot` hydrate record of the current revision.
    /// Only the timestamp is the caller's; everything else is derived.
    pub fn snapshot_record(&self, session_id: &str, timestamp: &str) -> Value {
        let mut v = self.body();
        if let Value::Object(m) = &mut v {
            m.extend(self.anchor(session_id, timestamp, "graph.snapshot"));
            m.insert("revision".into(), json!(self.revision));
        }
        v
    }

    /// A `graph.delta` hydrate record carrying `patch` (as returned by
    /// [`RunGraph::apply`]) from `revision - 1` to the current revision.
    pub fn delta_record(&self, session_id: &str, timestamp: &str, patch: &[PatchOp]) -> Value {
        let mut m = self.anchor(session_id, timestamp, "graph.delta");
        m.insert(
            "baseRevision".into(),
            json!(self.revision.saturating_sub(1)),
        );
        m.insert("revision".into(), json!(self.revision));
        m.insert(
            "patch".into(),
            serde_json::to_value(patch).unwrap_or(Value::Null),
        );
        Value::Object(m)
    }

    fn anchor(
        &self,
        session_id: &str,
        timestamp: &str,
        ty: &str,
    ) -> serde_json::Map<String, Value> {
        let v = json!({
            "type": ty,
            "protocolVersion": crate::PROTOCOL_VERSION,
            "timestamp": timestamp,
            "sessionId": session_id,
            "scope": "run",
            "rootRunId": self.root_run_id,
            "graphSchemaVersion": GRAPH_SCHEMA_VERSION,
            "sourceRunCursor": {"rootRunId": self.root_run_id, "sequence": self.cursor},
        });
        match v {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        }
    }
}

/// Derives the graph of the run tree `root_run_id` from a session's
/// authority events in journal order (events of other trees are skipped).
pub fn derive<'a>(
    root_run_id: &str,
    events: impl IntoIterator<Item = &'a AuthorityEvent>,
) -> Result<RunGraph, GraphError> {
    let mut g = RunGraph::new(root_run_id);
    for ev in events {
        g.apply(ev)?;
    }
    Ok(g)
}

/// `parts` joined into one string sized exactly: a node or edge id is
/// built per event, and `format!` cost several times the copy.
pub(crate) fn joined(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    parts.iter().for_each(|p| s.push_str(p));
    s
}

fn edge(kind: EdgeKind, from: String, to: String) -> Edge {
    Edge {
        id: joined(&[kind.as_str(), ":", &from, "->", &to]),
        kind,
        from,
        to,
    }
}

fn add(path: &str, value: Value) -> PatchOp {
    PatchOp {
        op: PatchOpKind::Add,
        path: path.to_owned(),
        from: None,
        value: Some(value),
    }
}

fn to_value<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::{edge, joined, EdgeKind};

    #[test]
    fn ids_are_spelled_as_format_would() {
        assert_eq!(joined(&["run:", "r1"]), "run:r1");
        assert_eq!(joined(&[]), "");
        let e = edge(EdgeKind::Tool, "run:a".into(), "tool:b".into());
        assert_eq!(e.id, format!("{}:run:a->tool:b", EdgeKind::Tool.as_str()));
    }
}
