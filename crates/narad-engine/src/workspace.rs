//! The workspace watch stream (§8.2): `session.created`,
//! `session.updated` and `session.archived` notices appended with a
//! revision the store keeps strictly increasing per workspace.

use bytes::Bytes;
use narad_store::{Batch, Store, StoreError};
use serde_json::json;

use crate::append::{retry, Attempt};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Action, Principal};

impl<S: Store + 'static> Engine<S> {
    /// A workspace watch event for `sid` at `revision`, or else at the one
    /// after the newest this engine knows for the workspace. A guess that is
    /// not newer is refused by the store with the current revision, which
    /// the caller retries after ([`Engine::append_watch`]), so no scan of
    /// the stream is needed.
    fn workspace_notice(
        &self,
        ws: &str,
        ty: &str,
        sid: &str,
        revision: Option<u64>,
    ) -> Result<narad_store::WatchWrite, EngineError> {
        let revision = revision.unwrap_or_else(|| {
            self.inner
                .workspace_revisions
                .lock()
                .map_or(0, |m| m.get(ws).copied().unwrap_or(0))
                + 1
        });
        let event_id = self.inner.ids.next_id("evt");
        let bytes = serde_json::to_vec(&json!({
            "type": ty, "protocolVersion": narad_core::PROTOCOL_VERSION,
            "eventId": event_id, "timestamp": timestamp(self.inner.clock.now()),
            "workspaceId": ws, "sessionId": sid, "revision": revision
        }))
        .map_err(|e| EngineError::InvalidCommand(e.to_string()))?;
        Ok(narad_store::WatchWrite {
            workspace_id: ws.to_owned(),
            event: narad_store::StoredWatch {
                event_id,
                revision,
                bytes: Bytes::from(bytes),
            },
        })
    }

    /// Appends `batch` plus a workspace watch event `ty` for `sid` (when
    /// the session has a workspace), moving the revision past another
    /// writer's when the store reports one. Returns the revision used.
    pub(crate) async fn append_watch(
        &self,
        batch: Batch,
        ws: Option<&str>,
        ty: &str,
        sid: &str,
    ) -> Result<u64, EngineError> {
        let mut revision = None;
        retry!(self, async {
            let mut b = batch.clone();
            let mut rev = 0;
            if let Some(ws) = ws {
                let w = self.workspace_notice(ws, ty, sid, revision)?;
                rev = w.event.revision;
                b.watch.push(w);
            }
            match self.append_resolving(b).await {
                Ok(_) => {
                    if let (Some(ws), Ok(mut m)) = (ws, self.inner.workspace_revisions.lock()) {
                        let known = m.entry(ws.to_owned()).or_default();
                        *known = (*known).max(rev);
                    }
                    Ok(Attempt::Done(rev))
                }
                // Another session of the workspace took that revision.
                Err(StoreError::RevisionRegression { current }) => {
                    revision = Some(current + 1);
                    Ok(Attempt::Again)
                }
                Err(e) => Err(e.into()),
            }
        })
    }

    /// Announces a change of a session on its workspace's watch stream:
    /// `session.updated`, or `session.archived` when `archived`.
    pub async fn announce_session(
        &self,
        p: &Principal,
        session_id: &str,
        archived: bool,
    ) -> Result<u64, EngineError> {
        let kind = if archived {
            "session.archived"
        } else {
            "session.updated"
        };
        self.authorize(
            p,
            Action::Write {
                session_id,
                event_type: kind,
            },
        )?;
        let ws =
            self.meta(session_id).await?.workspace_id.ok_or_else(|| {
                EngineError::InvalidCommand("the session has no workspace".into())
            })?;
        self.append_watch(Batch::default(), Some(&ws), kind, session_id)
            .await
    }

    /// A workspace's watch stream after `after` (a revision).
    pub async fn workspace_watch(
        &self,
        p: &Principal,
        workspace_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<narad_store::WatchPage, EngineError> {
        self.authorize(p, Action::ReadWorkspace { workspace_id })?;
        Ok(self
            .inner
            .store
            .read_watch(
                workspace_id,
                after,
                limit.min(self.inner.config.history_limit),
            )
            .await?)
    }
}
