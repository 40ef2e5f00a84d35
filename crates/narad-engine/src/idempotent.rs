//! [`Idempotent`]: the engine's commands under a caller-supplied
//! idempotency key ([`Engine::idempotent`]). The durable part lives in
//! [`crate::idempotency`].

use std::sync::Arc;

use narad_store::{Store, StoredEvent};
use serde::Serialize;
use serde_json::{json, Value};

use crate::command_types::{
    EventScope, Interrupt, NewSession, Resolve, Resolved, StartRun, Started, StopTarget, Terminal,
    ToolOutcome,
};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::idempotency::Keyed;
use crate::typed::assets::Asset;
use crate::typed::assets::{AssetStep, ViewUpdate};
use crate::typed::commands::{DocumentKind, Progress};
use crate::typed::patch::Patch;
use crate::typed::trace::{Span, SpanEnd};

/// The engine's commands under one caller-supplied idempotency key: one
/// key, one command (each method takes the handle).
///
/// The first call records, in the same atomic batch as its events, the
/// key with a digest of the request and the command's result. A retry
/// with the same key and the same request (after a crash, a timeout, a
/// restart, on another engine over the same store) appends nothing and
/// answers the original result. The same key with another request — a
/// different body or another command — is refused as
/// `idempotency_conflict`. A refused command records nothing, so its
/// retry runs again. Keys are per session (`create_session`'s are
/// global); deleting a session deletes its keys. A key is 1 to 256 bytes
/// without control characters.
///
/// The request is everything the call is given: build it once and retry
/// that value. An interrupt's [`Expiry::In`](crate::Expiry::In) is part of
/// the request as a duration, read against the engine's clock when the
/// command runs, so its retry is the same request.
///
/// ```
/// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
/// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
/// let first = engine.idempotent("turn-7").message(&me, &sid, "Book it.").await?;
/// // The answer was lost; the retry records nothing and answers the same id.
/// let again = engine.idempotent("turn-7").message(&me, &sid, "Book it.").await?;
/// assert_eq!(first, again);
/// let err = engine.idempotent("turn-7").message(&me, &sid, "Cancel it.").await.unwrap_err();
/// assert_eq!(err.code(), "idempotency_conflict");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Idempotent<S> {
    engine: Engine<S>,
    key: String,
}

impl<S: Store + 'static> Engine<S> {
    /// This engine, its commands running under `keyed`.
    pub(crate) fn with_key(&self, keyed: Keyed) -> Engine<S> {
        Engine {
            inner: Arc::clone(&self.inner),
            keyed: Some(Arc::new(keyed)),
        }
    }

    /// The engine's commands under the idempotency key `key` (see
    /// [`Idempotent`]).
    pub fn idempotent(&self, key: impl Into<String>) -> Idempotent<S> {
        Idempotent {
            engine: self.clone(),
            key: key.into(),
        }
    }
}

impl<S: Store + 'static> Idempotent<S> {
    /// The caller's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The engine whose commands run under this key, for `command` with
    /// `request`.
    fn under(
        &self,
        command: &'static str,
        request: &impl Serialize,
    ) -> Result<Engine<S>, EngineError> {
        let keyed = Keyed::new(&self.key, command, request)?;
        Ok(self.engine.with_key(keyed))
    }

    /// [`Engine::create_session`]; a retry answers the session it created.
    pub async fn create_session(
        self,
        p: &Principal,
        new: NewSession,
    ) -> Result<String, EngineError> {
        let profiles: Option<Vec<&str>> =
            new.profiles.map(|ps| ps.iter().map(|x| x.id()).collect());
        let req = json!({"sessionId": new.session_id, "profiles": profiles, "workspaceId": new.workspace_id});
        self.under("create_session", &req)?
            .create_session(p, new)
            .await
    }

    /// [`Engine::message`]; a retry answers the original `messageId`.
    pub async fn message(
        self,
        p: &Principal,
        session_id: &str,
        content: impl Into<Value>,
    ) -> Result<String, EngineError> {
        let content: Value = content.into();
        let req = json!({"sessionId": session_id, "content": content});
        self.under("message", &req)?
            .message(p, session_id, content)
            .await
    }

    /// [`Engine::start_run`]; a retry answers the original run (running or
    /// queued).
    pub async fn start_run(
        self,
        p: &Principal,
        session_id: &str,
        start: StartRun,
    ) -> Result<Started, EngineError> {
        self.under("start_run", &(session_id, &start))?
            .start_run(p, session_id, start)
            .await
    }

    /// [`Engine::start_tool_call`]; a retry answers the original
    /// `toolCallId`.
    pub async fn start_tool_call(
        self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        let req = (session_id, run_id, tool_name, &args);
        self.under("start_tool_call", &req)?
            .start_tool_call(p, session_id, run_id, tool_name, args)
            .await
    }

    /// [`Engine::finish_tool_call`].
    pub async fn finish_tool_call(
        self,
        p: &Principal,
        session_id: &str,
        tool_call_id: &str,
        outcome: ToolOutcome,
    ) -> Result<(), EngineError> {
        self.under("finish_tool_call", &(session_id, tool_call_id, &outcome))?
            .finish_tool_call(p, session_id, tool_call_id, outcome)
            .await
    }

    /// [`Engine::pause_run`]; a retry answers the original `waitId`.
    pub async fn pause_run(
        self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        reason: &str,
        automatic: bool,
    ) -> Result<String, EngineError> {
        self.under("pause_run", &(session_id, run_id, reason, automatic))?
            .pause_run(p, session_id, run_id, reason, automatic)
            .await
    }

    /// [`Engine::pause_run_until`]; a retry answers the original `waitId`.
    pub async fn pause_run_until(
        self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        reason: &str,
        retry_at: std::time::SystemTime,
    ) -> Result<String, EngineError> {
        self.under("pause_run_until", &(session_id, run_id, reason, retry_at))?
            .pause_run_until(p, session_id, run_id, reason, retry_at)
            .await
    }

    /// [`Engine::resume_run`].
    pub async fn resume_run(
        self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        wait_id: &str,
    ) -> Result<(), EngineError> {
        self.under("resume_run", &(session_id, run_id, wait_id))?
            .resume_run(p, session_id, run_id, wait_id)
            .await
    }

    /// [`Engine::end_run`].
    pub async fn end_run(
        self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        terminal: Terminal,
    ) -> Result<(), EngineError> {
        self.under("end_run", &(session_id, run_id, &terminal))?
            .end_run(p, session_id, run_id, terminal)
            .await
    }

    /// [`Engine::request_interrupt`]; a retry answers the original
    /// `(interruptId, waitId)`.
    pub async fn request_interrupt(
        self,
        p: &Principal,
        session_id: &str,
        interrupt: Interrupt,
    ) -> Result<(String, String), EngineError> {
        self.under("request_interrupt", &(session_id, &interrupt))?
            .request_interrupt(p, session_id, interrupt)
            .await
    }

    /// [`Engine::resolve_interrupt`]; a retry answers the original
    /// resolution instead of `interrupt_already_resolved`.
    pub async fn resolve_interrupt(
        self,
        p: &Principal,
        resolve: Resolve,
    ) -> Result<Resolved, EngineError> {
        self.under("resolve_interrupt", &resolve)?
            .resolve_interrupt(p, resolve)
            .await
    }

    /// [`Engine::stop`]; a retry answers the run it stopped.
    pub async fn stop(
        self,
        p: &Principal,
        session_id: &str,
        target: StopTarget,
    ) -> Result<String, EngineError> {
        self.under("stop", &(session_id, &target))?
            .stop(p, session_id, target)
            .await
    }

    /// [`Engine::start_workflow`]; a retry answers the original workflow.
    pub async fn start_workflow(
        self,
        p: &Principal,
        session_id: &str,
        workflow_id: Option<String>,
        default_client_executor_id: Option<String>,
    ) -> Result<String, EngineError> {
        let req = (session_id, &workflow_id, &default_client_executor_id);
        self.under("start_workflow", &req)?
            .start_workflow(p, session_id, workflow_id, default_client_executor_id)
            .await
    }

    /// [`Engine::record_progress`]; a retry answers the original
    /// `progressId`.
    pub async fn record_progress(
        self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        progress: Progress,
    ) -> Result<String, EngineError> {
        self.under("record_progress", &(session_id, run_id, &progress))?
            .record_progress(p, session_id, run_id, progress)
            .await
    }

    /// [`Engine::put_document`]; a retry answers the original revision.
    pub async fn put_document(
        self,
        p: &Principal,
        session_id: &str,
        kind: DocumentKind,
        scope: impl Into<EventScope>,
        value: Value,
    ) -> Result<u64, EngineError> {
        let scope: EventScope = scope.into();
        self.under("put_document", &(session_id, kind, &scope, &value))?
            .put_document(p, session_id, kind, scope, value)
            .await
    }

    /// [`Engine::patch_document`]; a retry answers the original revision.
    pub async fn patch_document(
        self,
        p: &Principal,
        session_id: &str,
        kind: DocumentKind,
        scope: impl Into<EventScope>,
        patch: Patch,
    ) -> Result<u64, EngineError> {
        let scope: EventScope = scope.into();
        self.under("patch_document", &(session_id, kind, &scope, &patch))?
            .patch_document(p, session_id, kind, scope, patch)
            .await
    }

    /// [`Engine::record_custom`]; a retry answers the original event.
    pub async fn record_custom(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        name: &str,
        value: Value,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        self.under("record_custom", &(session_id, &scope, name, &value))?
            .record_custom(p, session_id, scope, name, value)
            .await
    }

    /// [`Engine::record_raw`]; a retry answers the original event.
    pub async fn record_raw(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        content_type: &str,
        payload: &str,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        self.under("record_raw", &(session_id, &scope, content_type, payload))?
            .record_raw(p, session_id, scope, content_type, payload)
            .await
    }

    /// [`Engine::append`]; a retry answers the original event.
    pub async fn append(
        self,
        p: &Principal,
        session_id: &str,
        event_type: &str,
        scope: impl Into<EventScope>,
        body: Value,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        self.under("append", &(session_id, event_type, &scope, &body))?
            .append(p, session_id, event_type, scope, body)
            .await
    }

    /// [`Engine::open_view`]; a retry answers the original event.
    pub async fn open_view(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        view_id: impl Into<String>,
        model: Value,
    ) -> Result<StoredEvent, EngineError> {
        let (scope, view_id): (EventScope, String) = (scope.into(), view_id.into());
        self.under("open_view", &(session_id, &scope, &view_id, &model))?
            .open_view(p, session_id, scope, view_id, model)
            .await
    }

    /// [`Engine::update_view`]; a retry answers the original event.
    pub async fn update_view(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        view_id: impl Into<String>,
        update: ViewUpdate,
    ) -> Result<StoredEvent, EngineError> {
        let (scope, view_id): (EventScope, String) = (scope.into(), view_id.into());
        self.under("update_view", &(session_id, &scope, &view_id, &update))?
            .update_view(p, session_id, scope, view_id, update)
            .await
    }

    /// [`Engine::close_view`]; a retry answers the original event.
    pub async fn close_view(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        view_id: impl Into<String>,
    ) -> Result<StoredEvent, EngineError> {
        let (scope, view_id): (EventScope, String) = (scope.into(), view_id.into());
        self.under("close_view", &(session_id, &scope, &view_id))?
            .close_view(p, session_id, scope, view_id)
            .await
    }

    /// [`Engine::add_attachment`]; a retry answers the original id.
    pub async fn add_attachment(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        asset: Asset,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        self.under("add_attachment", &(session_id, &scope, &asset))?
            .add_attachment(p, session_id, scope, asset)
            .await
    }

    /// [`Engine::update_attachment`]; a retry answers the original event.
    pub async fn update_attachment(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        attachment_id: &str,
        step: AssetStep,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        self.under(
            "update_attachment",
            &(session_id, &scope, attachment_id, &step),
        )?
        .update_attachment(p, session_id, scope, attachment_id, step)
        .await
    }

    /// [`Engine::add_artifact`]; a retry answers the original id.
    pub async fn add_artifact(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        asset: Asset,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        self.under("add_artifact", &(session_id, &scope, &asset))?
            .add_artifact(p, session_id, scope, asset)
            .await
    }

    /// [`Engine::update_artifact`]; a retry answers the original event.
    pub async fn update_artifact(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        artifact_id: &str,
        step: AssetStep,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        self.under("update_artifact", &(session_id, &scope, artifact_id, &step))?
            .update_artifact(p, session_id, scope, artifact_id, step)
            .await
    }

    /// [`Engine::start_span`]; a retry answers the original span id.
    pub async fn start_span(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        span: Span,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        self.under("start_span", &(session_id, &scope, &span))?
            .start_span(p, session_id, scope, span)
            .await
    }

    /// [`Engine::end_span`]; a retry answers the original event.
    pub async fn end_span(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        span_id: &str,
        end: SpanEnd,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        self.under("end_span", &(session_id, &scope, span_id, &end))?
            .end_span(p, session_id, scope, span_id, end)
            .await
    }

    /// [`Engine::trace_event`]; a retry answers the original event.
    pub async fn trace_event(
        self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        span_id: Option<&str>,
        name: impl Into<String>,
        attributes: serde_json::Map<String, Value>,
    ) -> Result<StoredEvent, EngineError> {
        let (scope, name): (EventScope, String) = (scope.into(), name.into());
        self.under(
            "trace_event",
            &(session_id, &scope, span_id, &name, &attributes),
        )?
        .trace_event(p, session_id, scope, span_id, name, attributes)
        .await
    }
}
