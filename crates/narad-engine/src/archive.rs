//! Commands on a session's host metadata: its labels and archiving. Each
//! rewrites the metadata record (conditional on the bytes read) and the
//! session's index entry in one batch guarded by the session head.

use std::collections::BTreeMap;

use narad_store::{Batch, Expect, SideSpace, Store, StoreError};

use crate::append::{retry, Attempt};
use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};
use crate::index::{event_time, SessionEntry};
use crate::journal::Meta;

/// The event type label changes are authorized as ([`Action::Write`]).
pub const LABEL_ACTION: &str = "narad.session.label";
/// The event type archiving is authorized as ([`Action::Write`]).
pub const ARCHIVE_ACTION: &str = "narad.session.archive";

impl<S: Store + 'static> Engine<S> {
    /// Replaces a session's host labels (the index filters on them).
    /// An archived session refuses it (`session_archived`).
    pub async fn set_labels(
        &self,
        p: &Principal,
        session_id: &str,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        crate::telemetry::traced("set_labels", session_id, async {
            self.authorize(
                p,
                Action::Write {
                    session_id,
                    event_type: LABEL_ACTION,
                },
            )?;
            self.rewrite_meta(session_id, None, |m| {
                if m.archived {
                    return Err(EngineError::SessionArchived);
                }
                m.labels = labels.clone();
                Ok(())
            })
            .await
        })
        .await
    }

    /// Archives a session: from now on every command on it is refused with
    /// `session_archived`, while reads, history and subscriptions work. It
    /// is announced on its workspace's watch stream (`session.archived`).
    /// A session with an active execution or an open interrupt cannot be
    /// archived (its work could never finish): `session_has_open_work`.
    /// Archiving an archived session changes nothing.
    pub async fn archive(&self, p: &Principal, session_id: &str) -> Result<(), EngineError> {
        crate::telemetry::traced("archive", session_id, async {
            self.authorize(
                p,
                Action::Write {
                    session_id,
                    event_type: ARCHIVE_ACTION,
                },
            )?;
            self.rewrite_meta(session_id, Some("session.archived"), |m| {
                m.archived = true;
                Ok(())
            })
            .await
        })
        .await
    }

    /// Rewrites the metadata with `change` and the index entry with it, in
    /// one batch guarded by the head and by the metadata's bytes; with
    /// `announce`, a watch event of that type joins the batch.
    async fn rewrite_meta(
        &self,
        session_id: &str,
        announce: Option<&str>,
        change: impl Fn(&mut Meta) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        retry!(self, async {
            if slot.is_none() {
                *slot = Some(self.hydrate(session_id).await?);
            }
            let Some(j) = slot.as_mut() else {
                return Ok(Attempt::Again);
            };
            let mut meta = j.meta.clone();
            change(&mut meta)?;
            if meta == j.meta {
                return Ok(Attempt::Done(()));
            }
            if meta.archived && !j.meta.archived && j.checker.slot(session_id).is_some() {
                return Err(EngineError::OpenWork {
                    open: "an active execution".into(),
                });
            }
            let last = if j.head == 0 {
                None
            } else {
                let page = self
                    .inner
                    .store
                    .read_session(session_id, j.head - 1, 1)
                    .await?;
                page.events.first().and_then(event_time)
            };
            let entry = SessionEntry::of(j, &meta, j.head, last);
            let batch = Batch {
                session_id: session_id.to_owned(),
                expected_head: j.head,
                side: vec![
                    side(
                        SideSpace::Session,
                        session_id,
                        Expect::Equals(j.meta.encode().into()),
                        meta.encode(),
                    ),
                    entry.write()?,
                ],
                ..Batch::default()
            };
            let outcome = match announce {
                Some(ty) => {
                    let ws = meta.workspace_id.clone();
                    self.append_watch(batch, ws.as_deref(), ty, session_id)
                        .await
                        .map(|_| ())
                }
                None => self
                    .append_resolving(batch)
                    .await
                    .map(|_| ())
                    .map_err(EngineError::from),
            };
            match outcome {
                Ok(()) => {
                    j.meta = meta;
                    Ok(Attempt::Done(()))
                }
                Err(EngineError::Store(
                    StoreError::HeadConflict { .. } | StoreError::SideConflict,
                )) => {
                    *slot = None;
                    Ok(Attempt::Again)
                }
                Err(e) => Err(e),
            }
        })
    }
}
