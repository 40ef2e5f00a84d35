//! The one place where the binding builds engine arguments and protocol
//! JSON. Everything here takes and returns plain Rust values (strings,
//! bytes, JSON text), so the Python-facing layer (`lib.rs`) never touches
//! an engine type and this module alone changes when the engine grows a
//! typed API (streamed text handles, typed state reads).

use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use narad_core::checker::Slot;
use narad_core::ProfileSet;
use narad_engine::client::Finished;
use narad_engine::{
    Engine, EngineError, EventScope, IdSource, Interrupt, InterruptScope, NewSession, Principal,
    RandomIds, Resolve, StartRun, Started, StopTarget, Terminal, ToolOutcome,
};
use narad_store::HistoryQuery;
use narad_stores::AnyStore;
use serde_json::{json, Value};

/// The engine the binding drives.
pub type Eng = Engine<AnyStore>;
/// A live follower of one session.
pub type Follow = narad_engine::Follow<AnyStore>;

fn invalid(what: &str) -> EngineError {
    EngineError::InvalidCommand(what.to_owned())
}

/// Parses caller JSON text; the text itself is never echoed (it may be
/// protected data).
fn parse(what: &str, text: Option<&str>) -> Result<Option<Value>, EngineError> {
    match text {
        None => Ok(None),
        Some(t) => serde_json::from_str(t)
            .map(Some)
            .map_err(|_| invalid(&format!("{what} is not valid JSON"))),
    }
}

fn parse_req(what: &str, text: &str) -> Result<Value, EngineError> {
    Ok(parse(what, Some(text))?.unwrap_or(Value::Null))
}

/// Opens (or creates) the store a URL names and an engine over it.
pub async fn open(url: &str) -> Result<Eng, EngineError> {
    Ok(Engine::new(
        narad_stores::open(url)
            .await
            .map_err(narad_store::StoreError::from)?,
    ))
}

/// Creates a session; `profiles` is a comma-separated profile list or `all`.
pub async fn create_session(
    e: &Eng,
    p: &Principal,
    session_id: Option<String>,
    profiles: Option<String>,
    workspace_id: Option<String>,
) -> Result<String, EngineError> {
    let profiles = match profiles {
        None => None,
        Some(list) => Some(ProfileSet::parse(&list).map_err(|_| invalid("unknown profile"))?),
    };
    let new = NewSession {
        session_id,
        profiles,
        workspace_id,
    };
    match e.create_session(p, new).await {
        // A session that already has events fails its head guard (head 0)
        // before its side record: it exists all the same.
        Err(EngineError::Store(narad_store::StoreError::HeadConflict { .. })) => {
            Err(EngineError::SessionExists)
        }
        other => other,
    }
}

/// `message`: a user message at session scope; `content` is JSON text.
pub async fn message(
    e: &Eng,
    p: &Principal,
    sid: &str,
    content: &str,
) -> Result<String, EngineError> {
    e.message(p, sid, parse_req("content", content)?).await
}

fn scope(kind: &str, id: Option<String>) -> Result<EventScope, EngineError> {
    match (kind, id) {
        ("session", _) => Ok(EventScope::Session),
        ("run", Some(r)) => Ok(EventScope::Run(r)),
        ("workflow", Some(w)) => Ok(EventScope::Workflow(w)),
        _ => Err(invalid(
            "scope must be session, run with an id, or workflow with an id",
        )),
    }
}

/// Appends one event of any profile; returns its stored bytes.
pub async fn append(
    e: &Eng,
    p: &Principal,
    sid: &str,
    event_type: &str,
    scope_kind: &str,
    scope_id: Option<String>,
    body: &str,
) -> Result<Bytes, EngineError> {
    let ev = e
        .append(
            p,
            sid,
            event_type,
            scope(scope_kind, scope_id)?,
            parse_req("body", body)?,
        )
        .await?;
    Ok(ev.bytes)
}

/// The arguments of `start_run`.
#[derive(Debug, Default)]
pub struct RunArgs {
    pub run_id: Option<String>,
    pub parent_run_id: Option<String>,
    pub workflow_id: Option<String>,
    pub client_executor_id: Option<String>,
    pub queue: bool,
}

/// Starts (or queues) a run: `(running, run_id)`.
pub async fn start_run(
    e: &Eng,
    p: &Principal,
    sid: &str,
    a: RunArgs,
) -> Result<(bool, String), EngineError> {
    let started = e
        .start_run(
            p,
            sid,
            StartRun {
                run_id: a.run_id,
                parent_run_id: a.parent_run_id,
                workflow_id: a.workflow_id,
                client_executor_id: a.client_executor_id,
                queue_if_busy: a.queue,
            },
        )
        .await?;
    Ok(match started {
        Started::Running(r) => (true, r),
        Started::Queued(r) => (false, r),
    })
}

/// Starts a backend (or, with `client`, a client) tool call.
pub async fn start_tool_call(
    e: &Eng,
    p: &Principal,
    sid: &str,
    run: &str,
    name: &str,
    args: &str,
    client: bool,
) -> Result<String, EngineError> {
    let args = parse_req("args", args)?;
    if client {
        e.start_client_tool_call(p, sid, run, name, args).await
    } else {
        e.start_tool_call(p, sid, run, name, args).await
    }
}

fn outcome(s: &str) -> Result<&'static str, EngineError> {
    match s {
        "success" => Ok("success"),
        "error" => Ok("error"),
        "cancelled" => Ok("cancelled"),
        _ => Err(invalid("outcome must be success, error or cancelled")),
    }
}

/// Finishes a tool call.
#[allow(clippy::too_many_arguments)]
pub async fn finish_tool_call(
    e: &Eng,
    p: &Principal,
    sid: &str,
    tool_call_id: &str,
    outcome_: &str,
    response: &str,
    code: Option<String>,
    message: Option<String>,
) -> Result<(), EngineError> {
    let out = ToolOutcome {
        outcome: outcome(outcome_)?,
        response: parse_req("response", response)?,
        code,
        message,
    };
    e.finish_tool_call(p, sid, tool_call_id, out).await
}

/// Ends a run: `kind` is `finished`, `error` or `cancelled`.
#[allow(clippy::too_many_arguments)]
pub async fn end_run(
    e: &Eng,
    p: &Principal,
    sid: &str,
    run: &str,
    kind: &str,
    usage: Option<&str>,
    artifact_ids: Vec<String>,
    code: Option<String>,
    message: Option<String>,
) -> Result<(), EngineError> {
    let usage = parse("usage", usage)?;
    let t = match kind {
        "finished" => Terminal::Finished {
            usage,
            artifact_ids,
        },
        "error" => Terminal::Error {
            code: code.ok_or_else(|| invalid("an error needs a code"))?,
            message: message.unwrap_or_default(),
            usage,
        },
        "cancelled" => Terminal::Cancelled {
            code,
            message,
            usage,
        },
        _ => return Err(invalid("status must be finished, error or cancelled")),
    };
    e.end_run(p, sid, run, t).await
}

/// `stop`: the run named, or the session's active root.
pub async fn stop(
    e: &Eng,
    p: &Principal,
    sid: &str,
    run: Option<String>,
) -> Result<String, EngineError> {
    let target = run.map_or(StopTarget::ActiveRoot, StopTarget::Run);
    e.stop(p, sid, target).await
}

/// Requests an interrupt on a run or workflow: `(interruptId, waitId)`.
#[allow(clippy::too_many_arguments)]
pub async fn request_interrupt(
    e: &Eng,
    p: &Principal,
    sid: &str,
    scope_kind: &str,
    scope_id: String,
    kind: String,
    actions: Vec<String>,
    input: Option<&str>,
    expires_at: Option<f64>,
) -> Result<(String, String), EngineError> {
    let scope = match scope_kind {
        "run" => InterruptScope::Run(scope_id),
        "workflow" => InterruptScope::Workflow(scope_id),
        _ => return Err(invalid("an interrupt waits on a run or a workflow")),
    };
    let expires_at = match expires_at {
        None => None,
        Some(s) if s.is_finite() && s >= 0.0 => Some(UNIX_EPOCH + Duration::from_secs_f64(s)),
        Some(_) => return Err(invalid("expires_at must be a POSIX time")),
    };
    e.request_interrupt(
        p,
        sid,
        Interrupt {
            scope,
            kind,
            actions,
            input: parse("input", input)?,
            expires_at,
            title: None,
        },
    )
    .await
}

/// `resolve-interrupt` by id alone; returns the owning session.
pub async fn resolve_interrupt(
    e: &Eng,
    p: &Principal,
    interrupt_id: String,
    decision: String,
    reason: Option<String>,
    expected_revision: Option<u64>,
    members: Option<&str>,
) -> Result<String, EngineError> {
    e.resolve_interrupt(
        p,
        Resolve {
            interrupt_id,
            decision,
            reason,
            expected_revision,
            members: parse("members", members)?,
        },
    )
    .await
    .map(|r| r.session_id)
}

/// A fresh unguessable id of a kind (e.g. `msg`).
pub fn new_id(kind: &str) -> String {
    RandomIds.next_id(kind)
}

/// `message.text.started` of a fresh assistant message on a run.
pub async fn text_started(
    e: &Eng,
    p: &Principal,
    sid: &str,
    run: &str,
    message_id: &str,
    role: &str,
) -> Result<(), EngineError> {
    let body = json!({"messageId": message_id, "role": role, "messageScope": "run"});
    e.append(
        p,
        sid,
        "message.text.started",
        EventScope::Run(run.into()),
        body,
    )
    .await
    .map(|_| ())
}

/// `message.text.delta`.
pub async fn text_delta(
    e: &Eng,
    p: &Principal,
    sid: &str,
    run: &str,
    message_id: &str,
    delta: &str,
) -> Result<(), EngineError> {
    let body = json!({"messageId": message_id, "delta": delta});
    e.append(
        p,
        sid,
        "message.text.delta",
        EventScope::Run(run.into()),
        body,
    )
    .await
    .map(|_| ())
}

/// `message.text.completed`.
pub async fn text_completed(
    e: &Eng,
    p: &Principal,
    sid: &str,
    run: &str,
    message_id: &str,
) -> Result<(), EngineError> {
    let body = json!({ "messageId": message_id });
    e.append(
        p,
        sid,
        "message.text.completed",
        EventScope::Run(run.into()),
        body,
    )
    .await
    .map(|_| ())
}

/// One history page: the events' bytes and the cursor to read on from.
pub async fn history(
    e: &Eng,
    p: &Principal,
    sid: &str,
    after: Option<u64>,
    root_run: Option<(String, Option<u64>)>,
    workflow: Option<(String, Option<u64>)>,
    limit: usize,
) -> Result<(Vec<Bytes>, Option<u64>), EngineError> {
    let q = HistoryQuery {
        after_session_sequence: after,
        run: root_run,
        workflow,
        limit,
    };
    let page = e.history(p, sid, &q).await?;
    Ok((
        page.events.into_iter().map(|ev| ev.bytes).collect(),
        page.next,
    ))
}

fn slot_json(slot: Option<&Slot>) -> Value {
    match slot {
        None => Value::Null,
        Some(Slot::Run(r)) => json!({"kind": "run", "id": r}),
        Some(Slot::Workflow(w)) => json!({"kind": "workflow", "id": w}),
    }
}

fn caps_json(c: &narad_engine::Capabilities) -> String {
    json!({
        "protocolVersion": c.protocol_version,
        "activeProfiles": c.active_profiles,
        "historyLimit": c.history_limit,
        "sessionSequence": c.session_sequence,
        "activeExecution": slot_json(c.active_execution.as_ref()),
    })
    .to_string()
}

/// The §10.4 capability record as JSON text.
pub async fn capabilities(e: &Eng, p: &Principal, sid: &str) -> Result<String, EngineError> {
    Ok(caps_json(&e.capabilities(p, sid).await?))
}

/// Attach: capabilities (JSON text), hydrate records, and the follower.
pub async fn attach(
    e: &Eng,
    p: &Principal,
    sid: &str,
) -> Result<(String, Vec<Bytes>, Follow), EngineError> {
    let a = e.attach(p, sid).await?;
    Ok((caps_json(&a.capabilities), a.hydrate, a.follow))
}

/// The open interrupts of every session, one index page, as JSON text.
pub async fn open_interrupts(
    e: &Eng,
    p: &Principal,
    after: Option<String>,
    limit: usize,
) -> Result<String, EngineError> {
    let page = e.open_interrupts(p, after.as_deref(), limit).await?;
    let open: Vec<Value> = page
        .open
        .iter()
        .map(|i| {
            let (kind, id) = match &i.scope {
                InterruptScope::Run(r) => ("run", r),
                InterruptScope::Workflow(w) => ("workflow", w),
            };
            json!({"sessionId": i.session_id, "interruptId": i.interrupt_id,
                   "scope": {"kind": kind, "id": id}, "kind": i.kind, "title": i.title,
                   "actions": i.actions, "expiresAt": i.expires_at})
        })
        .collect();
    Ok(json!({"open": open, "next": page.next}).to_string())
}

/// What `client_finish` did: `appended` or `repeated`.
pub async fn client_finish(
    e: &Eng,
    p: &Principal,
    message: &[u8],
) -> Result<&'static str, EngineError> {
    Ok(match e.client_finish(p, message).await? {
        Finished::Appended => "appended",
        Finished::Repeated => "repeated",
    })
}

/// One client tick, as JSON text.
pub async fn client_tick(e: &Eng, p: &Principal) -> Result<String, EngineError> {
    let r = e.client_tick(p).await?;
    Ok(
        json!({"expiredCalls": r.expired_calls, "pausedRuns": r.paused_runs,
              "unavailable": r.unavailable})
        .to_string(),
    )
}
