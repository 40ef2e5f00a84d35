//! Streamed assistant text and reasoning as handles (§9.2): start, then
//! deltas, then complete, with the scope given once and the ids kept by
//! the handle. Each call is one checked, durable append.

use narad_store::{Store, StoredEvent};
use serde_json::{Map, Value};

use crate::command_types::EventScope;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;

/// Who speaks a streamed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// The agent.
    #[default]
    Assistant,
    /// The system.
    System,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Self::Assistant => "assistant",
            Self::System => "system",
        }
    }
}

/// Options of [`Engine::start_text`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// The `messageId`; fresh when `None`.
    pub message_id: Option<String>,
    /// The role (default assistant).
    pub role: Role,
}

/// A streamed message being written: `message.text.started` is durable;
/// [`TextStream::delta`] appends `message.text.delta`,
/// [`TextStream::complete`] appends `message.text.completed`, all at the
/// scope given to [`Engine::start_text`].
#[derive(Debug, Clone)]
pub struct TextStream<S> {
    engine: Engine<S>,
    principal: Principal,
    session_id: String,
    scope: EventScope,
    message_id: String,
}

/// A reasoning stream being written (`reasoning.started` is durable).
#[derive(Debug, Clone)]
pub struct ReasoningStream<S> {
    engine: Engine<S>,
    principal: Principal,
    session_id: String,
    scope: EventScope,
    reasoning_id: String,
    message_id: Option<String>,
}

fn body(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn message_scope(scope: &EventScope) -> &'static str {
    match scope {
        EventScope::Session => "session",
        EventScope::Run(_) => "run",
        EventScope::Workflow(_) => "workflow",
    }
}

impl<S: Store + 'static> Engine<S> {
    /// Starts a streamed message at `scope` (a run's reply is
    /// `EventScope::Run(run_id)`): appends `message.text.started` and
    /// returns the handle that writes its deltas and completion.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{EventScope, TextOptions};
    /// let reply = engine.start_text(&me, &sid, EventScope::Run(run), TextOptions::default()).await?;
    /// let thinking = reply.reasoning().await?;       // reasoningId = reasoning:{messageId}
    /// thinking.delta("The user greets; greet back.").await?;
    /// thinking.complete().await?;
    /// for word in ["Hello", ", ", "world"] {
    ///     reply.delta(word).await?;
    /// }
    /// reply.complete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_text(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        options: TextOptions,
    ) -> Result<TextStream<S>, EngineError> {
        let scope: EventScope = scope.into();
        let message_id = options
            .message_id
            .unwrap_or_else(|| self.inner.ids.next_id("msg"));
        let b = body(&[
            ("messageId", message_id.clone().into()),
            ("role", options.role.as_str().into()),
            ("messageScope", message_scope(&scope).into()),
        ]);
        self.append_body(p, session_id, "message.text.started", &scope, b)
            .await?;
        Ok(TextStream {
            engine: self.clone(),
            principal: p.clone(),
            session_id: session_id.to_owned(),
            scope,
            message_id,
        })
    }

    /// A whole assistant message at once: started, one delta, completed
    /// (three appends). Returns the `messageId`.
    pub async fn say(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        text: &str,
    ) -> Result<String, EngineError> {
        let scope: EventScope = scope.into();
        let t = self
            .start_text(p, session_id, scope, TextOptions::default())
            .await?;
        t.delta(text).await?;
        t.complete().await?;
        Ok(t.message_id)
    }

    /// Starts a reasoning stream at `scope`, joined to `message_id` when
    /// given (§9.2); its id is `reasoning_id`, else fresh. Prefer
    /// [`TextStream::reasoning`], which joins by the host convention.
    pub async fn start_reasoning(
        &self,
        p: &Principal,
        session_id: &str,
        scope: impl Into<EventScope>,
        reasoning_id: Option<String>,
        message_id: Option<String>,
    ) -> Result<ReasoningStream<S>, EngineError> {
        let scope: EventScope = scope.into();
        let reasoning_id = reasoning_id.unwrap_or_else(|| self.inner.ids.next_id("reasoning"));
        let mut b = body(&[("reasoningId", reasoning_id.clone().into())]);
        if let Some(m) = &message_id {
            b.insert("messageId".into(), m.clone().into());
        }
        self.append_body(p, session_id, "reasoning.started", &scope, b)
            .await?;
        Ok(ReasoningStream {
            engine: self.clone(),
            principal: p.clone(),
            session_id: session_id.to_owned(),
            scope,
            reasoning_id,
            message_id,
        })
    }
}

impl<S: Store + 'static> TextStream<S> {
    /// The `messageId`.
    pub fn message_id(&self) -> &str {
        &self.message_id
    }

    /// Appends `message.text.delta`.
    pub async fn delta(&self, text: &str) -> Result<StoredEvent, EngineError> {
        let b = body(&[
            ("messageId", self.message_id.clone().into()),
            ("delta", text.into()),
        ]);
        self.engine
            .append_body(
                &self.principal,
                &self.session_id,
                "message.text.delta",
                &self.scope,
                b,
            )
            .await
    }

    /// Appends `message.text.completed`; the stream takes no more deltas.
    pub async fn complete(&self) -> Result<StoredEvent, EngineError> {
        let b = body(&[("messageId", self.message_id.clone().into())]);
        self.engine
            .append_body(
                &self.principal,
                &self.session_id,
                "message.text.completed",
                &self.scope,
                b,
            )
            .await
    }

    /// Starts the reasoning of this message: `reasoningId` is
    /// `reasoning:{messageId}` and `messageId` names this message, so
    /// transcripts join them (§9.2).
    pub async fn reasoning(&self) -> Result<ReasoningStream<S>, EngineError> {
        self.engine
            .start_reasoning(
                &self.principal,
                &self.session_id,
                self.scope.clone(),
                Some(format!("reasoning:{}", self.message_id)),
                Some(self.message_id.clone()),
            )
            .await
    }
}

impl<S: Store + 'static> ReasoningStream<S> {
    /// The `reasoningId`.
    pub fn reasoning_id(&self) -> &str {
        &self.reasoning_id
    }

    fn ids(&self) -> Map<String, Value> {
        let mut b = body(&[("reasoningId", self.reasoning_id.clone().into())]);
        if let Some(m) = &self.message_id {
            b.insert("messageId".into(), m.clone().into());
        }
        b
    }

    /// Appends `reasoning.delta`.
    pub async fn delta(&self, text: &str) -> Result<StoredEvent, EngineError> {
        let mut b = self.ids();
        b.insert("delta".into(), text.into());
        self.engine
            .append_body(
                &self.principal,
                &self.session_id,
                "reasoning.delta",
                &self.scope,
                b,
            )
            .await
    }

    /// Appends `reasoning.completed`.
    pub async fn complete(&self) -> Result<StoredEvent, EngineError> {
        let b = self.ids();
        self.engine
            .append_body(
                &self.principal,
                &self.session_id,
                "reasoning.completed",
                &self.scope,
                b,
            )
            .await
    }
}
