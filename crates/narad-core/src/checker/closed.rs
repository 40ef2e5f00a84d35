//! A session's closed history, compacted: runs that reached a terminal
//! (with the run-tree head and packed graph kept under their id), and
//! finished tool calls. Later rules still read all of it (a reused run or tool id is
//! refused, an event of a closed run is refused by its root, workflow and
//! state, a stop or child names a closed run, a graph record names a closed
//! root, an ignored event still advances a closed root's journal), and so
//! do the host reads and `state_json`, which render closed runs exactly as
//! the open form did. So nothing is dropped: each record is packed into
//! one byte arena per kind instead of a struct of strings and sets.
//!
//! An arena record is `[alive][varint id length][id][varint length][payload]`.
//! Up to [`LINEAR`] records are found by a scan; past that through an index
//! from the id's hash to the record's offset.

use super::derived::Derived;
use super::seen::{id_hash, Pass};
use super::session::Session;
use super::{Run, RunState};
use crate::graph::RunGraph;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasherDefault;

/// Records found by a linear scan (no index allocated).
const LINEAR: u32 = 16;

type Index = HashMap<u64, u32, BuildHasherDefault<Pass>>;

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint(b: &[u8], at: &mut usize) -> Option<usize> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let x = *b.get(*at)?;
        *at += 1;
        n |= u64::from(x & 0x7f) << shift;
        if x < 0x80 {
            return usize::try_from(n).ok();
        }
    }
    None
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn take<'a>(b: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let n = varint(b, at)?;
    let s = b.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(s)
}

fn take_str<'a>(b: &'a [u8], at: &mut usize) -> Option<&'a str> {
    std::str::from_utf8(take(b, at)?).ok()
}

/// id hash -> record offset.
#[derive(Clone, Default)]
struct Indexed {
    map: Index,
    /// Two ids share a hash: a miss in the index then falls back to a scan.
    collided: bool,
}

/// Records keyed by id in one byte string.
#[derive(Clone, Default)]
pub(super) struct Arena {
    bytes: Vec<u8>,
    live: u32,
    dead_bytes: u32,
    index: Option<Box<Indexed>>,
}

/// One record: its offset, id and payload.
struct Entry<'a> {
    at: usize,
    id: &'a str,
    payload: &'a [u8],
    alive: bool,
    end: usize,
}

impl Arena {
    fn entry(&self, at: usize) -> Option<Entry<'_>> {
        let b = &self.bytes;
        let alive = *b.get(at)? == 1;
        let mut p = at + 1;
        let id = take_str(b, &mut p)?;
        let n = varint(b, &mut p)?;
        let payload = b.get(p..p.checked_add(n)?)?;
        Some(Entry {
            at,
            id,
            payload,
            alive,
            end: p + n,
        })
    }

    fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            let e = self.entry(at)?;
            at = e.end;
            Some(e)
        })
        .filter(|e| e.alive)
    }

    fn find(&self, id: &str) -> Option<Entry<'_>> {
        if let Some(index) = &self.index {
            if let Some(e) = index
                .map
                .get(&id_hash(id))
                .and_then(|&at| self.entry(at as usize))
                .filter(|e| e.alive && e.id == id)
            {
                return Some(e);
            }
            if !index.collided {
                return None;
            }
        }
        self.entries().find(|e| e.id == id)
    }

    pub fn get(&self, id: &str) -> Option<&[u8]> {
        self.find(id).map(|e| e.payload)
    }

    /// Adds a record for an id not present.
    pub fn insert(&mut self, id: &str, payload: &[u8]) {
        let at = self.bytes.len();
        self.bytes.push(1);
        put_str(&mut self.bytes, id);
        put_varint(&mut self.bytes, payload.len() as u64);
        self.bytes.extend_from_slice(payload);
        self.live += 1;
        self.index_one(id, at);
    }

    fn index_one(&mut self, id: &str, at: usize) {
        if let Some(index) = &mut self.index {
            let slot = index.map.entry(id_hash(id)).or_insert(at as u32);
            if *slot != at as u32 {
                index.collided = true;
            }
        } else if self.live > LINEAR {
            self.reindex();
        }
    }

    fn reindex(&mut self) {
        let mut index = Indexed {
            // Sized once: growing rehashed every entry again.
            map: Index::with_capacity_and_hasher(self.live as usize, Default::default()),
            collided: false,
        };
        let mut all: Vec<(u64, u32)> = self
            .entries()
            .map(|e| (id_hash(e.id), e.at as u32))
            .collect();
        // In the order of the table's buckets (the low bits of the hash
        // pick one): the inserts then walk the table instead of missing
        // the cache each. Only speed depends on it.
        let mask = (index.map.capacity() / 7 * 8).next_power_of_two() as u64 - 1;
        all.sort_unstable_by_key(|&(h, at)| (h & mask, at));
        for (h, at) in all {
            let slot = index.map.entry(h).or_insert(at);
            index.collided |= *slot != at;
        }
        self.index = (self.live > LINEAR).then(|| Box::new(index));
    }

    /// Removes the record of `id`, returning its payload.
    pub fn remove(&mut self, id: &str) -> Option<Vec<u8>> {
        let (at, payload, size) = {
            let e = self.find(id)?;
            (e.at, e.payload.to_vec(), e.end - e.at)
        };
        if let Some(b) = self.bytes.get_mut(at) {
            *b = 0;
        }
        self.live -= 1;
        self.dead_bytes = self.dead_bytes.saturating_add(size as u32);
        if let Some(index) = &mut self.index {
            if index.map.get(&id_hash(id)) == Some(&(at as u32)) {
                index.map.remove(&id_hash(id));
            }
        }
        if self.dead_bytes as usize * 2 > self.bytes.len() {
            self.compact();
        }
        Some(payload)
    }

    /// Replaces the payload of `id` (present).
    pub fn replace(&mut self, id: &str, payload: &[u8]) {
        if self.remove(id).is_some() {
            self.insert(id, payload);
        }
    }

    fn compact(&mut self) {
        let mut out = Vec::with_capacity(self.bytes.len().saturating_sub(self.dead_bytes as usize));
        for e in self.entries() {
            out.extend_from_slice(self.bytes.get(e.at..e.end).unwrap_or_default());
        }
        self.bytes = out;
        self.dead_bytes = 0;
        self.reindex();
    }

    /// Returns spare capacity (the session is idle) once it exceeds the
    /// records: below that it is what the vector's doubling left, and
    /// trimming it after every run made the next run's first insert grow
    /// the arena again (a realloc, a page-table move for a large one).
    pub fn shrink(&mut self) {
        if self.bytes.capacity() / 2 > self.bytes.len() {
            self.bytes.shrink_to_fit();
        }
    }

    /// Whether any live record is held.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Appends the live records as they are laid out, dead ones dropped:
    /// the snapshot form, read back by [`Arena::from_live`].
    pub fn write_live(&self, out: &mut Vec<u8>) {
        if self.dead_bytes == 0 {
            out.extend_from_slice(&self.bytes);
            return;
        }
        for e in self.entries() {
            out.extend_from_slice(self.bytes.get(e.at..e.end).unwrap_or_default());
        }
    }

    /// The arena [`Arena::write_live`] wrote, its index rebuilt. `None`
    /// unless every byte belongs to a live record whose id and payload
    /// `valid` accepts, so a corrupt snapshot is refused, not read.
    pub fn from_live(bytes: &[u8], valid: impl Fn(&str, &[u8]) -> bool) -> Option<Self> {
        // Offsets are held as u32.
        if u32::try_from(bytes.len()).is_err() {
            return None;
        }
        let mut a = Self {
            bytes: bytes.to_vec(),
            ..Self::default()
        };
        let mut at = 0;
        while at < a.bytes.len() {
            let e = a.entry(at)?;
            if !e.alive || !valid(e.id, e.payload) {
                return None;
            }
            at = e.end;
            a.live += 1;
        }
        a.reindex();
        Some(a)
    }

    /// Every live record, in id order.
    pub fn sorted(&self) -> Vec<(&str, &[u8])> {
        let mut v: Vec<(&str, &[u8])> = self.entries().map(|e| (e.id, e.payload)).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(b.0));
        v
    }
}

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
        let e = self.closed()?.runs.find(id)?;
        Record::parse(e.id, e.payload)
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
        self.w().runs.len() != 0 || self.closed().is_some_and(|c| !c.runs.is_empty())
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
                self.closed
                    .get_or_insert_with(Box::default)
                    .runs
                    .insert(id, &b);
                self.settle_root(id);
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

    /// Moves the head and packed graph kept under `key` into the record of
    /// the closed run of that id.
    fn settle_root(&mut self, key: &str) {
        // An open root has no closed record to settle into (most calls:
        // every event of a running tree).
        if self.w().runs.contains_key(key) {
            return;
        }
        let head = self.w().run_heads.get(key).copied();
        let graph = match self.w().derived.get(key) {
            Some(Derived::Packed(b)) => Some(b.clone()),
            _ => None,
        };
        if head.is_none() && graph.is_none() {
            return;
        }
        let Some((old_head, old_graph)) = self
            .record(key)
            .map(|r| (r.head, r.graph.map(<[u8]>::to_vec)))
        else {
            return;
        };
        let graph = graph.map(Vec::from).or(old_graph);
        self.set_tail(key, head.or(old_head), graph.as_deref());
        if head.is_some() {
            self.w_mut().run_heads.remove(key);
        }
        if matches!(self.w().derived.get(key), Some(Derived::Packed(_))) {
            self.w_mut().derived.remove(key);
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

    /// Installs closed history from the snapshot form (each arena as
    /// [`Arena::write_live`] wrote it): the arenas as they are, after a
    /// check that every record, and the graph in it, parses (nothing is
    /// unpacked). `None` when one does not.
    pub(super) fn read_closed(&mut self, runs: &[u8], tools: &[u8]) -> Option<()> {
        let runs = Arena::from_live(runs, |id, b| {
            Record::parse(id, b).is_some_and(|r| r.graph.is_none_or(super::derived::parses))
        })?;
        let tools = Arena::from_live(tools, |_, b| std::str::from_utf8(b).is_ok())?;
        self.closed =
            (!runs.is_empty() || !tools.is_empty()).then(|| Box::new(Closed { runs, tools }));
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_finds_replaces_and_removes_past_its_index_threshold() {
        let mut a = Arena::default();
        for i in 0..100u32 {
            a.insert(&format!("id-{i}"), &i.to_le_bytes());
            assert_eq!(a.index.is_some(), i >= LINEAR);
        }
        for i in 0..100u32 {
            assert_eq!(a.get(&format!("id-{i}")), Some(&i.to_le_bytes()[..]));
        }
        assert_eq!(a.get("id-100"), None);
        for i in (0..100u32).step_by(2) {
            assert!(a.remove(&format!("id-{i}")).is_some());
        }
        for i in (1..100u32).step_by(2) {
            a.replace(&format!("id-{i}"), b"x");
        }
        for i in 0..100u32 {
            let want: Option<&[u8]> = (i % 2 == 1).then_some(b"x");
            assert_eq!(a.get(&format!("id-{i}")), want);
        }
        let sorted = a.sorted();
        assert_eq!(sorted.len(), 50);
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        // Dead records were compacted away.
        assert!(a.bytes.len() < 50 * 12);
    }
}
