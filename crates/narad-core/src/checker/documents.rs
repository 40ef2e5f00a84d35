//! State and UI documents (§9.6): JSON documents per scope with RFC 6902
//! patches, revision rules and compaction; views; attachment and artifact
//! lifecycles (§9.5).

use super::{fail, R};
use crate::model::{AuthorityEnvelope, AuthorityPayload, Scope, ViewOperation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One JSON document at a revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Current revision.
    pub revision: u64,
    /// The document.
    pub value: Value,
}

/// Lifecycle of an attachment or artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    /// Added, not yet ready.
    Added,
    /// Ready.
    Ready,
    /// Failed.
    Failed,
    /// Removed (attachments only).
    Removed,
}

/// Documents, views, attachments and artifacts of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Documents {
    /// `state:<scope-key>` and `ui:<scope-key>` documents.
    pub documents: BTreeMap<String, Document>,
    /// Open views and their models.
    pub views: BTreeMap<String, Value>,
    /// Attachments by id.
    pub attachments: BTreeMap<String, Lifecycle>,
    /// Artifacts by id.
    pub artifacts: BTreeMap<String, Lifecycle>,
}

fn key(kind: &str, scope: Scope, env: &AuthorityEnvelope) -> String {
    match scope {
        Scope::Session => format!("{kind}:session"),
        Scope::Workflow => format!(
            "{kind}:workflow:{}",
            env.workflow_id.as_deref().unwrap_or_default()
        ),
        Scope::Run => format!("{kind}:run:{}", env.run_id.as_deref().unwrap_or_default()),
    }
}

fn parse_patch(raw: &Value) -> R<json_patch::Patch> {
    serde::Deserialize::deserialize(raw)
        .or_else(|_| fail("patch_invalid", "9.6", "patch is not an RFC 6902 patch"))
}

/// Applies `patch` to `value`; json_patch reverts every operation when one
/// fails, so a refused patch leaves the document unchanged.
fn apply_patch(value: &mut Value, patch: &json_patch::Patch) -> R {
    json_patch::patch(value, patch).or_else(|_| {
        fail(
            "patch_failed",
            "9.6",
            "the patch does not apply to the document",
        )
    })
}

impl Documents {
    /// Applies a state, UI, view, attachment or artifact event. `raw` is the
    /// event's JSON object (patches are taken from it as sent).
    pub(super) fn apply(
        &mut self,
        env: &AuthorityEnvelope,
        payload: &AuthorityPayload,
        raw: &serde_json::Map<String, Value>,
    ) -> R {
        use AuthorityPayload as P;
        match payload {
            P::StateSnapshot(s) | P::UiStateSnapshot(s) => {
                let kind = if matches!(payload, P::StateSnapshot(_)) {
                    "state"
                } else {
                    "ui"
                };
                let k = key(kind, s.scope, env);
                if self
                    .documents
                    .get(&k)
                    .is_some_and(|d| s.revision <= d.revision)
                {
                    return fail(
                        "document_revision_regress",
                        "9.6",
                        "a snapshot must advance the document revision",
                    );
                }
                self.documents.insert(
                    k,
                    Document {
                        revision: s.revision,
                        value: s.state.clone(),
                    },
                );
                Ok(())
            }
            P::StateDelta(d) | P::UiStateDelta(d) => {
                let kind = if matches!(payload, P::StateDelta(_)) {
                    "state"
                } else {
                    "ui"
                };
                let k = key(kind, d.scope, env);
                let current = self.documents.get(&k).map_or(0, |doc| doc.revision);
                if d.base_revision != current {
                    return fail(
                        "document_revision_gap",
                        "9.6",
                        format!(
                            "delta applies to revision {} but the document is at {current}",
                            d.base_revision
                        ),
                    );
                }
                let patch = parse_patch(raw.get("patch").unwrap_or(&Value::Null))?;
                match self.documents.get_mut(&k) {
                    Some(doc) => {
                        apply_patch(&mut doc.value, &patch)?;
                        doc.revision = d.revision;
                    }
                    None => {
                        // A document's first delta (baseRevision 0) patches an empty object.
                        let mut value = Value::Object(serde_json::Map::new());
                        apply_patch(&mut value, &patch)?;
                        self.documents.insert(
                            k,
                            Document {
                                revision: d.revision,
                                value,
                            },
                        );
                    }
                }
                Ok(())
            }
            P::StateCompacted {
                scope,
                snapshot_revision,
                ..
            } => {
                let current = self
                    .documents
                    .get(&key("state", *scope, env))
                    .map_or(0, |d| d.revision);
                if *snapshot_revision > current {
                    return fail(
                        "compaction_ahead",
                        "9.6",
                        "state.compacted names a revision the document has not reached",
                    );
                }
                Ok(())
            }
            P::ViewOpened(v) => {
                if self.views.contains_key(&v.view_id) {
                    return fail(
                        "view_already_open",
                        "9.6",
                        format!("view {} is already open", v.view_id),
                    );
                }
                self.views
                    .insert(v.view_id.clone(), v.model.clone().unwrap_or(Value::Null));
                Ok(())
            }
            P::ViewUpdated(v) => {
                let Some(model) = self.views.get_mut(&v.view_id) else {
                    return fail(
                        "view_not_open",
                        "9.6",
                        format!("view {} is not open", v.view_id),
                    );
                };
                match v.operation {
                    Some(ViewOperation::Patch) => {
                        let patch = parse_patch(raw.get("patch").unwrap_or(&Value::Null))?;
                        apply_patch(model, &patch)?;
                    }
                    _ => *model = v.model.clone().unwrap_or(Value::Null),
                }
                Ok(())
            }
            P::ViewClosed(v) => {
                if self.views.remove(&v.view_id).is_none() {
                    return fail(
                        "view_not_open",
                        "9.6",
                        format!("view {} is not open", v.view_id),
                    );
                }
                Ok(())
            }
            P::AttachmentAdded(a)
            | P::AttachmentReady(a)
            | P::AttachmentFailed(a)
            | P::AttachmentRemoved(a) => {
                let next = match payload {
                    P::AttachmentAdded(_) => Lifecycle::Added,
                    P::AttachmentReady(_) => Lifecycle::Ready,
                    P::AttachmentFailed(_) => Lifecycle::Failed,
                    _ => Lifecycle::Removed,
                };
                lifecycle(&mut self.attachments, &a.attachment_id, next, "attachment")
            }
            P::ArtifactAdded(a) | P::ArtifactReady(a) | P::ArtifactFailed(a) => {
                let next = match payload {
                    P::ArtifactAdded(_) => Lifecycle::Added,
                    P::ArtifactReady(_) => Lifecycle::Ready,
                    _ => Lifecycle::Failed,
                };
                lifecycle(&mut self.artifacts, &a.artifact_id, next, "artifact")
            }
            _ => Ok(()),
        }
    }
}

/// added → ready | failed; any live one → removed (attachments).
fn lifecycle(
    map: &mut BTreeMap<String, Lifecycle>,
    id: &str,
    next: Lifecycle,
    what: &'static str,
) -> R {
    let current = map.get(id).copied();
    let ok = matches!(
        (current, next),
        (None, Lifecycle::Added)
            | (Some(Lifecycle::Added), Lifecycle::Ready | Lifecycle::Failed)
            | (
                Some(Lifecycle::Added | Lifecycle::Ready | Lifecycle::Failed),
                Lifecycle::Removed
            )
    );
    if !ok {
        let code = if current.is_none() {
            "lifecycle_unknown"
        } else {
            "lifecycle_invalid"
        };
        return fail(
            code,
            "9.5",
            format!("{what} {id} cannot move from {current:?} to {next:?}"),
        );
    }
    map.insert(id.to_owned(), next);
    Ok(())
}
