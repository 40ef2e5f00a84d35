//! Typed commands for views (§9.6, UI profile) and for attachments and
//! artifacts (§9.5): the `view.*`, `attachment.*` and `artifact.*` events
//! without hand-written protocol JSON.

use narad_store::{Store, StoredEvent};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::command_types::EventScope;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::typed::patch::Patch;
use crate::typed::{body_of, envelope};

/// How `view.updated` changes a view's model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ViewUpdate {
    /// `operation: replace` with the new model.
    Replace(Value),
    /// `operation: patch` with an RFC 6902 patch of the model.
    Patch(Patch),
}

/// Metadata of an attachment (an admitted input) or an artifact (a
/// produced output), §9.5. Events carry metadata and authorized
/// references only: raw bytes are never embedded, so a `data:` URI is
/// refused.
///
/// The keys written are `name`, `mediaType`, `uri` and `sizeBytes`, and
/// any added with [`Asset::with`] (camelCase).
///
/// ```
/// use narad_engine::Asset;
/// let a = Asset::new().id("report").name("report.pdf")
///     .media_type("application/pdf").uri("s3://bucket/report.pdf").size_bytes(48_213);
/// assert_eq!(a.size_bytes, Some(48_213));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Asset {
    /// `attachmentId` / `artifactId`; fresh when `None`.
    #[serde(skip)]
    pub id: Option<String>,
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its media type (`image/png`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// An authorized reference to the bytes (never a `data:` URI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Its size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Other metadata (camelCase keys).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Asset {
    /// Metadata with nothing set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
    /// Sets the display name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Sets the media type.
    pub fn media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }
    /// Sets the reference to the bytes.
    pub fn uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = Some(uri.into());
        self
    }
    /// Sets the size.
    pub fn size_bytes(mut self, size: u64) -> Self {
        self.size_bytes = Some(size);
        self
    }
    /// Adds other metadata.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }
}

/// A later step of an attachment's or artifact's lifecycle (§9.5):
/// added → ready | failed, and (attachments only) any → removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum AssetStep {
    /// `*.ready`.
    Ready,
    /// `*.failed` with a machine code and a user-safe message.
    Failed {
        /// Machine code.
        code: String,
        /// User-safe message.
        message: String,
    },
    /// `attachment.removed` (artifacts have no such step).
    Removed,
}

impl AssetStep {
    /// A failure with `code` and a user-safe `message`.
    pub fn failed(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Failed {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// Which of the two §9.5 families.
#[derive(Clone, Copy)]
enum Family {
    Attachment,
    Artifact,
}

impl Family {
    fn id_field(self) -> &'static str {
        match self {
            Self::Attachment => "attachmentId",
            Self::Artifact => "artifactId",
        }
    }

    fn step_type(self, step: &AssetStep) -> Result<&'static str, EngineError> {
        Ok(match (self, step) {
            (Self::Attachment, AssetStep::Ready) => "attachment.ready",
            (Self::Attachment, AssetStep::Failed { .. }) => "attachment.failed",
            (Self::Attachment, AssetStep::Removed) => "attachment.removed",
            (Self::Artifact, AssetStep::Ready) => "artifact.ready",
            (Self::Artifact, AssetStep::Failed { .. }) => "artifact.failed",
            (Self::Artifact, AssetStep::Removed) => {
                return Err(EngineError::InvalidCommand(
                    "artifacts have no removed step (§9.5): only ready or failed".into(),
                ))
            }
        })
    }
}

/// The body of `*.added`: the metadata and the id.
fn added_body(family: Family, asset: &Asset, id: &str) -> Result<Map<String, Value>, EngineError> {
    if asset
        .uri
        .as_deref()
        .is_some_and(|u| u.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("data:")))
    {
        return Err(EngineError::InvalidCommand(
            "a `data:` URI embeds raw bytes, which events must not carry (§9.5); \
             store the bytes and pass a reference"
                .into(),
        ));
    }
    let mut body = body_of(asset)?;
    if body.contains_key(family.id_field()) {
        return Err(EngineError::InvalidCommand(format!(
            "set the id with Asset::id, not as `{}` metadata",
            family.id_field()
        )));
    }
    body.insert(family.id_field().into(), id.into());
    Ok(body)
}

fn step_body(family: Family, id: &str, step: &AssetStep) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert(family.id_field().into(), id.into());
    if let AssetStep::Failed { code, message } = step {
        body.insert("code".into(), code.as_str().into());
        body.insert("message".into(), message.as_str().into());
    }
    body
}

impl<S: Store + 'static> Engine<S> {
    /// Opens a view (`view.opened`) with its initial `model`. A view
    /// already open is refused (`view_already_open`).
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{EventScope, Patch, ViewUpdate};
    /// let s = EventScope::Session;
    /// engine.open_view(&me, &sid, &s, "plan", serde_json::json!({"steps": []})).await?;
    /// engine.update_view(&me, &sid, &s, "plan",
    ///     ViewUpdate::Patch(Patch::new().add("/steps/-", "search"))).await?;
    /// engine.close_view(&me, &sid, s, "plan").await?;
    /// # Ok(()) }
    /// ```
    pub async fn open_view(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        view_id: impl Into<String>,
        model: Value,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let mut body = Map::new();
        body.insert("viewId".into(), view_id.into().into());
        body.insert("model".into(), model);
        self.append_body(p, session_id, "view.opened", &scope, body)
            .await
    }

    /// Updates an open view's model (`view.updated`): replaced, or
    /// patched. A view not open is refused (`view_not_open`); a patch
    /// that does not apply is refused (`patch_failed`), appending nothing.
    pub async fn update_view(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        view_id: impl Into<String>,
        update: ViewUpdate,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let mut body = Map::new();
        body.insert("viewId".into(), view_id.into().into());
        match update {
            ViewUpdate::Replace(model) => {
                body.insert("operation".into(), "replace".into());
                body.insert("model".into(), model);
            }
            ViewUpdate::Patch(patch) => {
                body.insert("operation".into(), "patch".into());
                body.insert("patch".into(), patch.to_value());
            }
        }
        self.append_body(p, session_id, "view.updated", &scope, body)
            .await
    }

    /// Closes an open view (`view.closed`).
    pub async fn close_view(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        view_id: impl Into<String>,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let mut body = Map::new();
        body.insert("viewId".into(), view_id.into().into());
        self.append_body(p, session_id, "view.closed", &scope, body)
            .await
    }

    /// Admits an attachment (`attachment.added`) with its metadata;
    /// returns its `attachmentId` (the asset's, or a fresh one). Then
    /// [`Engine::update_attachment`] marks it ready, failed or removed.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{Asset, AssetStep, EventScope};
    /// let id = engine.add_attachment(&me, &sid, EventScope::Session,
    ///     Asset::new().name("photo.png").media_type("image/png").uri("s3://in/photo.png")).await?;
    /// engine.update_attachment(&me, &sid, EventScope::Session, &id, AssetStep::Ready).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_attachment(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        asset: Asset,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        self.add_asset(p, session_id, scope, asset, Family::Attachment)
            .await
    }

    /// Moves an attachment on (`attachment.ready`, `.failed`, `.removed`).
    /// A step its lifecycle does not allow is refused
    /// (`lifecycle_invalid`, or `lifecycle_unknown` for an id never added).
    pub async fn update_attachment(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        attachment_id: &str,
        step: AssetStep,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let ty = Family::Attachment.step_type(&step)?;
        let body = step_body(Family::Attachment, attachment_id, &step);
        self.append_body(p, session_id, ty, &scope, body).await
    }

    /// Records a produced artifact (`artifact.added`) with its metadata;
    /// returns its `artifactId` (the asset's, or a fresh one). Then
    /// [`Engine::update_artifact`] marks it ready or failed.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{Asset, AssetStep, EventScope};
    /// let at = EventScope::Run(run);
    /// let id = engine.add_artifact(&me, &sid, &at, Asset::new().name("summary.md")).await?;
    /// engine.update_artifact(&me, &sid, at, &id, AssetStep::failed("render_failed", "Could not render.")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_artifact(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        asset: Asset,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        self.add_asset(p, session_id, scope, asset, Family::Artifact)
            .await
    }

    /// Moves an artifact on (`artifact.ready` or `artifact.failed`);
    /// [`AssetStep::Removed`] is refused (`invalid_command`): artifacts
    /// have no such step.
    pub async fn update_artifact(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        artifact_id: &str,
        step: AssetStep,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let ty = Family::Artifact.step_type(&step)?;
        let body = step_body(Family::Artifact, artifact_id, &step);
        self.append_body(p, session_id, ty, &scope, body).await
    }

    async fn add_asset(
        &self,
        p: &Principal,
        session_id: &str,
        scope: EventScope,
        asset: Asset,
        family: Family,
    ) -> Result<String, EngineError> {
        let (ty, prefix) = match family {
            Family::Attachment => ("attachment.added", "attachment"),
            Family::Artifact => ("artifact.added", "artifact"),
        };
        let id = asset
            .id
            .clone()
            .unwrap_or_else(|| self.inner.ids.next_id(prefix));
        let body = added_body(family, &asset, &id)?;
        // Extra metadata must not contradict the envelope the engine writes.
        let (_, body) = envelope::prepare(ty, session_id, &scope, Value::Object(body))?;
        // The id is the answer an idempotency key records: a retry gets
        // the original one, not a fresh one.
        let (id, _) = self
            .append_body_with(p, session_id, ty, &scope, body, id)
            .await?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_data_uri_is_refused_and_metadata_is_camel_case() {
        let err = added_body(
            Family::Attachment,
            &Asset::new().uri("DATA:image/png;base64,AAAA"),
            "a1",
        )
        .unwrap_err();
        assert_eq!(err.code(), "invalid_command");
        assert!(!err.to_string().contains("AAAA"), "{err}");
        let body = added_body(
            Family::Artifact,
            &Asset::new()
                .media_type("text/plain")
                .size_bytes(3)
                .with("sha256", "ab"),
            "x1",
        )
        .unwrap();
        assert_eq!(
            Value::Object(body),
            serde_json::json!({"artifactId": "x1", "mediaType": "text/plain", "sizeBytes": 3, "sha256": "ab"})
        );
        assert!(Family::Artifact.step_type(&AssetStep::Removed).is_err());
    }
}
