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

mod arena;
mod client;
mod closed;
mod closed_store;
mod conversation;
mod derived;
mod documents;
mod hydrate;
mod id_index;
mod identity;
mod label;
mod messages;
mod packed_messages;
mod reasoning_bytes;
mod rules;
mod seen;
mod session;
mod snapshot;
mod transcript_store;
mod watch;

pub use client::{ClientLedger, CLOSURE_CODES};
pub use closed_store::{ClosedKey, ClosedKind, ClosedRecord, CLOSED_RECALL};
pub use conversation::{Message, Reasoning, Transcript};
pub use documents::{Document, Documents, Lifecycle};
pub use label::Label;
pub use messages::Messages;
pub use transcript_store::{CheckedTranscript, TranscriptWanted, HANDOVER_BYTES, SINCE_MAX};

use crate::graph::RunGraph;
use crate::model::{
    AuthorityEnvelope, AuthorityEvent, AuthorityPayload, Cursor, Executor, HydratePayload,
};
use crate::record::{IgnoredAuthority, Parsed, Record};
use crate::validate::Validator;
use derived::Derived;
use identity::{dedup, fingerprint};
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
    /// Leaves closed history to the host's store ([`closed_store`]).
    closed_to_store: bool,
    /// When a transcript is handed to the store ([`transcript_store`]).
    handover: transcript_store::Handover,
}

pub(crate) type R<T = ()> = Result<T, (&'static str, &'static str, String)>;

/// The session `$sid` of `$sessions`, created empty when absent. Looked up
/// first: `entry` takes an owned key, which allocated a copy of the id for
/// every record of a known session. A macro, because a function returning
/// the lookup's borrow is refused by the borrow checker (it cannot see
/// that the map is free again when the lookup found nothing).
macro_rules! session_mut {
    ($sessions:expr, $sid:expr) => {
        match $sessions.get_mut($sid) {
            Some(s) => s,
            None => $sessions.entry($sid.into()).or_default(),
        }
    };
}

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

    /// Hands a transcript to the store from `bytes` of messages, and again
    /// once `since` more came, instead of [`HANDOVER_BYTES`] and
    /// [`SINCE_MAX`]: for tests of short sessions.
    #[doc(hidden)]
    pub fn with_transcript_handover(mut self, bytes: usize, since: usize) -> Self {
        self.handover = transcript_store::Handover { bytes, since };
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

    /// Whether any run of the session started, open or closed. Unlike
    /// `runs(..).next()` it lists nothing, so its cost does not grow with
    /// history.
    ///
    /// ```
    /// use narad_core::checker::Checker;
    /// let mut c = Checker::default();
    /// assert!(!c.has_runs("s"));
    /// c.push_bytes(br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#).unwrap();
    /// c.push_bytes(br#"{"type":"run.finished","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2}"#).unwrap();
    /// assert!(c.has_runs("s"));
    /// ```
    pub fn has_runs(&self, session_id: &str) -> bool {
        self.sessions.get(session_id).is_some_and(|s| s.has_runs())
    }

    /// The session's runs that have not reached a terminal, by `runId` in
    /// order: what a host scans for open interrupts or pauses. Unlike
    /// [`Checker::runs`] it does not rebuild closed runs, so its cost
    /// follows open work, not history.
    ///
    /// ```
    /// use narad_core::checker::Checker;
    /// let mut c = Checker::default();
    /// c.push_bytes(br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#).unwrap();
    /// assert_eq!(c.open_runs("s").map(|(id, _)| id).collect::<Vec<_>>(), ["r"]);
    /// c.push_bytes(br#"{"type":"run.finished","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2}"#).unwrap();
    /// assert_eq!(c.open_runs("s").count(), 0);
    /// assert_eq!(c.runs("s").count(), 1);
    /// ```
    pub fn open_runs(&self, session_id: &str) -> impl Iterator<Item = (&str, &Run)> {
        self.sessions
            .get(session_id)
            .into_iter()
            .flat_map(|s| s.w().runs.iter())
            .filter(|(_, r)| !r.state.is_terminal())
            .map(|(k, r)| (k.as_str(), r))
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

    /// The session's transcript. Of a checker restored from a snapshot
    /// that left a long transcript to its host's store, the messages it
    /// holds only (all once the host gave the record back: see
    /// [`Checker::holds_closed_history`]).
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
    /// and [`Checker::restore`] later instead of replaying it all. Closed
    /// runs and tool calls are written as the packed arenas the checker
    /// holds them in and dedup sets as fixed-size entries, so the bytes and
    /// the cost of a restore follow open work more than history (layout in
    /// `checker/snapshot/mod.rs`). Not a wire format: it is versioned and may
    /// change between releases.
    pub fn snapshot(&self) -> Vec<u8> {
        snapshot::write(self, snapshot::EventIds::Kept)
    }

    /// A checker restored from [`Checker::snapshot`] bytes, parsing with
    /// `validator`. `None` when the bytes are not a snapshot of this format,
    /// or are cut short or corrupt (the host then replays the journal
    /// instead); closed history is installed as written, each record
    /// checked but none unpacked.
    pub fn restore(validator: Validator, bytes: &[u8]) -> Option<Self> {
        snapshot::read_checked(validator, bytes, None, || true).1
    }

    /// [`Checker::restore`] with a check of the same bytes (a host's
    /// digest of them), run once on the calling thread while a long
    /// session's restore works on its second thread, so the check costs no
    /// time of its own. Returns the check's answer and the checker, which
    /// is `None` when the check fails (a checker restored from bytes that
    /// failed their check is dropped; the restore is safe on any bytes).
    ///
    /// ```
    /// use narad_core::{checker::Checker, Validator};
    ///
    /// let bytes = Checker::default().snapshot();
    /// let (passed, restored) = Checker::restore_checked(Validator::default(), &bytes, || true);
    /// assert!(passed && restored.is_some());
    /// let (passed, restored) = Checker::restore_checked(Validator::default(), &bytes, || false);
    /// assert!(!passed && restored.is_none());
    /// ```
    pub fn restore_checked(
        validator: Validator,
        bytes: &[u8],
        check: impl FnOnce() -> bool,
    ) -> (bool, Option<Self>) {
        snapshot::read_checked(validator, bytes, None, check)
    }

    /// Whether `bytes` are a [`Checker::snapshot`] of a layout earlier than
    /// the ones this build restores: not damage, but a snapshot an older
    /// build wrote. A host replays the journal instead, as for any snapshot
    /// that does not restore, and writes its next one in this layout.
    ///
    /// ```
    /// use narad_core::checker::Checker;
    ///
    /// let mut old = Checker::default().snapshot();
    /// assert!(!Checker::is_earlier_snapshot(&old));
    /// old[8] = 8; // the format, after the magic string
    /// assert!(Checker::is_earlier_snapshot(&old));
    /// assert!(!Checker::is_earlier_snapshot(b"not a snapshot"));
    /// ```
    pub fn is_earlier_snapshot(bytes: &[u8]) -> bool {
        snapshot::is_earlier(bytes)
    }

    /// [`Checker::restore_checked`] of `bytes`, which keeps a session's
    /// messages as a slice of `bytes` instead of a copy when they are most
    /// of it (a host that read a long conversation's snapshot into its own
    /// buffer saves the copy; the buffer is then held while the checker
    /// holds those messages). Messages are checked on restore and decoded
    /// when read.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use narad_core::{checker::Checker, Validator};
    ///
    /// let bytes = Bytes::from(Checker::default().snapshot());
    /// let (passed, restored) = Checker::restore_shared(Validator::default(), &bytes, || true);
    /// assert!(passed && restored.is_some());
    /// ```
    pub fn restore_shared(
        validator: Validator,
        bytes: &bytes::Bytes,
        check: impl FnOnce() -> bool,
    ) -> (bool, Option<Self>) {
        snapshot::read_checked(validator, bytes, Some(bytes), check)
    }

    /// Parses, validates and applies one record.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<Applied, Rejection> {
        let index = self.index;
        self.index += 1;
        // The message is the validator's own, without its code: the
        // rejection carries the code beside it.
        let parsed = self.validator.parse(bytes).map_err(|e| Rejection {
            index,
            code: e.code.as_str(),
            section: "5",
            message: e.message,
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
        .inspect_err(|r| self.uncount(r))
    }

    /// A [`CLOSED_RECALL`] refusal is no verdict: the record is pushed
    /// again, and counts then.
    fn uncount(&mut self, r: &Rejection) {
        if r.code == CLOSED_RECALL {
            self.index -= 1;
        }
    }

    /// Applies one already-parsed record.
    pub fn push(&mut self, record: &Record) -> Result<Applied, Rejection> {
        let index = self.index;
        self.index += 1;
        self.apply(index, record).inspect_err(|r| self.uncount(r))
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
                if self.closed_to_store {
                    s.start_leaving();
                }
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
        let s = session_mut!(self.sessions, env.session_id.as_str());
        let result = s.ignored(env, fingerprint(&ev.wire));
        if result.is_ok() && !self.full_history {
            s.retire(None, None, env.root_run_id.as_deref());
            if self.closed_to_store {
                s.start_leaving();
            }
        }
        if result.is_err() && is_new_session {
            self.sessions.remove(env.session_id.as_str());
        }
        result
    }

    fn authority_in(&mut self, ev: &AuthorityEvent) -> R<Applied> {
        let env = &ev.envelope;
        let s = session_mut!(self.sessions, env.session_id.as_str());
        let fp = fingerprint(&ev.wire);
        if let Some(dup) = dedup(&s.seen, &env.event_id, fp)? {
            return Ok(dup);
        }
        if let Some(skip) = s.check_position(env)? {
            return Ok(skip);
        }
        s.gate(closed_store::named(env, Some(&ev.payload)))?;
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
