//! Typed commands for progress (§9.8), state and UI documents (§9.6) and
//! extensions (§9.9).

use narad_store::{Store, StoredEvent};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::command_loop::Plan;
use crate::command_types::EventScope;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::journal::{At, Draft, Journal};
use crate::typed::patch::Patch;
use crate::typed::{body_of, envelope};

/// How far an activity got (§9.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressStatus {
    /// Still going.
    #[default]
    Active,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// Who may see an activity item (§9.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Privacy {
    /// Anyone who sees the run.
    #[default]
    Public,
    /// Operators.
    Internal,
    /// Sensitive.
    Sensitive,
}

/// A `progress.recorded` activity item of a run.
///
/// ```
/// use narad_engine::{Progress, ProgressStatus};
/// let p = Progress::new("agent.phase", "Searching").id("search").status(ProgressStatus::Completed);
/// assert_eq!(p.label, "Searching");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Stable identity of the item; fresh when `None`.
    pub progress_id: Option<String>,
    /// Open namespaced category, e.g. `agent.phase`.
    pub category: String,
    /// User-visible summary.
    pub label: String,
    /// Optional detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Status (default `active`).
    pub status: ProgressStatus,
    /// Privacy (default `public`).
    pub privacy: Privacy,
}

impl Progress {
    /// An active, public item.
    pub fn new(category: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            progress_id: None,
            category: category.into(),
            label: label.into(),
            detail: None,
            status: ProgressStatus::Active,
            privacy: Privacy::Public,
        }
    }
    /// Sets the stable id (to update the same item later).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.progress_id = Some(id.into());
        self
    }
    /// Sets the status.
    pub fn status(mut self, status: ProgressStatus) -> Self {
        self.status = status;
        self
    }
    /// Sets the privacy.
    pub fn privacy(mut self, privacy: Privacy) -> Self {
        self.privacy = privacy;
        self
    }
    /// Sets the detail.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// Which family of documents (§9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DocumentKind {
    /// `state.snapshot` / `state.delta`.
    State,
    /// `ui.state.snapshot` / `ui.state.delta`.
    Ui,
}

impl DocumentKind {
    fn prefix(self) -> &'static str {
        match self {
            Self::State => "state",
            Self::Ui => "ui",
        }
    }
}

/// The key under which the checker holds a document (`state:session`,
/// `ui:run:RUN`, `state:workflow:WF`): the keys of
/// [`SessionState::documents`](crate::SessionState::documents).
pub fn document_key(kind: DocumentKind, scope: &EventScope) -> String {
    let p = kind.prefix();
    match scope {
        EventScope::Session => format!("{p}:session"),
        EventScope::Run(r) => format!("{p}:run:{r}"),
        EventScope::Workflow(w) => format!("{p}:workflow:{w}"),
    }
}

fn at(j: &Journal, scope: &EventScope) -> Result<At, EngineError> {
    Ok(match scope {
        EventScope::Session => At::Session,
        EventScope::Run(r) => j.run_at(r)?,
        EventScope::Workflow(w) => At::Workflow(w.clone()),
    })
}

fn scope_value(scope: &EventScope) -> &'static str {
    match scope {
        EventScope::Session => "session",
        EventScope::Run(_) => "run",
        EventScope::Workflow(_) => "workflow",
    }
}

impl<S: Store + 'static> Engine<S> {
    /// Records a `progress.recorded` item on a run (running or paused);
    /// returns its `progressId`.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{Progress, ProgressStatus};
    /// let id = engine.record_progress(&me, &sid, &run, Progress::new("agent.phase", "Planning")).await?;
    /// engine.record_progress(&me, &sid, &run,
    ///     Progress::new("agent.phase", "Planned").id(&id).status(ProgressStatus::Completed)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn record_progress(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        progress: Progress,
    ) -> Result<String, EngineError> {
        let id = progress
            .progress_id
            .clone()
            .unwrap_or_else(|| self.inner.ids.next_id("progress"));
        let mut body = body_of(&progress)?;
        body.insert("progressId".into(), id.clone().into());
        let (id, _) = self
            .append_body_with(
                p,
                session_id,
                "progress.recorded",
                &EventScope::Run(run_id.to_owned()),
                body,
                id.clone(),
            )
            .await?;
        Ok(id)
    }

    /// Replaces a state or UI document with `value` (`state.snapshot` /
    /// `ui.state.snapshot` at the next revision); returns that revision.
    pub async fn put_document(
        &self,
        p: &Principal,
        session_id: &str,
        kind: DocumentKind,
        scope: impl Into<EventScope>,
        value: Value,
    ) -> Result<u64, EngineError> {
        let scope: EventScope = scope.into();
        let ty = match kind {
            DocumentKind::State => "state.snapshot",
            DocumentKind::Ui => "ui.state.snapshot",
        };
        let key = document_key(kind, &scope);
        let (rev, _) = self
            .command_keyed(p, session_id, |j| {
                let rev = current_revision(j, &key) + 1;
                let mut body = Map::new();
                body.insert("scope".into(), scope_value(&scope).into());
                body.insert("revision".into(), rev.into());
                body.insert("state".into(), value.clone());
                Ok(Plan::of(
                    vec![Draft::new(ty, at(j, &scope)?, Value::Object(body))],
                    rev,
                ))
            })
            .await?;
        Ok(rev)
    }

    /// Patches a state or UI document (`state.delta` / `ui.state.delta`
    /// from its current revision; a document's first delta patches `{}`);
    /// returns the new revision. A patch that does not apply is refused
    /// (`patch_failed`) and nothing is appended.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{DocumentKind, EventScope, Patch};
    /// engine.put_document(&me, &sid, DocumentKind::State, EventScope::Session,
    ///     serde_json::json!({"step": 1})).await?;
    /// let rev = engine.patch_document(&me, &sid, DocumentKind::State, EventScope::Session,
    ///     Patch::new().replace("/step", 2)).await?;
    /// assert_eq!(rev, 2);
    /// # Ok(()) }
    /// ```
    pub async fn patch_document(
        &self,
        p: &Principal,
        session_id: &str,
        kind: DocumentKind,
        scope: impl Into<EventScope>,
        patch: Patch,
    ) -> Result<u64, EngineError> {
        let scope: EventScope = scope.into();
        let ty = match kind {
            DocumentKind::State => "state.delta",
            DocumentKind::Ui => "ui.state.delta",
        };
        let key = document_key(kind, &scope);
        let patch = patch.to_value();
        let (rev, _) = self
            .command_keyed(p, session_id, |j| {
                let base = current_revision(j, &key);
                let mut body = Map::new();
                body.insert("scope".into(), scope_value(&scope).into());
                body.insert("baseRevision".into(), base.into());
                body.insert("revision".into(), (base + 1).into());
                body.insert("patch".into(), patch.clone());
                Ok(Plan::of(
                    vec![Draft::new(ty, at(j, &scope)?, Value::Object(body))],
                    base + 1,
                ))
            })
            .await?;
        Ok(rev)
    }

    /// The `message` command with a caller-chosen `messageId`, which is
    /// its idempotency key: a retry (after a crash or a timeout) with the
    /// same id and content appends nothing and answers the same; the same
    /// id with other content is refused (`idempotency_conflict`). The
    /// journal itself is the durable record of the key.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// engine.message_with_id(&me, &sid, "turn-7", "hello").await?;
    /// engine.message_with_id(&me, &sid, "turn-7", "hello").await?; // a retry: nothing appended
    /// # Ok(()) }
    /// ```
    pub async fn message_with_id(
        &self,
        p: &Principal,
        session_id: &str,
        message_id: &str,
        content: impl Into<Value>,
    ) -> Result<String, EngineError> {
        let content: Value = content.into();
        self.command(p, session_id, |j| {
            let earlier = j.message(message_id);
            if let Some(m) = earlier {
                let same = m.role == "user"
                    && m.scope == "session"
                    && content.as_str() == Some(m.content.as_str());
                if !same {
                    return Err(EngineError::IdempotencyConflict {
                        what: format!("message {message_id}"),
                    });
                }
                return Ok(Plan::of(Vec::new(), ()));
            }
            let mut body = Map::new();
            body.insert("messageId".into(), message_id.into());
            body.insert("messageScope".into(), "session".into());
            body.insert("content".into(), content.clone());
            Ok(Plan::of(
                vec![Draft::new(
                    "message.user.recorded",
                    At::Session,
                    Value::Object(body),
                )],
                (),
            ))
        })
        .await?;
        Ok(message_id.to_owned())
    }

    /// Records a `*.custom` extension event (§9.9): `session.custom`,
    /// `run.custom` or `workflow.custom` by `scope`. `name` must be
    /// namespaced dotted lowercase (`acme.note`).
    pub async fn record_custom(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        name: &str,
        value: Value,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let ty = match scope {
            EventScope::Session => "session.custom",
            EventScope::Run(_) => "run.custom",
            EventScope::Workflow(_) => "workflow.custom",
        };
        let mut body = Map::new();
        body.insert("name".into(), name.into());
        body.insert("value".into(), value);
        self.append_body(p, session_id, ty, &scope, body).await
    }

    /// Records a `*.raw` extension event (§9.9): an opaque encoded
    /// `payload` of `content_type`.
    pub async fn record_raw(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        content_type: &str,
        payload: &str,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let ty = match scope {
            EventScope::Session => "session.raw",
            EventScope::Run(_) => "run.raw",
            EventScope::Workflow(_) => "workflow.raw",
        };
        let mut body = Map::new();
        body.insert("contentType".into(), content_type.into());
        body.insert("payload".into(), payload.into());
        self.append_body(p, session_id, ty, &scope, body).await
    }

    /// Appends one event of any profile (conversation, attachments,
    /// artifacts, state, ui, view, progress, extensions, trace, debug,
    /// workflow steps and edges, ...): the door for what has no typed
    /// command. `body` holds the type's own fields; the engine writes the
    /// envelope and every sequence, and fills the type's scope field
    /// (`messageScope`, `scope`) from `scope`.
    ///
    /// Refused with a message that names the fix: a lifecycle type (use
    /// its command: `run.finished` goes through [`Engine::end_run`]), a
    /// scope the type cannot take (`progress.recorded` needs
    /// `EventScope::Run`), a body field that contradicts the envelope (a
    /// different `sessionId`) or that the engine assigns (`eventId`,
    /// sequences). The checker refuses what breaks a rule; an inactive
    /// profile is refused.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::EventScope;
    /// let err = engine.append(&me, &sid, "run.finished", EventScope::Run(run.clone()),
    ///     serde_json::json!({})).await.unwrap_err();
    /// assert!(err.to_string().contains("Engine::end_run"));
    /// engine.append(&me, &sid, "view.opened", EventScope::Session,
    ///     serde_json::json!({"viewId": "v1"})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn append(
        &self,
        p: &Principal,
        session_id: &str,
        event_type: &str,
        scope: impl Into<EventScope>,
        body: Value,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let (info, body) = envelope::prepare(event_type, session_id, &scope, body)?;
        self.append_body(p, session_id, info.name, &scope, body)
            .await
    }
}

fn current_revision(j: &Journal, key: &str) -> u64 {
    j.checker
        .documents(&j.session_id)
        .and_then(|d| d.documents.get(key))
        .map_or(0, |d| d.revision)
}
