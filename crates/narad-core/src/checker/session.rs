//! One session's reduced state, laid out so that a finished session with
//! no open work stays small: what every session with a run needs is
//! inline, the rest (conversation, documents, tools, workflows, graphs,
//! watch revisions, pending adjacency) sits behind one box allocated on
//! first use.
//!
//! The serde and `Debug` forms are those of the flat struct this replaced,
//! field for field, so `state_json`, snapshots and `debug_state` do not
//! depend on whether the box was ever allocated.

use super::closed::Closed;
use super::closed_store::Leaving;
use super::derived::Derived;
use super::seen::Seen;
use super::{Adjacency, Documents, GraphScope, Run, Slot, Tool, Transcript, Workflow};
use crate::small_map::SmallMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::LazyLock;

#[derive(Clone, Default)]
pub(super) struct Session {
    pub head: u64,
    /// Session position covered by the last transcript snapshot (§9.3).
    pub covered: u64,
    /// eventId hash -> fingerprint of the record's JSON value.
    pub seen: Seen,
    /// `seen` holds no eventId of the events at or before this position
    /// (0: it holds every one): a checker restored from
    /// [`super::Checker::snapshot_for_store`], whose host's store keeps
    /// them ([`super::Checker::recall`]).
    pub ids_before: u64,
    /// The active, or most recently started, top-level run (§9.2 visibility).
    pub last_top_run: Option<Box<str>>,
    /// The session slot: an active independent top-level run or workflow.
    /// Boxed: empty in every idle session.
    pub slot: Option<Box<Slot>>,
    /// Open runs and tool calls (all of them in a full-history checker):
    /// boxed, and freed once empty, so an idle session does not carry four
    /// empty maps.
    work: Option<Box<Work>>,
    extra: Option<Box<Extra>>,
    /// Closed runs and tool calls, compacted (none in a full-history checker).
    pub closed: Option<Box<Closed>>,
    /// What is to be handed to the host's store, and what it was left,
    /// when the session leaves closed history there
    /// ([`super::closed_store`]). Boxed: most sessions never do.
    pub leaving: Option<Box<Leaving>>,
}

/// Open work and what is kept per open run tree (closed runs keep theirs
/// in [`Closed`]).
#[derive(Clone, Default)]
pub(super) struct Work {
    pub run_heads: SmallMap<u64>,
    pub runs: SmallMap<Run>,
    pub tools: SmallMap<Tool>,
    /// The canonical graph derived from authority, per root run (§9.7).
    pub derived: SmallMap<Derived>,
}

impl Work {
    fn is_empty(&self) -> bool {
        self.run_heads.len() == 0
            && self.runs.len() == 0
            && self.tools.len() == 0
            && self.derived.len() == 0
    }
}

static NO_WORK: LazyLock<Work> = LazyLock::new(Work::default);

/// The parts of a session that many sessions never use.
#[derive(Clone, Default)]
pub(super) struct Extra {
    pub transcript: Transcript,
    pub documents: Documents,
    pub workflow_heads: SmallMap<u64>,
    pub workflows: SmallMap<Workflow>,
    pub pending: Vec<Adjacency>,
    pub graphs: SmallMap<GraphScope>,
    pub watch: SmallMap<u64>,
}

static EMPTY: LazyLock<Extra> = LazyLock::new(Extra::default);

impl Extra {
    fn is_unused(&self) -> bool {
        let d = &self.documents;
        self.transcript.is_empty()
            && d.documents.is_empty()
            && d.views.is_empty()
            && d.attachments.is_empty()
            && d.artifacts.is_empty()
            && self.workflow_heads.len() == 0
            && self.workflows.len() == 0
            && self.pending.is_empty()
            && self.graphs.len() == 0
            && self.watch.len() == 0
    }
}

impl Session {
    /// The rarely used parts (empty when never used).
    pub fn x(&self) -> &Extra {
        self.extra.as_deref().unwrap_or(&EMPTY)
    }

    /// Frees the rarely used parts once nothing is left in them (a closed
    /// interrupt's adjacency entry, say), as a restore would.
    pub fn trim(&mut self) {
        if self.extra.as_deref().is_some_and(Extra::is_unused) {
            self.extra = None;
        }
        if self.work.as_deref().is_some_and(Work::is_empty) {
            self.work = None;
        }
    }

    /// Open work (empty when none).
    pub fn w(&self) -> &Work {
        self.work.as_deref().unwrap_or(&NO_WORK)
    }

    /// Open work, allocated on first use.
    pub fn w_mut(&mut self) -> &mut Work {
        self.work.get_or_insert_with(Box::default)
    }

    /// The rarely used parts, allocated on first use.
    pub fn x_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Packs the derived graphs of terminal root runs (after a restore).
    pub fn pack_closed_graphs(&mut self) {
        // A set: a restored long session has a graph per closed root, and a
        // linear `contains` per graph made restoring quadratic.
        let terminal: std::collections::HashSet<String> = self
            .w()
            .derived
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| self.run_ref(k).is_some_and(|r| r.state().is_terminal()))
            .collect();
        for (root, g) in self.w_mut().derived.values_mut() {
            if terminal.contains(root.as_str()) {
                g.pack(root);
            }
        }
    }

    fn view(&self) -> View<'_, Heads<'_>, Runs<'_>, Tools<'_>, &Transcript> {
        let x = self.x();
        self.view_with(Heads(self), Runs(self), Tools(self), &x.transcript)
    }

    /// The serde form of the open part only: run-tree heads, runs and tool
    /// calls not in [`Closed`] (the snapshot writes that as its arenas),
    /// and the transcript without its messages (the snapshot writes those
    /// as binary parts: `packed_messages/`, `reasoning_bytes.rs`). Deserializing it gives a
    /// session with no closed history and no messages.
    pub fn open_state(&self) -> impl Serialize + '_ {
        let w = self.w();
        self.view_with(&w.run_heads, &w.runs, &w.tools, EmptyTranscript)
    }

    fn view_with<H, R, T, X>(
        &self,
        run_heads: H,
        runs: R,
        tools: T,
        transcript: X,
    ) -> View<'_, H, R, T, X> {
        let x = self.x();
        View {
            head: self.head,
            covered: self.covered,
            seen: &self.seen,
            last_top_run: &self.last_top_run,
            transcript,
            documents: &x.documents,
            workflow_heads: &x.workflow_heads,
            run_heads,
            runs,
            tools,
            workflows: &x.workflows,
            slot: &self.slot,
            pending: &x.pending,
            graphs: &x.graphs,
            derived: AllDerived(self),
            watch: &x.watch,
        }
    }
}

/// The flat form, in the field order of the struct this replaced; the
/// run-tree heads, runs and tool calls are all of them (`state_json`,
/// `Debug`) or the open ones (the snapshot).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct View<'a, H, R, T, X> {
    head: u64,
    covered: u64,
    #[serde(skip)]
    seen: &'a Seen,
    last_top_run: &'a Option<Box<str>>,
    transcript: X,
    documents: &'a Documents,
    workflow_heads: &'a SmallMap<u64>,
    run_heads: H,
    runs: R,
    tools: T,
    workflows: &'a SmallMap<Workflow>,
    slot: &'a Option<Box<Slot>>,
    pending: &'a Vec<Adjacency>,
    graphs: &'a SmallMap<GraphScope>,
    #[serde(skip)]
    derived: AllDerived<'a>,
    watch: &'a SmallMap<u64>,
}

/// A transcript's serde form with no messages and no reasoning (`[]`
/// both: the snapshot keeps them in its binary part).
#[derive(Debug)]
struct EmptyTranscript;

impl Serialize for EmptyTranscript {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut t = s.serialize_struct("Transcript", 2)?;
        t.serialize_field("messages", &[] as &[super::Message])?;
        t.serialize_field("reasoning", &[] as &[super::Reasoning])?;
        t.end()
    }
}

/// The flat form, owned, for restoring.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Flat {
    head: u64,
    covered: u64,
    last_top_run: Option<Box<str>>,
    transcript: Transcript,
    documents: Documents,
    workflow_heads: SmallMap<u64>,
    run_heads: SmallMap<u64>,
    runs: SmallMap<Run>,
    tools: SmallMap<Tool>,
    workflows: SmallMap<Workflow>,
    slot: Option<Box<Slot>>,
    pending: Vec<Adjacency>,
    graphs: SmallMap<GraphScope>,
    watch: SmallMap<u64>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Named as before, so renderings do not depend on the layout.
        let mut d = f.debug_struct("Session");
        let v = self.view();
        d.field("head", &v.head)
            .field("covered", &v.covered)
            .field("seen", v.seen)
            .field("last_top_run", v.last_top_run)
            .field("transcript", v.transcript)
            .field("documents", v.documents)
            .field("workflow_heads", v.workflow_heads)
            .field("run_heads", &v.run_heads)
            .field("runs", &v.runs)
            .field("tools", &v.tools)
            .field("workflows", v.workflows)
            .field("slot", v.slot)
            .field("pending", v.pending)
            .field("graphs", v.graphs)
            .field("derived", &v.derived)
            .field("watch", v.watch)
            .finish()
    }
}

impl Serialize for Session {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.view().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Session {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = Flat::deserialize(d)?;
        let extra = Extra {
            transcript: f.transcript,
            documents: f.documents,
            workflow_heads: f.workflow_heads,
            workflows: f.workflows,
            pending: f.pending,
            graphs: f.graphs,
            watch: f.watch,
        };
        // Restored as it would have been built: no box for unused parts.
        let unused = extra.is_unused();
        let work = Work {
            run_heads: f.run_heads,
            runs: f.runs,
            tools: f.tools,
            derived: SmallMap::default(),
        };
        let mut s = Self {
            head: f.head,
            covered: f.covered,
            seen: Seen::default(),
            ids_before: 0,
            last_top_run: f.last_top_run,
            slot: f.slot,
            work: Some(Box::new(work)),
            extra: (!unused).then(|| Box::new(extra)),
            closed: None,
            leaving: None,
        };
        s.trim();
        Ok(s)
    }
}

/// The runs, open and closed, as one map in key order.
struct Runs<'a>(&'a Session);

impl Runs<'_> {
    fn entries(&self) -> impl Iterator<Item = (&str, std::borrow::Cow<'_, Run>)> {
        self.0.all_runs().into_iter().map(|(k, r)| (k, r.to_cow()))
    }
}

impl Serialize for Runs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.entries())
    }
}

impl fmt::Debug for Runs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries()).finish()
    }
}

/// The tool calls, open and finished, as one map in key order.
struct Tools<'a>(&'a Session);

impl Tools<'_> {
    fn entries(&self) -> impl Iterator<Item = (&str, Tool)> {
        self.0.all_tools().into_iter().map(|(k, run, open)| {
            let state = if open {
                super::ToolState::Open
            } else {
                super::ToolState::Finished
            };
            (
                k,
                Tool {
                    run: run.into(),
                    state,
                },
            )
        })
    }
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.entries())
    }
}

impl fmt::Debug for Tools<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries()).finish()
    }
}

/// The run-tree heads, of open and closed runs, as one map in key order.
struct Heads<'a>(&'a Session);

impl Serialize for Heads<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.all_heads())
    }
}

impl fmt::Debug for Heads<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.all_heads()).finish()
    }
}

/// The derived graphs, of open and closed roots, as one map in key order.
struct AllDerived<'a>(&'a Session);

impl fmt::Debug for AllDerived<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.all_derived()).finish()
    }
}
