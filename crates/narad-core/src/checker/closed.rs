//! A session's closed history, compacted: runs that reached a terminal
//! (with the run-tree head and packed graph kept under their id), and
//! finished tool calls. Later rules still read all of it (a reused run or tool id is
//! refused, an event of a closed run is refused by its root, workflow and
//! state, a stop or child names a closed run, a graph record names a closed
//! root, an ignored event still advances a closed root's journal), and so
//! do the host reads and `state_json`, which render closed runs exactly as
//! the open form did. So nothing is dropped: each record is packed into
//! one byte arena per kind instead of a struct of strings and sets.
//! Each kind is one [`Arena`].

use super::arena::{put_str, put_varint, take_str, varint, Arena};
use super::closed_store::ClosedKind;
use super::derived::Derived;
use super::session::Session;
use super::{Run, RunState};
use crate::graph::RunGraph;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// A closed session's history: see the module docs.
#[derive(Clone, Default)]
pub(super) struct Closed {
    /// runId -> packed [`ClosedRun`], then the run-tree head and packed
    /// graph kept under that id, if any.
    pub runs: Arena,
    /// toolCallId -> the owning runId (the call is finished).
    pub tools: Arena,
}

/// A closed run, borrowed from its packed record.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClosedRun<'a> {
    pub root: &'a str,
    pub parent: Option<&'a str>,
    pub workflow: Option<&'a str>,
    pub client_executor: Option<&'a str>,
    pub state: RunState,
    pub stop_requested: bool,
}

const STOP: u8 = 4;
const ROOT_SELF: u8 = 8;
const PARENT: u8 = 16;
const WORKFLOW: u8 = 32;
const CLIENT: u8 = 64;
/// A tail follows the strings: `[varint head + 1 or 0][varint graph
/// length + 1 or 0][graph]`.
const TAIL: u8 = 128;

/// A closed run's record: the run, and the head and graph under its id.
struct Record<'a> {
    run: ClosedRun<'a>,
    head: Option<u64>,
    graph: Option<&'a [u8]>,
    /// Length of the run's part (without the tail).
    run_len: usize,
}

impl<'a> Record<'a> {
    fn parse(id: &'a str, b: &'a [u8]) -> Option<Self> {
        let (run, mut at) = ClosedRun::unpack(id, b)?;
        let run_len = at;
        let (mut head, mut graph) = (None, None);
        if b.first()? & TAIL != 0 {
            head = varint(b, &mut at)?.checked_sub(1).map(|h| h as u64);
            if let Some(n) = varint(b, &mut at)?.checked_sub(1) {
                graph = Some(b.get(at..at.checked_add(n)?)?);
            }
        }
        Some(Self {
            run,
            head,
            graph,
            run_len,
        })
    }

    /// Its bytes `b` with this head and graph.
    fn encode(b: &[u8], run_len: usize, head: Option<u64>, graph: Option<&[u8]>) -> Vec<u8> {
        let mut out = b.get(..run_len).unwrap_or_default().to_vec();
        let tail = head.is_some() || graph.is_some();
        if let Some(f) = out.first_mut() {
            *f &= !TAIL;
            if tail {
                *f |= TAIL;
            }
        }
        if tail {
            put_varint(&mut out, head.map_or(0, |h| h.saturating_add(1)));
            put_varint(&mut out, graph.map_or(0, |g| g.len() as u64 + 1));
            out.extend_from_slice(graph.unwrap_or_default());
        }
        out
    }
}

impl<'a> ClosedRun<'a> {
    fn pack(id: &str, run: &Run) -> Option<Vec<u8>> {
        let state = match run.state {
            RunState::Finished => 0,
            RunState::Error => 1,
            RunState::Cancelled => 2,
            RunState::Running | RunState::Paused => return None,
        };
        let mut flags = state;
        flags |= if run.stop_requested { STOP } else { 0 };
        flags |= if run.root == id { ROOT_SELF } else { 0 };
        flags |= if run.parent.is_some() { PARENT } else { 0 };
        flags |= if run.workflow.is_some() { WORKFLOW } else { 0 };
        flags |= if run.client_executor.is_some() {
            CLIENT
        } else {
            0
        };
        let mut out = vec![flags];
        if run.root != id {
            put_str(&mut out, &run.root);
        }
        for s in [&run.parent, &run.workflow, &run.client_executor]
            .into_iter()
            .flatten()
        {
            put_str(&mut out, s);
        }
        Some(out)
    }

    /// The run and the offset where its part of the record ends.
    fn unpack(id: &'a str, b: &'a [u8]) -> Option<(Self, usize)> {
        let flags = *b.first()?;
        let mut at = 1;
        let root = if flags & ROOT_SELF != 0 {
            id
        } else {
            take_str(b, &mut at)?
        };
        let mut opt = |bit: u8| -> Option<Option<&'a str>> {
            if flags & bit == 0 {
                Some(None)
            } else {
                take_str(b, &mut at).map(Some)
            }
        };
        let run = Self {
            root,
            parent: opt(PARENT)?,
            workflow: opt(WORKFLOW)?,
            client_executor: opt(CLIENT)?,
            state: match flags & 3 {
                0 => RunState::Finished,
                1 => RunState::Error,
                _ => RunState::Cancelled,
            },
            stop_requested: flags & STOP != 0,
        };
        Some((run, at))
    }

    /// The open form, as the full-history checker holds it.
    pub fn to_run(self) -> Run {
        Run {
            root: self.root.to_owned(),
            parent: self.parent.map(str::to_owned),
            workflow: self.workflow.map(str::to_owned),
            client_executor: self.client_executor.map(str::to_owned),
            state: self.state,
            stop_requested: self.stop_requested,
            open_pause: None,
            open_interrupt: None,
            open_children: BTreeSet::new(),
            open_tools: BTreeSet::new(),
        }
    }
}

/// A run, open or closed.
#[derive(Debug, Clone, Copy)]
pub(super) enum RunRef<'a> {
    Open(&'a Run),
    Closed(ClosedRun<'a>),
}

impl<'a> RunRef<'a> {
    pub fn root(&self) -> &'a str {
        match self {
            Self::Open(r) => &r.root,
            Self::Closed(c) => c.root,
        }
    }

    pub fn workflow(&self) -> Option<&'a str> {
        match self {
            Self::Open(r) => r.workflow.as_deref(),
            Self::Closed(c) => c.workflow,
        }
    }

    pub fn state(&self) -> RunState {
        match self {
            Self::Open(r) => r.state,
            Self::Closed(c) => c.state,
        }
    }

    pub fn stop_requested(&self) -> bool {
        match self {
            Self::Open(r) => r.stop_requested,
            Self::Closed(c) => c.stop_requested,
        }
    }

    pub fn client_executor(&self) -> Option<&'a str> {
        match self {
            Self::Open(r) => r.client_executor.as_deref(),
            Self::Closed(c) => c.client_executor,
        }
    }

    pub fn to_cow(self) -> Cow<'a, Run> {
        match self {
            Self::Open(r) => Cow::Borrowed(r),
            Self::Closed(c) => Cow::Owned(c.to_run()),
        }
    }
}

impl Session {
    /// The closed runs and tool calls, if any closed.
    pub(super) fn closed(&self) -> Option<&Closed> {
        self.closed.as_deref()
    }

    fn record(&self, id: &str) -> Option<Record<'_>> {
        let (id, payload) = self.closed()?.runs.get_keyed(id)?;
        Record::parse(id, payload)
    }

    /// Rewrites the tail of a closed run's record.
    fn set_tail(&mut self, id: &str, head: Option<u64>, graph: Option<&[u8]>) {
        let Some(b) = self.record(id).and_then(|r| {
            let b = self.closed()?.runs.get(id)?;
            Some(Record::encode(b, r.run_len, head, graph))
        }) else {
            return;
        };
        if let Some(c) = self.closed.as_deref_mut() {
            c.runs.replace(id, &b);
        }
        self.closed_changed(ClosedKind::Run, id);
    }

    /// A run, open or closed.
    pub(super) fn run_ref(&self, id: &str) -> Option<RunRef<'_>> {
        if let Some(r) = self.w().runs.get(id) {
            return Some(RunRef::Open(r));
        }
        self.record(id).map(|r| RunRef::Closed(r.run))
    }

    /// Whether the run reached a terminal and was compacted.
    pub(super) fn is_closed_run(&self, id: &str) -> bool {
        self.closed().is_some_and(|c| c.runs.get(id).is_some())
    }

    /// Whether any run started, open or closed (without listing them).
    pub(super) fn has_runs(&self) -> bool {
        self.w().runs.len() != 0
            || self.closed_runs_before()
            || self.closed().is_some_and(|c| !c.runs.is_empty())
    }

    /// Every run, open or closed, in id order.
    pub(super) fn all_runs(&self) -> Vec<(&str, RunRef<'_>)> {
        let mut v: Vec<(&str, RunRef<'_>)> = self
            .w()
            .runs
            .iter()
            .map(|(k, r)| (k.as_str(), RunRef::Open(r)))
            .collect();
        if let Some(c) = self.closed() {
            v.extend(c.runs.sorted().into_iter().filter_map(|(id, b)| {
                ClosedRun::unpack(id, b).map(|(r, _)| (id, RunRef::Closed(r)))
            }));
            v.sort_by(|a, b| a.0.cmp(b.0));
        }
        v
    }

    /// A tool call's run and whether it is still open.
    pub(super) fn tool_ref(&self, id: &str) -> Option<(&str, bool)> {
        if let Some(t) = self.w().tools.get(id) {
            return Some((&t.run, t.state == super::ToolState::Open));
        }
        let b = self.closed()?.tools.get(id)?;
        std::str::from_utf8(b).ok().map(|r| (r, false))
    }

    /// Every tool call, open or closed, in id order: `(id, run, open)`.
    pub(super) fn all_tools(&self) -> Vec<(&str, &str, bool)> {
        let mut v: Vec<(&str, &str, bool)> = self
            .w()
            .tools
            .iter()
            .map(|(k, t)| (k.as_str(), &*t.run, t.state == super::ToolState::Open))
            .collect();
        if let Some(c) = self.closed() {
            v.extend(
                c.tools
                    .sorted()
                    .into_iter()
                    .filter_map(|(id, b)| Some((id, std::str::from_utf8(b).ok()?, false))),
            );
            v.sort_by(|a, b| a.0.cmp(b.0));
        }
        v
    }

    /// The run-tree head of `root`, if any.
    pub(super) fn run_head(&self, root: &str) -> Option<u64> {
        if let Some(h) = self.w().run_heads.get(root) {
            return Some(*h);
        }
        self.record(root)?.head
    }

    /// Sets the run-tree head of `root` wherever it is held.
    pub(super) fn set_run_head(&mut self, root: &str, seq: u64) {
        if let Some(h) = self.w_mut().run_heads.get_mut(root) {
            *h = seq;
            return;
        }
        let graph = match self.record(root) {
            Some(r) if r.head.is_some() => r.graph.map(<[u8]>::to_vec),
            _ => {
                self.w_mut().run_heads.insert(root.to_owned(), seq);
                return;
            }
        };
        self.set_tail(root, Some(seq), graph.as_deref());
    }

    /// Every run-tree head, in key order.
    pub(super) fn all_heads(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self
            .w()
            .run_heads
            .iter()
            .map(|(k, h)| (k.as_str(), *h))
            .collect();
        if let Some(c) = self.closed() {
            v.extend(
                c.runs
                    .sorted()
                    .into_iter()
                    .filter_map(|(k, b)| Some((k, Record::parse(k, b)?.head?))),
            );
            v.sort_by(|a, b| a.0.cmp(b.0));
        }
        v
    }

    /// The derived graph of `root`, live or packed, wherever it is held.
    pub(super) fn derived_graph(&self, root: &str) -> Option<Cow<'_, RunGraph>> {
        if let Some(g) = self.w().derived.get(root) {
            return Some(g.graph(root));
        }
        let b = self.record(root)?.graph?;
        Some(Cow::Owned(
            Derived::Packed(b.into()).graph(root).into_owned(),
        ))
    }

    /// Every derived graph, in key order (packed ones as packed).
    pub(super) fn all_derived(&self) -> Vec<(&str, Cow<'_, Derived>)> {
        let mut v: Vec<(&str, Cow<'_, Derived>)> = self
            .w()
            .derived
            .iter()
            .map(|(k, d)| (k.as_str(), Cow::Borrowed(d)))
            .collect();
        if let Some(c) = self.closed() {
            v.extend(c.runs.sorted().into_iter().filter_map(|(k, b)| {
                let g = Record::parse(k, b)?.graph?;
                Some((k, Cow::Owned(Derived::Packed(g.into()))))
            }));
            v.sort_by(|a, b| a.0.cmp(b.0));
        }
        v
    }

    /// Moves a closed root's packed graph back into `derived`, for a step
    /// that changes it ([`Session::retire`] packs it away again).
    pub(super) fn revive_graph(&mut self, root: &str) {
        let Some((head, g)) = self
            .record(root)
            .and_then(|r| Some((r.head, Box::<[u8]>::from(r.graph?))))
        else {
            return;
        };
        self.set_tail(root, head, None);
        self.w_mut()
            .derived
            .insert(root.to_owned(), Derived::Packed(g));
    }

    /// Compacts what an accepted event closed: a terminal run (with the
    /// head and packed graph kept under its id), a finished tool call, and
    /// a closed root's head or graph after a step changed it. Leaves
    /// anything not in its final form as it is, so renderings never change.
    pub(super) fn retire(&mut self, run: Option<&str>, tool: Option<&str>, root: Option<&str>) {
        if let Some(id) = tool {
            let done = self
                .w()
                .tools
                .get(id)
                .filter(|t| t.state == super::ToolState::Finished)
                .map(|t| t.run.clone());
            if let Some(run) = done {
                self.w_mut().tools.remove(id);
                self.closed
                    .get_or_insert_with(Box::default)
                    .tools
                    .insert(id, run.as_bytes());
                self.closed_changed(ClosedKind::ToolCall, id);
            }
        }
        if let Some(id) = run {
            let packed = self.w().runs.get(id).and_then(|r| {
                let idle = r.open_pause.is_none()
                    && r.open_interrupt.is_none()
                    && r.open_children.is_empty()
                    && r.open_tools.is_empty();
                idle.then(|| ClosedRun::pack(id, r)).flatten()
            });
            if let Some(b) = packed {
                self.w_mut().runs.remove(id);
                // Settled before it is stored, so it is stored once.
                let b = self.settled(id, &b).unwrap_or(b);
                self.closed
                    .get_or_insert_with(Box::default)
                    .runs
                    .insert(id, &b);
                self.closed_changed(ClosedKind::Run, id);
            }
        }
        if let Some(root) = root {
            self.settle_root(root);
        }
        self.trim();
        if self.w().runs.len() == 0 {
            self.seen.shrink();
            if let Some(c) = self.closed.as_deref_mut() {
                c.runs.shrink();
                c.tools.shrink();
            }
        }
    }

    /// The record `b` of closed run `id` with the head and packed graph
    /// kept under its id moved into it (each in place of the record's
    /// own), which are no longer kept there; `None`, and nothing moved,
    /// when neither is kept or `b` is no run record.
    fn settled(&mut self, id: &str, b: &[u8]) -> Option<Vec<u8>> {
        let head = self.w().run_heads.get(id).copied();
        let packed_graph = matches!(self.w().derived.get(id), Some(Derived::Packed(_)));
        if head.is_none() && !packed_graph {
            return None;
        }
        let old = Record::parse(id, b)?;
        if head.is_some() {
            self.w_mut().run_heads.remove(id);
        }
        let graph = match packed_graph.then(|| self.w_mut().derived.remove(id)) {
            Some(Some(Derived::Packed(g))) => Some(g),
            _ => None,
        };
        Some(Record::encode(
            b,
            old.run_len,
            head.or(old.head),
            graph.as_deref().or(old.graph),
        ))
    }

    /// Moves the head and packed graph kept under `key` into the record of
    /// the closed run of that id.
    fn settle_root(&mut self, key: &str) {
        // An open root has no closed record to settle into (most calls:
        // every event of a running tree).
        if self.w().runs.contains_key(key) {
            return;
        }
        let Some(b) = self
            .closed()
            .and_then(|c| c.runs.get(key))
            .map(<[u8]>::to_vec)
        else {
            return;
        };
        if let Some(b) = self.settled(key, &b) {
            if let Some(c) = self.closed.as_deref_mut() {
                c.runs.replace(key, &b);
            }
            self.closed_changed(ClosedKind::Run, key);
        }
    }

    /// Compacts every terminal run and finished tool call, and moves into
    /// its record a head or packed graph held under a closed run's id
    /// (after a restore).
    pub(super) fn retire_all(&mut self) {
        let tools: Vec<String> = self.w().tools.iter().map(|(k, _)| k.clone()).collect();
        for t in &tools {
            self.retire(None, Some(t), None);
        }
        let runs: Vec<String> = self.w().runs.iter().map(|(k, _)| k.clone()).collect();
        for r in &runs {
            self.retire(Some(r), None, None);
        }
        let w = self.w();
        let heads = w.run_heads.iter().map(|(k, _)| k);
        let keys: Vec<String> = heads
            .chain(w.derived.iter().map(|(k, _)| k))
            .cloned()
            .collect();
        for k in keys {
            if self.is_closed_run(&k) {
                self.settle_root(&k);
            }
        }
        self.trim();
    }
}

impl Closed {
    /// Whether `b` is a closed record of `kind` for `id`, as a snapshot's
    /// arena would hold it (see [`Closed::read`]).
    pub(super) fn valid(kind: ClosedKind, id: &str, b: &[u8]) -> bool {
        match kind {
            ClosedKind::Run => {
                Record::parse(id, b).is_some_and(|r| r.graph.is_none_or(super::derived::parses))
            }
            ClosedKind::ToolCall => std::str::from_utf8(b).is_ok(),
            // Not an arena's: see `super::transcript_store`.
            ClosedKind::Transcript => false,
        }
    }

    /// Closed history from the snapshot form (each arena as
    /// [`Arena::write_live`] wrote it): the arenas as they are, after a
    /// check that every record, and the graph in it, parses (nothing is
    /// unpacked). `None` when one does not; `Some(None)` when both arenas
    /// are empty.
    pub(super) fn read(runs: &[u8], tools: &[u8]) -> Option<Option<Box<Self>>> {
        let runs = Arena::from_live(runs, |id, b| Self::valid(ClosedKind::Run, id, b))?;
        let tools = Arena::from_live(tools, |id, b| {
            b.is_ascii() || Self::valid(ClosedKind::ToolCall, id, b)
        })?;
        Some((!runs.is_empty() || !tools.is_empty()).then(|| Box::new(Self { runs, tools })))
    }
}
