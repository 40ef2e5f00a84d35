//! The journal checker: reduces a stream of records deterministically and
//! refuses the first record that breaks a rule the spec states as MUST and
//! that can be checked from the records themselves.
//!
//! Scope of this first slice: identity and deduplication (§4.1), the three
//! ordering domains (§4.2), the run state machine and open-work invariant
//! (§6.1–6.4), the session slot (§3.1), stop (§6.3), interrupts and their
//! adjacency (§7.6–7.7), tool calls (§7.8–7.9), workflows (§6.5), progress
//! (§9.8), graph hydrate anchoring (§9.7), watch revisions (§8) and
//! transcript snapshots moving the session cursor (§9.3). Conversation
//! content, state documents and client-control rules come later.
//!
//! No clock, no randomness, no IO: the same records always give the same
//! verdict.

mod client;
mod closed;
mod conversation;
mod derived;
mod documents;
mod seen;
mod session;

pub use client::{ClientLedger, CLOSURE_CODES};
pub use conversation::{Message, Reasoning, Transcript};
pub use documents::{Document, Documents, Lifecycle};

use crate::graph::RunGraph;
use crate::model::{
    AuthorityEnvelope, AuthorityEvent, AuthorityPayload, Cursor, Executor, HydratePayload,
    InterruptScope,
};
use crate::record::{IgnoredAuthority, Parsed, Record};
use crate::small_map::SmallMap;
use crate::validate::Validator;
use derived::Derived;
use seen::Seen;
use serde::{Deserialize, Serialize};
use session::Session;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why the checker refused a record: the record's index in the stream, a
/// stable code, the spec section of the rule, and a sanitized message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message} (§{section})")]
pub struct Rejection {
    /// 0-based index of the offending record in the stream.
    pub index: usize,
    /// Stable machine code, e.g. `interrupt_pause_adjacency`.
    pub code: &'static str,
    /// Spec section of the rule.
    pub section: &'static str,
    /// Sanitized explanation (ids only, never payload values).
    pub message: String,
}

/// What the checker did with an accepted record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// A new fact, applied.
    Applied,
    /// A redelivered fact with identical data: no change.
    Duplicate,
    /// Covered by a transcript snapshot already applied, or of an inactive profile.
    Skipped,
}

/// The lifecycle state of a run (§6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Running.
    Running,
    /// Paused.
    Paused,
    /// Finished.
    Finished,
    /// Error.
    Error,
    /// Cancelled.
    Cancelled,
}

impl RunState {
    /// Finished, error or cancelled.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Finished | Self::Error | Self::Cancelled)
    }
}

/// A run as reduced so far (read-only view for hosts).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// `rootRunId` of its run tree.
    pub root: String,
    /// `parentRunId`, for a nested run.
    pub parent: Option<String>,
    /// The workflow it belongs to.
    pub workflow: Option<String>,
    /// Its bound `clientExecutorId`.
    pub client_executor: Option<String>,
    /// Lifecycle state.
    pub state: RunState,
    /// Whether a stop targets it (§6.3).
    pub stop_requested: bool,
    /// The `waitId` of its open pause.
    pub open_pause: Option<String>,
    /// Its open interrupt.
    pub open_interrupt: Option<OpenInterrupt>,
    /// Child runs not yet terminal.
    pub open_children: BTreeSet<String>,
    /// Tool calls not yet finished.
    pub open_tools: BTreeSet<String>,
}

/// An open interrupt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenInterrupt {
    /// `interruptId`.
    pub id: String,
    /// The `waitId` of the pause it caused.
    pub wait_id: String,
    /// The offered actions.
    pub actions: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ToolState {
    Open,
    Finished,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tool {
    run: Box<str>,
    state: ToolState,
}

/// A workflow as reduced so far (read-only view for hosts).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    /// Finished, errored or cancelled.
    pub terminal: bool,
    /// Its runs not yet terminal.
    pub open_runs: BTreeSet<String>,
    /// Its active top-level run.
    pub active_top_run: Option<String>,
    /// The `waitId` of its open pause.
    pub open_pause: Option<String>,
    /// Its open workflow-scope interrupt.
    pub open_interrupt: Option<OpenInterrupt>,
}

/// An interrupt whose matching pause must be the very next event of its journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Adjacency {
    Run {
        root: String,
        run: String,
        wait_id: String,
        interrupt_id: String,
    },
    Workflow {
        workflow: String,
        wait_id: String,
        interrupt_id: String,
    },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GraphScope {
    revision: u64,
    cursor: u64,
    /// The graph the emitter claims (snapshot, patched by deltas); kept only
    /// when canonical graphs are checked.
    #[serde(skip)]
    emitted: Option<serde_json::Value>,
}

impl Adjacency {
    /// Whether an event with `env` belongs to the journal this entry watches.
    fn in_journal(&self, env: &AuthorityEnvelope) -> bool {
        match self {
            Adjacency::Run { root, .. } => env.root_run_id.as_deref() == Some(root.as_str()),
            Adjacency::Workflow { workflow, .. } => {
                env.workflow_id.as_deref() == Some(workflow.as_str())
            }
        }
    }
}

/// The session's top-level execution slot (§3.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Slot {
    /// An independent top-level run.
    Run(String),
    /// A workflow.
    Workflow(String),
}

/// The journal checker over any number of sessions and workspaces.
///
/// ```
/// use narad_core::checker::Checker;
/// let journal = [
///     r#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#,
///     r#"{"type":"run.finished","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2}"#,
///     r#"{"type":"run.finished","protocolVersion":"narad/v1","eventId":"e3","timestamp":"2026-08-05T00:00:02Z","sessionId":"s","sessionSequence":3,"rootRunId":"r","runId":"r","sequence":3}"#,
/// ];
/// let mut c = Checker::default();
/// c.push_bytes(journal[0].as_bytes()).unwrap();
/// c.push_bytes(journal[1].as_bytes()).unwrap();
/// c.push_bytes(journal[1].as_bytes()).unwrap(); // redelivery: a no-op
/// let err = c.push_bytes(journal[2].as_bytes()).unwrap_err();
/// assert_eq!((err.index, err.code), (3, "run_terminated"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Checker {
    validator: Validator,
    /// Boxed: a B-tree node holds eleven entries inline, and most are spare.
    sessions: BTreeMap<Box<str>, Box<Session>>,
    workspaces: BTreeMap<String, (Seen, u64)>,
    client: ClientLedger,
    index: usize,
    canonical_graphs: bool,
    /// Keeps closed runs and tool calls in their open form (the reference
    /// the compacted checker is tested against).
    full_history: bool,
}

/// Version of the [`Checker::snapshot`] layout. Version 4: deduplication
/// sets hold `[eventId hash, folded 32-bit fingerprint]` pairs. Earlier
/// versions (64-bit fingerprints, or eventIds themselves) are not
/// restored: the host replays the journal instead.
const SNAPSHOT_FORMAT: u32 = 4;

pub(crate) type R<T = ()> = Result<T, (&'static str, &'static str, String)>;

pub(crate) fn fail<T>(
    code: &'static str,
    section: &'static str,
    message: impl Into<String>,
) -> R<T> {
    Err((code, section, message.into()))
}

impl Checker {
    /// A checker that parses with `validator` (its profiles decide what is ignorable).
    pub fn new(validator: Validator) -> Self {
        Self {
            validator,
            ..Self::default()
        }
    }

    /// Also checks that every `graph.snapshot` / `graph.delta` of run scope
    /// under `narad.graph/v1` equals the canonical graph derived from the
    /// authority through its cursor ([`crate::graph`]): the §9.7 rebuild
    /// rule for an emitter that uses this derivation (the engine). Off by
    /// default, since the spec fixes no node format and other emitters'
    /// graphs differ in shape.
    pub fn with_canonical_graphs(mut self) -> Self {
        self.canonical_graphs = true;
        self
    }

    /// Keeps closed runs, tool calls and their graphs uncompacted: the
    /// checker as it was before compaction, for tests that compare the two
    /// (verdicts, reads and `state_json` are the same either way).
    #[doc(hidden)]
    pub fn with_full_history(mut self) -> Self {
        self.full_history = true;
        self
    }

    /// The canonical graph of a run tree derived so far (§9.7).
    /// (Borrowed while its root run is open; rebuilt from a compact form
    /// once the root is terminal.)
    pub fn graph(&self, session_id: &str, root_run_id: &str) -> Option<Cow<'_, RunGraph>> {
        self.sessions.get(session_id)?.derived_graph(root_run_id)
    }

    /// Number of records pushed so far (accepted or not).
    pub fn records_seen(&self) -> usize {
        self.index
    }

    /// The session head (`sessionSequence` of the last applied event, or the
    /// cursor of the last transcript snapshot), if the session is known.
    pub fn session_head(&self, session_id: &str) -> Option<u64> {
        self.sessions.get(session_id).map(|s| s.head)
    }

    /// A run of the session, if it started (borrowed while it is open,
    /// rebuilt from its compact form once it is terminal).
    pub fn run(&self, session_id: &str, run_id: &str) -> Option<Cow<'_, Run>> {
        Some(self.sessions.get(session_id)?.run_ref(run_id)?.to_cow())
    }

    /// Every run of the session, by `runId` in order.
    pub fn runs(&self, session_id: &str) -> impl Iterator<Item = (&str, Cow<'_, Run>)> {
        self.sessions
            .get(session_id)
            .into_iter()
            .flat_map(|s| s.all_runs())
            .map(|(k, r)| (k, r.to_cow()))
    }

    /// A workflow of the session, if it started.
    pub fn workflow(&self, session_id: &str, workflow_id: &str) -> Option<&Workflow> {
        self.sessions
            .get(session_id)?
            .x()
            .workflows
            .get(workflow_id)
    }

    /// Every workflow of the session, by `workflowId`.
    pub fn workflows(&self, session_id: &str) -> impl Iterator<Item = (&String, &Workflow)> {
        self.sessions
            .get(session_id)
            .into_iter()
            .flat_map(|s| s.x().workflows.iter())
    }

    /// The active top-level execution of the session, if any.
    pub fn slot(&self, session_id: &str) -> Option<&Slot> {
        self.sessions.get(session_id)?.slot.as_deref()
    }

    /// The last run-tree `sequence` of a root (0 if none).
    pub fn run_head(&self, session_id: &str, root_run_id: &str) -> u64 {
        self.sessions
            .get(session_id)
            .and_then(|s| s.run_head(root_run_id))
            .unwrap_or(0)
    }

    /// The last `workflowSequence` of a workflow (0 if none).
    pub fn workflow_head(&self, session_id: &str, workflow_id: &str) -> u64 {
        self.sessions
            .get(session_id)
            .and_then(|s| s.x().workflow_heads.get(workflow_id))
            .copied()
            .unwrap_or(0)
    }

    /// The run a tool call belongs to and whether it is still open.
    pub fn tool_call(&self, session_id: &str, tool_call_id: &str) -> Option<(&str, bool)> {
        self.sessions.get(session_id)?.tool_ref(tool_call_id)
    }

    /// The state of a run, if it started.
    pub fn run_state(&self, session_id: &str, run_id: &str) -> Option<RunState> {
        self.sessions
            .get(session_id)?
            .run_ref(run_id)
            .map(|r| r.state())
    }

    /// A deterministic rendering of everything the checker holds (not the
    /// record counter), for tests of the no-change-on-refusal invariant.
    #[doc(hidden)]
    pub fn debug_state(&self) -> String {
        format!("{:?}{:?}{:?}", self.sessions, self.workspaces, self.client)
    }

    /// The reduced state of a session, serialized deterministically (maps
    /// in key order): runs, tool calls, workflows, transcript, documents.
    /// The same records always give byte-identical output.
    pub fn state_json(&self, session_id: &str) -> Option<String> {
        self.sessions
            .get(session_id)
            .and_then(|s| serde_json::to_string(s).ok())
    }

    /// The session's transcript.
    pub fn transcript(&self, session_id: &str) -> Option<&Transcript> {
        self.sessions.get(session_id).map(|s| &s.x().transcript)
    }

    /// The default primary transcript of §9.2: session and workflow messages
    /// and those of the active, or most recently started, top-level run.
    pub fn primary_transcript(&self, session_id: &str) -> Vec<&Message> {
        self.sessions
            .get(session_id)
            .map(|s| {
                s.x()
                    .transcript
                    .primary(s.last_top_run.as_deref())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The session's state/UI documents, views, attachments and artifacts.
    pub fn documents(&self, session_id: &str) -> Option<&Documents> {
        self.sessions.get(session_id).map(|s| &s.x().documents)
    }

    /// The checker's whole state as bytes (everything but its validator and
    /// the canonical-graph setting), for a host to store beside the journal
    /// and [`Checker::restore`] later instead of replaying it all. Not a
    /// wire format: it is versioned and may change between releases.
    pub fn snapshot(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct FullRef<'a> {
            state: &'a Session,
            seen: &'a Seen,
            derived: derived::Graphs<'a>,
        }
        #[derive(Serialize)]
        struct SnapRef<'a> {
            format: u32,
            sessions: BTreeMap<&'a str, FullRef<'a>>,
            workspaces: &'a BTreeMap<String, (Seen, u64)>,
            client: &'a ClientLedger,
            index: usize,
        }
        let snap = SnapRef {
            format: SNAPSHOT_FORMAT,
            sessions: self
                .sessions
                .iter()
                .map(|(k, s)| {
                    (
                        &**k,
                        FullRef {
                            state: s,
                            seen: &s.seen,
                            derived: derived::Graphs(s.all_derived()),
                        },
                    )
                })
                .collect(),
            workspaces: &self.workspaces,
            client: &self.client,
            index: self.index,
        };
        serde_json::to_vec(&snap).unwrap_or_default()
    }

    /// A checker restored from [`Checker::snapshot`] bytes, parsing with
    /// `validator`. `None` when the bytes are not a snapshot of this format
    /// (the host then replays the journal instead).
    pub fn restore(validator: Validator, bytes: &[u8]) -> Option<Self> {
        #[derive(Deserialize)]
        struct Full {
            state: Session,
            seen: Seen,
            derived: SmallMap<Derived>,
        }
        #[derive(Deserialize)]
        struct Snap {
            format: u32,
            sessions: BTreeMap<String, Full>,
            workspaces: BTreeMap<String, (Seen, u64)>,
            client: ClientLedger,
            index: usize,
        }
        let snap: Snap = serde_json::from_slice(bytes).ok()?;
        if snap.format != SNAPSHOT_FORMAT {
            return None;
        }
        let sessions = snap
            .sessions
            .into_iter()
            .map(|(k, f)| {
                let mut s = f.state;
                s.seen = f.seen;
                s.w_mut().derived = f.derived;
                s.trim();
                s.reindex();
                s.pack_closed_graphs();
                s.retire_all();
                (k.into_boxed_str(), Box::new(s))
            })
            .collect();
        Some(Self {
            validator,
            sessions,
            workspaces: snap.workspaces,
            client: snap.client,
            index: snap.index,
            canonical_graphs: false,
            full_history: false,
        })
    }

    /// Parses, validates and applies one record.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<Applied, Rejection> {
        let index = self.index;
        self.index += 1;
        let parsed = self.validator.parse(bytes).map_err(|e| Rejection {
            index,
            code: e.code.as_str(),
            section: "5",
            message: e.to_string(),
        })?;
        match parsed {
            Parsed::Ignorable {
                authority: Some(ev),
                ..
            } => self
                .ignored(&ev)
                .map_err(|(code, section, message)| Rejection {
                    index,
                    code,
                    section,
                    message,
                }),
            Parsed::Ignorable { .. } => Ok(Applied::Skipped),
            Parsed::Record { record, .. } => self.apply(index, &record),
        }
    }

    /// Applies one already-parsed record.
    pub fn push(&mut self, record: &Record) -> Result<Applied, Rejection> {
        let index = self.index;
        self.index += 1;
        self.apply(index, record)
    }

    fn apply(&mut self, index: usize, record: &Record) -> Result<Applied, Rejection> {
        let out = match record {
            Record::Authority(ev) => self.authority(ev),
            Record::Watch(w) => self.watch(w),
            Record::Hydrate(h) => self.hydrate(h),
            Record::Control(c) => self
                .client
                .control(&c.payload, c.wire.json())
                .map(|()| Applied::Applied),
        };
        out.map_err(|(code, section, message)| Rejection {
            index,
            code,
            section,
            message,
        })
    }

    fn watch(&mut self, w: &crate::model::WatchEvent) -> R<Applied> {
        use crate::model::WatchPayload as W;
        let fp = fingerprint(w.wire.json());
        let (id, rev) = (&w.envelope.event_id, w.envelope.revision);
        let (session_id, key) = match &w.payload {
            W::WorkspaceRevision { workspace_id, .. }
            | W::SessionCreated { workspace_id, .. }
            | W::SessionUpdated { workspace_id, .. }
            | W::SessionArchived { workspace_id, .. } => {
                if let Some((seen, last)) = self.workspaces.get(workspace_id) {
                    if let Some(dup) = dedup(seen, id, fp)? {
                        return Ok(dup);
                    }
                    if rev < *last {
                        return fail(
                            "watch_revision_regress",
                            "8",
                            format!("workspace {workspace_id} revision regressed"),
                        );
                    }
                }
                let ws = self.workspaces.entry(workspace_id.clone()).or_default();
                ws.0.insert(id, fp);
                ws.1 = rev;
                return Ok(Applied::Applied);
            }
            W::SessionRevision { session_id } => (session_id, format!("session:{session_id}")),
            W::RunRevision {
                session_id, run_id, ..
            } => (session_id, format!("run:{run_id}")),
            W::WorkflowRevision {
                session_id,
                workflow_id,
                ..
            } => (session_id, format!("workflow:{workflow_id}")),
            W::NodeRevision {
                session_id,
                workflow_id,
                node_id,
            } => (session_id, format!("node:{workflow_id}/{node_id}")),
        };
        let known = self.sessions.get(session_id.as_str());
        if let Some(dup) = known.map(|s| dedup(&s.seen, id, fp)).transpose()?.flatten() {
            return Ok(dup);
        }
        let head = known.map_or(0, |s| s.head);
        if let Some(Cursor::Session {
            session_sequence, ..
        }) = &w.envelope.cursor
        {
            if *session_sequence > head {
                return fail(
                    "watch_cursor_ahead",
                    "8",
                    "watch cursor is ahead of the session's authority",
                );
            }
        }
        if rev
            < known
                .and_then(|s| s.x().watch.get(&key))
                .copied()
                .unwrap_or(0)
        {
            return fail(
                "watch_revision_regress",
                "8",
                "watch revision regressed within its scope",
            );
        }
        let s = self.sessions.entry(session_id.as_str().into()).or_default();
        s.seen.insert(id, fp);
        s.x_mut().watch.insert(key, rev);
        Ok(Applied::Applied)
    }

    fn hydrate(&mut self, h: &crate::HydrateRecord) -> R<Applied> {
        let (anchor, base_revision) = match &h.payload {
            HydratePayload::MessagesSnapshot {
                session_id,
                covers_through_session_sequence,
                messages,
                ..
            } => {
                let s = self.sessions.entry(session_id.as_str().into()).or_default();
                s.x_mut().transcript.replace_with_snapshot(messages);
                // §9.3: authority with greater sessionSequence applies after it.
                s.head = s.head.max(*covers_through_session_sequence);
                s.covered = s.covered.max(*covers_through_session_sequence);
                return Ok(Applied::Applied);
            }
            HydratePayload::GraphSnapshot { anchor, .. } => (anchor, None),
            HydratePayload::GraphDelta {
                anchor,
                base_revision,
                ..
            } => (anchor, Some(*base_revision)),
        };
        let empty = Session::default();
        let s: &Session = self
            .sessions
            .get(anchor.session_id.as_str())
            .map_or(&empty, |s| s);
        let (key, cursor) = match (
            &anchor.root_run_id,
            &anchor.source_run_cursor,
            &anchor.workflow_id,
            &anchor.source_workflow_cursor,
        ) {
            (Some(root), Some(c), _, _) => {
                if s.run_ref(root).is_none_or(|r| r.root() != *root) {
                    return fail(
                        "graph_unknown_root",
                        "9.7",
                        format!("graph rootRunId {root} has not started in this session"),
                    );
                }
                if c.root_run_id.as_ref().is_some_and(|r| r != root) {
                    return fail(
                        "graph_cursor_root_mismatch",
                        "9.7",
                        "sourceRunCursor names another root run",
                    );
                }
                let head = s.run_head(root).unwrap_or(0);
                if c.sequence > head {
                    return fail(
                        "graph_cursor_ahead",
                        "9.7",
                        format!(
                            "graph cursor {} is ahead of run journal {root} at {head}",
                            c.sequence
                        ),
                    );
                }
                (format!("run:{root}"), c.sequence)
            }
            (_, _, Some(wf), Some(c)) => {
                let head = s.x().workflow_heads.get(wf).copied().unwrap_or(0);
                if c.sequence > head {
                    return fail(
                        "graph_cursor_ahead",
                        "9.7",
                        format!("graph cursor is ahead of workflow {wf}"),
                    );
                }
                (format!("workflow:{wf}"), c.sequence)
            }
            _ => {
                return fail(
                    "graph_scope_invalid",
                    "9.7",
                    "graph record lacks its scope anchor",
                )
            }
        };
        let current = s.x().graphs.get(&key).cloned().unwrap_or_default();
        if current.revision > 0 && anchor.revision <= current.revision {
            // A stale or repeated graph record (at-least-once delivery): the
            // client already holds this revision or a later one.
            return Ok(Applied::Skipped);
        }
        if base_revision.is_some_and(|b| b != current.revision) {
            return fail(
                "graph_revision_gap",
                "9.7",
                "graph delta does not apply to the current revision; request a snapshot",
            );
        }
        if cursor < current.cursor {
            return fail(
                "graph_cursor_regress",
                "9.7",
                "graph source cursor regressed across increasing revisions",
            );
        }
        let emitted = if self.canonical_graphs {
            canonical_check(s, h, &current, cursor)?
        } else {
            None
        };
        let scope = self
            .sessions
            .entry(anchor.session_id.as_str().into())
            .or_default()
            .x_mut()
            .graphs
            .get_or_default(&key);
        scope.revision = anchor.revision;
        scope.cursor = cursor;
        scope.emitted = emitted;
        Ok(Applied::Applied)
    }

    fn authority(&mut self, ev: &AuthorityEvent) -> R<Applied> {
        let env = &ev.envelope;
        let is_new_session = !self.sessions.contains_key(env.session_id.as_str());
        let result = self.authority_in(ev);
        if result.is_err() && is_new_session {
            self.sessions.remove(env.session_id.as_str());
        }
        if result == Ok(Applied::Applied) && !self.full_history {
            if let Some(s) = self.sessions.get_mut(env.session_id.as_str()) {
                let tool = match &ev.payload {
                    AuthorityPayload::ToolCallFinished { tool_call_id, .. } => {
                        Some(tool_call_id.as_str())
                    }
                    _ => None,
                };
                s.retire(env.run_id.as_deref(), tool, env.root_run_id.as_deref());
            }
        }
        result
    }

    /// An authority event of an inactive profile (§2.1): its semantics are
    /// ignored, but it is deduplicated and takes its place in every ordering
    /// domain it carries (§4.2), with the same refusals as any event.
    fn ignored(&mut self, ev: &IgnoredAuthority) -> R<Applied> {
        let env = &ev.envelope;
        let is_new_session = !self.sessions.contains_key(env.session_id.as_str());
        let s = self
            .sessions
            .entry(env.session_id.as_str().into())
            .or_default();
        let result = s.ignored(env, fingerprint(ev.wire.json()));
        if result.is_ok() && !self.full_history {
            s.retire(None, None, env.root_run_id.as_deref());
        }
        if result.is_err() && is_new_session {
            self.sessions.remove(env.session_id.as_str());
        }
        result
    }

    fn authority_in(&mut self, ev: &AuthorityEvent) -> R<Applied> {
        let env = &ev.envelope;
        let s = self
            .sessions
            .entry(env.session_id.as_str().into())
            .or_default();
        let fp = fingerprint(ev.wire.json());
        if let Some(dup) = dedup(&s.seen, &env.event_id, fp)? {
            return Ok(dup);
        }
        if let Some(skip) = s.check_position(env)? {
            return Ok(skip);
        }
        let run = env.run_id.as_deref().and_then(|r| s.run_ref(r));
        if let AuthorityPayload::ToolCallFinished {
            tool_call_id,
            outcome,
            response,
            code,
            ..
        } = &ev.payload
        {
            let stop_requested = run.is_some_and(|r| r.stop_requested());
            self.client.check_finished(
                tool_call_id,
                *outcome,
                response,
                code.as_deref(),
                stop_requested,
            )?;
        }
        let bound_executor = run.and_then(|r| r.client_executor().map(str::to_owned));
        // The graph step is checked before the state changes; a step the
        // graph cannot take is reported by the session rules below (they
        // subsume the graph's), so its error is not surfaced here.
        let graph_step = env.root_run_id.as_deref().map(|root| {
            let step = match s.derived_graph(root) {
                Some(g) => g.prepare(ev),
                None if self.canonical_graphs => RunGraph::with_history(root).prepare(ev),
                None => RunGraph::new(root).prepare(ev),
            };
            (root, step)
        });
        s.apply(ev)?;
        if let Some((root, step)) = graph_step {
            s.revive_graph(root);
            match step {
                Ok(step) => {
                    let canonical = self.canonical_graphs;
                    let terminal = s.run_ref(root).is_some_and(|r| r.state().is_terminal());
                    let g = s.w_mut().derived.get_or_insert_with(root, || {
                        Derived::live(if canonical {
                            RunGraph::with_history(root)
                        } else {
                            RunGraph::new(root)
                        })
                    });
                    g.with_live(root, |g| g.finish(step));
                    if terminal {
                        g.pack(root);
                    }
                }
                // Unreachable for accepted authority; drop the graph rather
                // than keep a wrong one (a canonical check then fails).
                Err(_) => {
                    s.w_mut().derived.remove(root);
                }
            }
        }
        s.head = env.session_sequence;
        s.seen.insert(&env.event_id, fp);
        s.trim();
        match &ev.payload {
            AuthorityPayload::ToolCallStarted {
                tool_call_id,
                tool_name,
                executor: Executor::Client,
                args,
            } => {
                if let Some(executor) = bound_executor {
                    self.client
                        .started(tool_call_id, &executor, tool_name, args);
                }
            }
            AuthorityPayload::ToolCallFinished { tool_call_id, .. } => {
                self.client.closed(tool_call_id)
            }
            _ => {}
        }
        Ok(Applied::Applied)
    }
}

/// §9.7 rebuild rule for canonical graphs: the emitted graph (this snapshot,
/// or the held graph patched by this delta) must equal the graph derived from
/// authority through the record's cursor, revision included. Returns the
/// emitted graph to hold; `None` when the record is not checkable this way
/// (workflow scope, another graph schema version).
fn canonical_check(
    s: &Session,
    h: &crate::HydrateRecord,
    current: &GraphScope,
    cursor: u64,
) -> R<Option<serde_json::Value>> {
    use serde_json::Value;
    let (anchor, emitted) = match &h.payload {
        HydratePayload::GraphSnapshot {
            anchor,
            root_node_id,
            nodes,
            edges,
        } => (
            anchor,
            serde_json::json!({"rootNodeId": root_node_id, "nodes": nodes, "edges": edges}),
        ),
        HydratePayload::GraphDelta { anchor, patch, .. } => {
            let Some(root) = &anchor.root_run_id else {
                return Ok(None);
            };
            let mut doc: Value = match &current.emitted {
                Some(v) => v.clone(),
                None if current.revision == 0 => RunGraph::new(root).body(),
                None => return Ok(None),
            };
            let ops: json_patch::Patch = serde_json::to_value(patch)
                .and_then(serde_json::from_value)
                .map_err(|_| {
                    (
                        "patch_invalid",
                        "9.7",
                        "graph delta patch is not RFC 6902".to_owned(),
                    )
                })?;
            json_patch::patch(&mut doc, &ops).map_err(|_| {
                (
                    "patch_failed",
                    "9.7",
                    "graph delta does not apply to the held graph".to_owned(),
                )
            })?;
            (anchor, doc)
        }
        HydratePayload::MessagesSnapshot { .. } => return Ok(None),
    };
    let Some(root) = &anchor.root_run_id else {
        return Ok(None);
    };
    if anchor.graph_schema_version != crate::graph::GRAPH_SCHEMA_VERSION {
        return Ok(None);
    }
    let derived = s
        .w()
        .derived
        .get(root)
        .and_then(|g| g.graph(root).at(cursor));
    match derived {
        Some(g) if g.revision() == anchor.revision && g.body() == emitted => Ok(Some(emitted)),
        _ => fail(
            "graph_not_derived",
            "9.7",
            format!(
                "graph revision {} of {root} is not the graph derived from authority through sequence {cursor}",
                anchor.revision
            ),
        ),
    }
}

/// `Some(Duplicate)` for an identical redelivery, an error for the same id
/// with different data, `None` for an id not seen yet. Records nothing: the
/// caller records the id once the event is accepted.
fn dedup(seen: &Seen, event_id: &str, fp: u64) -> R<Option<Applied>> {
    match seen.get(event_id) {
        Some(prev) if prev == seen::fold(fp) => Ok(Some(Applied::Duplicate)),
        Some(_) => fail(
            "duplicate_event_conflict",
            "4.1",
            format!("eventId {event_id} was delivered before with different data"),
        ),
        None => Ok(None),
    }
}

/// A stable 64-bit FNV-1a fingerprint of a JSON object's content (keys in
/// `serde_json::Map` order, which is sorted), so a re-encoded redelivery of
/// the same fact matches while any changed field does not. Walks the parsed
/// value in place: no clone, no re-serialization.
fn fingerprint(map: &serde_json::Map<String, serde_json::Value>) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.object(map);
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 = (self.0 ^ u64::from(*x)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn tagged(&mut self, tag: u8, b: &[u8]) {
        self.bytes(&[tag]);
        self.bytes(&(b.len() as u64).to_le_bytes());
        self.bytes(b);
    }

    fn object(&mut self, map: &serde_json::Map<String, serde_json::Value>) {
        self.tagged(b'{', &(map.len() as u64).to_le_bytes());
        for (k, v) in map {
            self.tagged(b'k', k.as_bytes());
            self.value(v);
        }
    }

    fn value(&mut self, v: &serde_json::Value) {
        use serde_json::Value as V;
        match v {
            V::Null => self.tagged(b'n', &[]),
            V::Bool(b) => self.tagged(b'b', &[u8::from(*b)]),
            V::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => self.tagged(b'u', &u.to_le_bytes()),
                (None, Some(i), _) => self.tagged(b'i', &i.to_le_bytes()),
                (None, None, f) => {
                    self.tagged(b'f', &f.unwrap_or(f64::NAN).to_bits().to_le_bytes())
                }
            },
            V::String(s) => self.tagged(b's', s.as_bytes()),
            V::Array(items) => {
                self.tagged(b'[', &(items.len() as u64).to_le_bytes());
                items.iter().for_each(|i| self.value(i));
            }
            V::Object(m) => self.object(m),
        }
    }
}

impl Session {
    /// §4.2, §9.3: `Some(Skipped)` for a position covered by a transcript
    /// snapshot and never delivered before; an error for a taken position
    /// or a gap; `None` for the next position.
    fn check_position(&self, env: &AuthorityEnvelope) -> R<Option<Applied>> {
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
    fn ignored(&mut self, env: &AuthorityEnvelope, fp: u64) -> R<Applied> {
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

    fn apply(&mut self, ev: &AuthorityEvent) -> R {
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

/// The HITL pack fold of §7.7: stop wins; else all approve; else all
/// expired; otherwise deny.
pub fn fold<'a>(decisions: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut all = decisions.clone();
    if decisions.clone().any(|d| d == "stop") {
        "stop".into()
    } else if all.all(|d| d == "approve") {
        "approve".into()
    } else if decisions.clone().all(|d| d == "expired") {
        "expired".into()
    } else {
        "deny".into()
    }
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Applied::Applied => "applied",
            Applied::Duplicate => "duplicate",
            Applied::Skipped => "skipped",
        })
    }
}
