//! Watch events (§8): deduplicated per workspace or session, and each
//! scope's revision never regresses nor runs ahead of the session's
//! authority.

use super::*;

impl Checker {
    pub(super) fn watch(&mut self, w: &crate::model::WatchEvent) -> R<Applied> {
        use crate::model::WatchPayload as W;
        let fp = fingerprint(&w.wire);
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
}
