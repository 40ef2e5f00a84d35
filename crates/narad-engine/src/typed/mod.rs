//! The typed layer over the engine's commands and reads: what agent
//! runtimes emit (streamed text and reasoning, progress, state and UI
//! documents, views, attachments, artifacts, extensions, trace spans,
//! usage) without hand-written protocol JSON, and the reduced state as
//! Rust types.

pub(crate) mod assets;
pub(crate) mod commands;
pub(crate) mod details;
pub(crate) mod envelope;
pub(crate) mod patch;
pub(crate) mod state;
pub(crate) mod trace;
pub(crate) mod transcript_view;
pub(crate) mod usage;

use narad_store::{Store, StoredEvent};
use serde_json::{Map, Value};

use crate::command_loop::Plan;
use crate::command_types::EventScope;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::journal::{At, Draft};

impl<S: Store + 'static> Engine<S> {
    /// Appends one event of `event_type` at `scope` with `body` (its own
    /// fields, already checked): the one path of the typed commands and of
    /// [`Engine::append`].
    pub(crate) async fn append_body(
        &self,
        p: &Principal,
        session_id: &str,
        event_type: &'static str,
        scope: &EventScope,
        body: Map<String, Value>,
    ) -> Result<StoredEvent, EngineError> {
        self.append_body_with(p, session_id, event_type, scope, body, ())
            .await
            .map(|((), ev)| ev)
    }

    /// [`Self::append_body`] answering `out` too: the result an
    /// idempotency key records (e.g. an id minted before the append).
    pub(crate) async fn append_body_with<T>(
        &self,
        p: &Principal,
        session_id: &str,
        event_type: &'static str,
        scope: &EventScope,
        body: Map<String, Value>,
        out: T,
    ) -> Result<(T, StoredEvent), EngineError>
    where
        T: Clone + serde::Serialize + serde::de::DeserializeOwned,
    {
        let (out, mut events) = self
            .command_keyed(p, session_id, |j| {
                let at = match scope {
                    EventScope::Session => At::Session,
                    EventScope::Run(r) => j.run_at(r)?,
                    EventScope::Workflow(w) => At::Workflow(w.clone()),
                };
                Ok(Plan::of(
                    vec![Draft::new(event_type, at, Value::Object(body.clone()))],
                    out.clone(),
                ))
            })
            .await?;
        let ev = events
            .pop()
            .ok_or_else(|| EngineError::InvalidCommand("nothing was appended".into()))?;
        Ok((out, ev))
    }
}

/// Serializes a typed body into the field map of an event.
pub(crate) fn body_of<T: serde::Serialize>(v: &T) -> Result<Map<String, Value>, EngineError> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(EngineError::InvalidCommand(
            "the body does not serialize to a JSON object".into(),
        )),
    }
}
