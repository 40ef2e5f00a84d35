//! The derived graph of one run tree (§9.7) as the checker holds it: live
//! while its root run is open, packed once the root is terminal. A packed
//! graph is one byte string that stores each id once (a node's id is
//! `{kind}:{id}`, a run's label is its id, an edge names its nodes by
//! position), about a tenth of the live form. Nothing later changes a
//! closed tree's graph but a skipped event's cursor, so it is unpacked only
//! to be read or for that.

use crate::graph::{Edge, EdgeKind, Node, NodeKind, RunGraph};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Derived {
    Live(Box<RunGraph>),
    Packed(Box<[u8]>),
}

impl Derived {
    pub fn live(g: RunGraph) -> Self {
        Self::Live(Box::new(g))
    }

    /// The graph of the tree rooted at `root` (its key), unpacked if need be.
    pub fn graph(&self, root: &str) -> Cow<'_, RunGraph> {
        match self {
            Self::Live(g) => Cow::Borrowed(g),
            Self::Packed(b) => Cow::Owned(unpack(b, root).unwrap_or_default()),
        }
    }

    /// Runs `f` on the live graph, unpacking it first if need be (it then
    /// stays live until packed again).
    pub fn with_live<T>(&mut self, root: &str, f: impl FnOnce(&mut RunGraph) -> T) -> T {
        let mut g = match std::mem::replace(self, Self::Packed(Box::default())) {
            Self::Live(g) => g,
            Self::Packed(b) => Box::new(unpack(&b, root).unwrap_or_default()),
        };
        let out = f(&mut g);
        *self = Self::Live(g);
        out
    }

    pub fn is_packed(&self) -> bool {
        matches!(self, Self::Packed(_))
    }

    /// Packs the live graph of the tree rooted at `root` (one with history
    /// stays live).
    pub fn pack(&mut self, root: &str) {
        if let Self::Live(g) = self {
            if let Some(b) = pack(g, root) {
                *self = Self::Packed(b);
            }
        }
    }
}

impl fmt::Debug for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Live(g) => g.fmt(f),
            Self::Packed(b) => f.debug_tuple("Packed").field(b).finish(),
        }
    }
}

/// A session's derived graphs in their serde form (the graphs' own,
/// packed or not), for the checker's snapshot.
pub(crate) struct Graphs<'a>(pub Vec<(&'a str, Cow<'a, Derived>)>);

impl Serialize for Graphs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(root, d)| (root, d.graph(root))))
    }
}

impl<'de> Deserialize<'de> for Derived {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RunGraph::deserialize(d).map(Self::live)
    }
}

fn kind_code(k: NodeKind) -> (u8, &'static str) {
    match k {
        NodeKind::Run => (0, "run"),
        NodeKind::Tool => (1, "tool"),
        NodeKind::Interrupt => (2, "interrupt"),
    }
}

fn edge_code(k: EdgeKind) -> u8 {
    match k {
        EdgeKind::Child => 0,
        EdgeKind::Tool => 1,
        EdgeKind::Interrupt => 2,
    }
}

fn put_num(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// Node states written as one byte (0: a string follows).
const STATES: [&str; 8] = [
    "running",
    "paused",
    "finished",
    "error",
    "cancelled",
    "open",
    "success",
    "failure",
];

fn put_state(out: &mut Vec<u8>, state: &str) {
    match STATES.iter().position(|s| *s == state) {
        Some(i) => out.push(i as u8 + 1),
        None => {
            out.push(0);
            put_str(out, state);
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_num(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The packed bytes; `None` when the graph keeps history or is not of the
/// canonical shape (then it stays live, so nothing is ever lost).
fn pack(g: &RunGraph, key: &str) -> Option<Box<[u8]>> {
    let (root, nodes, edges, revision, cursor) = g.parts()?;
    if root != key {
        return None;
    }
    let mut out = Vec::new();
    put_num(&mut out, revision);
    put_num(&mut out, cursor);
    put_num(&mut out, nodes.len() as u64);
    for n in nodes {
        let (code, prefix) = kind_code(n.kind);
        let id = n.id.strip_prefix(prefix)?.strip_prefix(':')?;
        // Bit 2: the label is the id; bit 3: the node has a runId; bit 4:
        // the id is the root's; bit 5: the runId is the root.
        let same_label = n.label == id;
        let id_root = id == root;
        let run_root = n.run_id.as_deref() == Some(root);
        let flags = code
            | (u8::from(same_label) << 2)
            | (u8::from(n.run_id.is_some()) << 3)
            | (u8::from(id_root) << 4)
            | (u8::from(run_root) << 5);
        out.push(flags);
        if !id_root {
            put_str(&mut out, id);
        }
        if !same_label {
            put_str(&mut out, &n.label);
        }
        put_state(&mut out, &n.state);
        if let (Some(r), false) = (&n.run_id, run_root) {
            put_str(&mut out, r);
        }
    }
    put_num(&mut out, edges.len() as u64);
    for e in edges {
        // Through the graph's index: a scan per edge made packing a large
        // tree quadratic.
        let (from, to) = (g.find(&e.from)?, g.find(&e.to)?);
        let id = (e.id.strip_prefix(e.kind.as_str()))
            .and_then(|r| r.strip_prefix(':')?.strip_prefix(e.from.as_str()))
            .and_then(|r| r.strip_prefix("->"));
        if id != Some(e.to.as_str()) {
            return None;
        }
        out.push(edge_code(e.kind));
        put_num(&mut out, from as u64);
        put_num(&mut out, to as u64);
    }
    Some(out.into_boxed_slice())
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    fn num(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
    }

    fn state(&mut self) -> Option<&'a [u8]> {
        match self.byte()? {
            0 => self.text(),
            i => STATES.get(usize::from(i - 1)).map(|s| s.as_bytes()),
        }
    }

    /// A string's bytes, not yet checked as UTF-8 (the caller decides
    /// whether it needs to).
    fn text(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.num()?).ok()?;
        let (s, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        Some(s)
    }
}

/// One packed node, borrowed from the bytes (and the root's id); its
/// strings are not yet checked as UTF-8.
struct PackedNode<'a> {
    kind: NodeKind,
    prefix: &'static str,
    id: &'a [u8],
    label: &'a [u8],
    state: &'a [u8],
    run_id: Option<&'a [u8]>,
}

impl PackedNode<'_> {
    /// The node, unless one of its strings is not UTF-8.
    fn to_node(&self) -> Option<Node> {
        let text = |s| std::str::from_utf8(s).ok();
        Some(Node {
            id: crate::graph::joined(&[self.prefix, ":", text(self.id)?]),
            kind: self.kind,
            label: text(self.label)?.to_owned(),
            state: text(self.state)?.to_owned(),
            run_id: match self.run_id {
                Some(r) => Some(text(r)?.to_owned()),
                None => None,
            },
        })
    }

    /// Whether every string of the node is UTF-8.
    fn is_text(&self) -> bool {
        [
            Some(self.id),
            Some(self.label),
            Some(self.state),
            self.run_id,
        ]
        .into_iter()
        .flatten()
        .all(|s| std::str::from_utf8(s).is_ok())
    }
}

/// Reads packed bytes without building anything: `(revision, cursor)`,
/// each node to `node` and each edge, its nodes by position (in range),
/// to `edge`. `None` where the bytes do not parse.
fn walk<'a>(
    b: &'a [u8],
    root: &'a [u8],
    mut node: impl FnMut(PackedNode<'a>),
    mut edge: impl FnMut(EdgeKind, usize, usize),
) -> Option<(u64, u64)> {
    let mut r = Reader(b);
    let (revision, cursor) = (r.num()?, r.num()?);
    let nodes = usize::try_from(r.num()?).ok()?;
    for _ in 0..nodes {
        let flags = r.byte()?;
        let (kind, prefix) = match flags & 3 {
            0 => (NodeKind::Run, "run"),
            1 => (NodeKind::Tool, "tool"),
            _ => (NodeKind::Interrupt, "interrupt"),
        };
        let id = if flags & 16 != 0 { root } else { r.text()? };
        let label = if flags & 4 != 0 { id } else { r.text()? };
        let state = r.state()?;
        let run_id = match (flags & 8 != 0, flags & 32 != 0) {
            (false, _) => None,
            (true, true) => Some(root),
            (true, false) => Some(r.text()?),
        };
        node(PackedNode {
            kind,
            prefix,
            id,
            label,
            state,
            run_id,
        });
    }
    for _ in 0..usize::try_from(r.num()?).ok()? {
        let kind = match r.byte()? {
            0 => EdgeKind::Child,
            1 => EdgeKind::Tool,
            _ => EdgeKind::Interrupt,
        };
        let from = usize::try_from(r.num()?).ok().filter(|&i| i < nodes)?;
        let to = usize::try_from(r.num()?).ok().filter(|&i| i < nodes)?;
        edge(kind, from, to);
    }
    Some((revision, cursor))
}

/// Whether packed graph bytes parse (a restored snapshot's are checked
/// before they are installed), without building the graph.
pub(crate) fn parses(b: &[u8]) -> bool {
    // All ASCII (the usual case: ids, small numbers), every string in it
    // is UTF-8, and no node needs checking on its own: that was a tenth of
    // a cold hydrate of a long session.
    let ascii = b.is_ascii();
    let mut text = true;
    let shaped = walk(b, b"", |n| text &= ascii || n.is_text(), |_, _, _| {});
    shaped.is_some() && text
}

fn unpack(b: &[u8], root: &str) -> Option<RunGraph> {
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    // A string that is not UTF-8 refuses the graph (after the walk).
    let mut bad = false;
    let (revision, cursor) = walk(
        b,
        root.as_bytes(),
        |n| match n.to_node() {
            Some(node) => nodes.push(node),
            None => bad = true,
        },
        |kind, from, to| links.push((kind, from, to)),
    )?;
    if bad {
        return None;
    }
    let mut edges = Vec::with_capacity(links.len());
    for (kind, from, to) in links {
        let (from, to): (&Node, &Node) = (nodes.get(from)?, nodes.get(to)?);
        edges.push(Edge {
            id: crate::graph::joined(&[kind.as_str(), ":", &from.id, "->", &to.id]),
            kind,
            from: from.id.clone(),
            to: to.id.clone(),
        });
    }
    Some(RunGraph::from_parts(
        root.to_owned(),
        nodes,
        edges,
        revision,
        cursor,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Parsed, Record, Validator};

    fn graph(lines: &[&str]) -> RunGraph {
        let mut g = RunGraph::new("r");
        for (i, body) in lines.iter().enumerate() {
            let n = i + 1;
            let line = format!(
                r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},"rootRunId":"r","sequence":{n},{body}}}"#
            );
            if let Ok(Parsed::Record {
                record: Record::Authority(ev),
                ..
            }) = Validator::default().parse(line.as_bytes())
            {
                assert!(g.apply(&ev).is_ok(), "{body}");
            } else {
                panic!("{body}");
            }
        }
        g
    }

    #[test]
    fn a_packed_graph_unpacks_to_the_same_graph() {
        let g = graph(&[
            r#""runId":"r","type":"run.started""#,
            r#""runId":"c","parentRunId":"r","type":"run.started""#,
            r#""runId":"c","type":"tool.call.started","toolCallId":"t","toolName":"search","executor":"backend","args":{}"#,
            r#""runId":"c","type":"tool.call.finished","toolCallId":"t","outcome":"success","response":{}"#,
            r#""runId":"r","type":"interrupt.requested","interruptId":"i","waitId":"w","kind":"approval","actions":["ok"]"#,
            r#""runId":"r","type":"run.paused","waitId":"w","reason":"interrupt","resumeMode":"command","interruptId":"i""#,
            r#""runId":"r","type":"interrupt.resolved","interruptId":"i","waitId":"w","decision":"ok""#,
            r#""runId":"r","type":"run.resumed","waitId":"w""#,
            r#""runId":"c","type":"run.finished""#,
            r#""runId":"r","type":"run.finished""#,
        ]);
        assert_eq!((g.nodes().len(), g.edges().len()), (4, 3));
        let mut d = Derived::live(g.clone());
        d.pack("r");
        assert!(d.is_packed());
        let Derived::Packed(b) = &d else {
            panic!("packed")
        };
        assert!(parses(b));
        for cut in 0..b.len() {
            assert!(!parses(&b[..cut]) && unpack(&b[..cut], "r").is_none());
        }
        assert_eq!(*d.graph("r"), g);
        d.with_live("r", |g| g.skip_to(20));
        assert_eq!(d.graph("r").cursor(), 20);
        // Packed only under its own root.
        let mut other = Derived::live(g);
        other.pack("x");
        assert!(!other.is_packed());
    }

    /// Packing names edges by node position and spells their ids again
    /// on unpack, so an edge whose id is spelled otherwise stays live.
    #[test]
    fn a_graph_with_an_edge_id_spelled_otherwise_is_not_packed() {
        let g = graph(&[
            r#""runId":"r","type":"run.started""#,
            r#""runId":"r","type":"tool.call.started","toolCallId":"t","toolName":"search","executor":"backend","args":{}"#,
            r#""runId":"r","type":"run.finished""#,
        ]);
        let mut d = Derived::live(g.clone());
        d.pack("r");
        assert!(d.is_packed());
        for id in [
            "tool:run:r->tool:t ",
            "tool:run:r->tool:",
            "tool:run:r-tool:t",
            "tool:run:r",
            "",
        ] {
            let mut edges = g.edges().to_vec();
            edges[0].id = id.to_owned();
            let bad = RunGraph::from_parts(
                "r".into(),
                g.nodes().to_vec(),
                edges,
                g.revision(),
                g.cursor(),
            );
            let mut d = Derived::live(bad);
            d.pack("r");
            assert!(!d.is_packed(), "{id}");
        }
    }

    /// A tree past the graph's index threshold: child runs with tool
    /// calls, each edge named by node position through the index.
    #[test]
    fn a_large_packed_graph_unpacks_to_the_same_graph() {
        let mut lines = vec![r#""runId":"r","type":"run.started""#.to_owned()];
        for i in 0..300 {
            lines.push(format!(
                r#""runId":"c{i}","parentRunId":"r","type":"run.started""#
            ));
            lines.push(format!(
                r#""runId":"c{i}","type":"tool.call.started","toolCallId":"t{i}","toolName":"search","executor":"backend","args":{{}}"#
            ));
        }
        for i in 0..300 {
            lines.push(format!(
                r#""runId":"c{i}","type":"tool.call.finished","toolCallId":"t{i}","outcome":"success","response":{{}}"#
            ));
            lines.push(format!(r#""runId":"c{i}","type":"run.finished""#));
        }
        lines.push(r#""runId":"r","type":"run.finished""#.to_owned());
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let g = graph(&lines);
        assert_eq!((g.nodes().len(), g.edges().len()), (601, 600));
        let mut d = Derived::live(g.clone());
        d.pack("r");
        assert!(d.is_packed());
        assert_eq!(*d.graph("r"), g);
    }

    #[test]
    fn a_packed_graph_with_text_that_is_not_utf8_does_not_parse() {
        let g = graph(&[
            r#""runId":"r","type":"run.started""#,
            r#""runId":"r","type":"tool.call.started","toolCallId":"t","toolName":"sûr","executor":"backend","args":{}"#,
        ]);
        let mut d = Derived::live(g.clone());
        d.pack("r");
        let Derived::Packed(b) = &d else {
            panic!("packed")
        };
        // Not ASCII, so each string is checked on its own.
        assert!(!b.is_ascii() && parses(b));
        assert_eq!(unpack(b, "r").as_ref(), Some(&g));
        let at = b.windows(2).position(|w| w == "û".as_bytes()).unwrap();
        let mut bad = b.to_vec();
        bad[at + 1] = 0xff;
        assert!(!parses(&bad) && unpack(&bad, "r").is_none());
    }
}
