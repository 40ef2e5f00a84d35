//! Hydrate records: transcript snapshots move the session cursor (§9.3);
//! graph snapshots and deltas are anchored to a started root or workflow,
//! never ahead of its journal, with revisions in order (§9.7), and, when
//! asked, equal to the canonical graph derived from authority.

use super::*;

impl Checker {
    pub(super) fn hydrate(&mut self, h: &crate::HydrateRecord) -> R<Applied> {
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
        if let (Some(root), Some(_)) = (&anchor.root_run_id, &anchor.source_run_cursor) {
            if let Some(s) = self.sessions.get_mut(anchor.session_id.as_str()) {
                s.gate([(super::ClosedKind::Run, root.as_str())])?;
            }
        }
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
