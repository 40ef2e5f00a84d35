//! What the untyped [`Engine::append`](crate::Engine::append) checks
//! before it drafts anything, so that its refusals name the fix: the
//! command a lifecycle type belongs to, the scope a type needs, the
//! envelope field a body must not contradict.

use narad_core::registry::{RecordClass, RecordKind, TypeInfo};
use serde_json::{Map, Value};

use crate::command_types::EventScope;
use crate::error::EngineError;

/// Lifecycle types and the command that appends each (with its
/// companions in one batch, and its ids kept by the engine).
const LIFECYCLE: &[(&str, &str)] = &[
    ("run.started", "Engine::start_run"),
    ("run.paused", "Engine::pause_run or Engine::pause_run_until"),
    ("run.resumed", "Engine::resume_run"),
    ("run.finished", "Engine::end_run with Terminal::finished()"),
    (
        "run.error",
        "Engine::end_run with Terminal::error(code, message)",
    ),
    (
        "run.cancelled",
        "Engine::end_run with Terminal::cancelled() or Engine::stop",
    ),
    ("interrupt.requested", "Engine::request_interrupt"),
    ("interrupt.resolved", "Engine::resolve_interrupt"),
    (
        "tool.call.started",
        "Engine::start_tool_call or Engine::start_client_tool_call",
    ),
    ("tool.call.finished", "Engine::finish_tool_call"),
    ("workflow.started", "Engine::start_workflow"),
];

/// Fields the engine writes into every envelope. A body may repeat one
/// only with the value the engine would write.
const ASSIGNED: &[&str] = &[
    "eventId",
    "timestamp",
    "sessionSequence",
    "sequence",
    "workflowSequence",
];

/// The command that appends `event_type`, when it is a lifecycle type.
pub(crate) fn lifecycle_command(event_type: &str) -> Option<&'static str> {
    LIFECYCLE
        .iter()
        .find(|(t, _)| *t == event_type)
        .map(|(_, c)| *c)
}

fn scope_name(scope: &EventScope) -> &'static str {
    match scope {
        EventScope::Session => "session",
        EventScope::Run(_) => "run",
        EventScope::Workflow(_) => "workflow",
    }
}

/// The body field that names a type's scope, for the types that have one.
pub(crate) fn scope_field(event_type: &str) -> Option<&'static str> {
    match event_type {
        "message.user.recorded" | "message.text.started" => Some("messageScope"),
        "state.snapshot" | "state.delta" | "state.compacted" | "ui.state.snapshot"
        | "ui.state.delta" => Some("scope"),
        _ => None,
    }
}

/// Checks an untyped append and completes its body: refuses lifecycle,
/// non-authority and unknown types, a scope the type cannot take, and
/// envelope fields that contradict the session or scope; fills the
/// type's scope field (`messageScope`, `scope`) from `scope` when absent.
pub(crate) fn prepare(
    event_type: &str,
    session_id: &str,
    scope: &EventScope,
    body: Value,
) -> Result<(&'static TypeInfo, Map<String, Value>), EngineError> {
    let Some(info) = narad_core::registry::lookup(event_type) else {
        return Err(EngineError::InvalidCommand(format!(
            "`{event_type}` is not a Narad v1 type; extensions go through `session.custom` \
             (Engine::record_custom) with a namespaced name"
        )));
    };
    if let Some(command) = lifecycle_command(event_type) {
        return Err(EngineError::InvalidCommand(format!(
            "`{event_type}` is a lifecycle event; use {command}"
        )));
    }
    if info.kind() != RecordKind::Authority {
        return Err(EngineError::InvalidCommand(format!(
            "`{event_type}` is not an authority event; only authority is appended"
        )));
    }
    let Value::Object(mut body) = body else {
        return Err(EngineError::InvalidCommand(format!(
            "the body of `{event_type}` must be a JSON object of its own fields"
        )));
    };
    let want = match info.class {
        RecordClass::RunTreeAuthority => Some("run"),
        RecordClass::WorkflowAuthority => Some("workflow"),
        _ => None,
    };
    if let Some(want) = want {
        if scope_name(scope) != want {
            let hint = if want == "run" {
                "EventScope::Run(run_id)"
            } else {
                "EventScope::Workflow(workflow_id)"
            };
            return Err(EngineError::InvalidCommand(format!(
                "`{event_type}` is {want}-scoped: pass {hint}, not EventScope::{}",
                match scope {
                    EventScope::Session => "Session",
                    EventScope::Run(_) => "Run",
                    EventScope::Workflow(_) => "Workflow",
                }
            )));
        }
    }
    if let Some(field) = scope_field(event_type) {
        let name = scope_name(scope);
        match body.get(field) {
            None => {
                body.insert(field.to_owned(), name.into());
            }
            Some(Value::String(s)) if s == name => {}
            Some(_) => {
                return Err(EngineError::InvalidCommand(format!(
                    "the body's `{field}` contradicts EventScope::{}; leave `{field}` out, \
                     the engine fills it from the scope",
                    match scope {
                        EventScope::Session => "Session",
                        EventScope::Run(_) => "Run",
                        EventScope::Workflow(_) => "Workflow",
                    }
                )));
            }
        }
    }
    let expect = |key: &str| -> Option<String> {
        match (key, scope) {
            ("type", _) => Some(event_type.to_owned()),
            ("protocolVersion", _) => Some(narad_core::PROTOCOL_VERSION.to_owned()),
            ("sessionId", _) => Some(session_id.to_owned()),
            ("runId", EventScope::Run(r)) => Some(r.clone()),
            ("workflowId", EventScope::Workflow(w)) => Some(w.clone()),
            _ => None,
        }
    };
    for key in [
        "type",
        "protocolVersion",
        "sessionId",
        "runId",
        "rootRunId",
        "workflowId",
    ] {
        let Some(given) = body.get(key) else { continue };
        match expect(key) {
            Some(v) if given.as_str() == Some(v.as_str()) => {
                body.remove(key);
            }
            _ => {
                return Err(EngineError::InvalidCommand(format!(
                    "the body's `{key}` contradicts the envelope the engine writes from the \
                     session and EventScope; leave `{key}` out of the body"
                )));
            }
        }
    }
    for key in ASSIGNED {
        if body.contains_key(*key) {
            return Err(EngineError::InvalidCommand(format!(
                "`{key}` is assigned by the engine; leave it out of the body"
            )));
        }
    }
    Ok((info, body))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn msg(r: Result<(&'static TypeInfo, Map<String, Value>), EngineError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn refusals_name_the_fix() {
        let s = EventScope::Session;
        let r = EventScope::Run("r".into());
        assert!(msg(prepare("run.finished", "s", &r, json!({}))).contains("Engine::end_run"));
        assert!(msg(prepare("progress.recorded", "s", &s, json!({})))
            .contains("pass EventScope::Run(run_id)"));
        assert!(msg(prepare(
            "message.text.delta",
            "s",
            &s,
            json!({"sessionId": "t"})
        ))
        .contains("`sessionId` contradicts"));
        assert!(msg(prepare(
            "state.snapshot",
            "s",
            &r,
            json!({"scope": "session"})
        ))
        .contains("`scope` contradicts"));
        assert!(msg(prepare("x.y", "s", &s, json!({}))).contains("not a Narad v1 type"));
        assert!(msg(prepare("session.revision", "s", &s, json!({}))).contains("not an authority"));
        assert!(
            msg(prepare("session.custom", "s", &s, json!({"eventId": "e"})))
                .contains("assigned by the engine")
        );
        let (_, body) =
            prepare("message.text.started", "s", &r, json!({"sessionId": "s"})).unwrap();
        assert_eq!(Value::Object(body), json!({"messageScope": "run"}));
    }
}
