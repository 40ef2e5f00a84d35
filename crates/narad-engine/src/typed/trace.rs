//! Typed commands for the trace profile (`narad.trace/v1`): spans and
//! point events. The spec leaves their bodies to the profile; this engine
//! writes `spanId`, `name`, `parentSpanId` and `attributes` on
//! `trace.span.started`, `spanId`, `status`, `durationMs`, `code` and
//! `attributes` on `trace.span.completed`, and `name`, `spanId` and
//! `attributes` on `trace.event` (see the conformance notes). Trace
//! events are left out of reads by principals that may not debug.

use narad_store::{Store, StoredEvent};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::command_types::EventScope;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::typed::body_of;

/// A span to start.
///
/// ```
/// use narad_engine::Span;
/// let s = Span::new("llm.call").id("span-1").parent("span-0").attribute("model", "m-large");
/// assert_eq!(s.attributes["model"], "m-large");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// `spanId`; fresh when `None`.
    #[serde(skip)]
    pub span_id: Option<String>,
    /// What it measures (`llm.call`, `tool.search`).
    pub name: String,
    /// The enclosing span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    /// Attributes (never secrets: trace events are journaled).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
}

impl Span {
    /// A root span named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            span_id: None,
            name: name.into(),
            parent_span_id: None,
            attributes: Map::new(),
        }
    }
    /// Sets the id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.span_id = Some(id.into());
        self
    }
    /// Sets the enclosing span.
    pub fn parent(mut self, parent_span_id: impl Into<String>) -> Self {
        self.parent_span_id = Some(parent_span_id.into());
        self
    }
    /// Adds an attribute.
    pub fn attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}

/// How a span ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanStatus {
    /// It did what it measured.
    #[default]
    Ok,
    /// It failed.
    Error,
}

/// The end of a span (`trace.span.completed`).
///
/// ```
/// use narad_engine::{SpanEnd, SpanStatus};
/// let end = SpanEnd::error("timeout").duration_ms(30_000);
/// assert_eq!(end.status, SpanStatus::Error);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanEnd {
    /// `ok` or `error`.
    pub status: SpanStatus,
    /// Its duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// A machine code, for an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Attributes known at the end.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
}

impl SpanEnd {
    /// Ended well.
    pub fn ok() -> Self {
        Self::default()
    }
    /// Failed with a machine `code`.
    pub fn error(code: impl Into<String>) -> Self {
        Self {
            status: SpanStatus::Error,
            code: Some(code.into()),
            ..Self::default()
        }
    }
    /// Sets the duration.
    pub fn duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = Some(ms);
        self
    }
    /// Adds an attribute.
    pub fn attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}

impl<S: Store + 'static> Engine<S> {
    /// Starts a span (`trace.span.started`); returns its `spanId` (the
    /// span's, or a fresh one). The trace profile must be active, and the
    /// principal allowed to debug ([`Authorizer::may_debug`](crate::Authorizer::may_debug)),
    /// as for every trace command.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{EventScope, Span, SpanEnd};
    /// let at = EventScope::Run(run);
    /// let span = engine.start_span(&me, &sid, &at, Span::new("llm.call")).await?;
    /// engine.trace_event(&me, &sid, &at, Some(&span), "llm.first_token", Map::new()).await?;
    /// engine.end_span(&me, &sid, at, &span, SpanEnd::ok().duration_ms(840)).await?;
    /// # use serde_json::Map;
    /// # Ok(()) }
    /// ```
    pub async fn start_span(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        span: Span,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        let id = span
            .span_id
            .clone()
            .unwrap_or_else(|| self.inner.ids.next_id("span"));
        let mut body = body_of(&span)?;
        body.insert("spanId".into(), id.clone().into());
        // The id is what an idempotency key records (see `add_asset`).
        let (id, _) = self
            .append_body_with(p, session_id, "trace.span.started", &scope, body, id)
            .await?;
        Ok(id)
    }

    /// Ends a span (`trace.span.completed`). The engine does not check
    /// that `span_id` was started: trace bodies are outside the checker's
    /// rules.
    pub async fn end_span(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        span_id: &str,
        end: SpanEnd,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let mut body = body_of(&end)?;
        body.insert("spanId".into(), span_id.into());
        self.append_body(p, session_id, "trace.span.completed", &scope, body)
            .await
    }

    /// Records a point event (`trace.event`) named `name`, inside
    /// `span_id` when given.
    pub async fn trace_event(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        span_id: Option<&str>,
        name: impl Into<String>,
        attributes: Map<String, Value>,
    ) -> Result<StoredEvent, EngineError> {
        let scope: EventScope = scope.into();
        let mut body = Map::new();
        body.insert("name".into(), name.into().into());
        if let Some(s) = span_id {
            body.insert("spanId".into(), s.into());
        }
        if !attributes.is_empty() {
            body.insert("attributes".into(), Value::Object(attributes));
        }
        self.append_body(p, session_id, "trace.event", &scope, body)
            .await
    }
}
