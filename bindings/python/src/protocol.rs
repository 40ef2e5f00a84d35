//! Engine arguments from the plain values Python passes (names of scopes,
//! outcomes and statuses, JSON values), and engine results as plain
//! values. The engine's typed commands build every protocol body; nothing
//! here writes protocol JSON.

use std::sync::Arc;

use narad_core::checker::Slot;
use narad_core::ProfileSet;
use narad_engine::client::Finished;
use narad_engine::{
    AllowAll, Authorizer, Clock, Engine, EngineConfig, EngineError, EventScope, IdSource,
    Interrupt, InterruptScope, NewSession, OrderedIds, Principal, Resolve, StartRun, Started,
    StopTarget, SystemClock, Terminal, ToolOutcome,
};
use narad_stores::AnyStore;
use serde_json::Value;

/// The engine the binding drives.
pub type Eng = Engine<AnyStore>;
/// A live follower of one session.
pub type Follow = narad_engine::Follow<AnyStore>;

/// An `invalid_command` refusal naming what is wrong.
pub fn invalid(what: &str) -> EngineError {
    EngineError::InvalidCommand(what.to_owned())
}

/// What the host injects (defaults: system clock, random ids, allow all).
#[derive(Default)]
pub struct Host {
    pub clock: Option<Arc<dyn Clock>>,
    pub ids: Option<Arc<dyn IdSource>>,
    pub auth: Option<Arc<dyn Authorizer>>,
    pub config: EngineConfig,
}

/// Engine settings from Python: `(cached_sessions, history_limit,
/// snapshot_every, max_retries, lease_ttl, heartbeat_interval, token_ttl)`,
/// durations in seconds; `None` keeps the default.
pub type ConfigArgs = (
    Option<usize>,
    Option<usize>,
    Option<u64>,
    Option<usize>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

/// [`EngineConfig`] from [`ConfigArgs`].
pub fn config(a: ConfigArgs) -> Result<EngineConfig, EngineError> {
    let d = EngineConfig::default();
    let secs = |name: &str, s: Option<f64>, default: std::time::Duration| match s {
        None => Ok(default),
        Some(s) => std::time::Duration::try_from_secs_f64(s)
            .map_err(|_| invalid(&format!("{name} must be a non-negative number of seconds"))),
    };
    Ok(EngineConfig {
        cached_sessions: a.0.unwrap_or(d.cached_sessions),
        history_limit: a.1.unwrap_or(d.history_limit),
        snapshot_every: a.2.unwrap_or(d.snapshot_every),
        max_retries: a.3.unwrap_or(d.max_retries),
        lease_ttl: secs("lease_ttl", a.4, d.lease_ttl)?,
        heartbeat_interval: secs("heartbeat_interval", a.5, d.heartbeat_interval)?,
        token_ttl: secs("token_ttl", a.6, d.token_ttl)?,
    })
}

/// Opens (or creates) the store a URL names and an engine over it.
pub async fn open(
    url: &str,
    options: &narad_stores::OpenOptions,
    read_only: bool,
    host: Host,
) -> Result<Eng, narad_stores::OpenError> {
    let store = if read_only {
        narad_stores::open_read_only_with(url, options).await?
    } else {
        narad_stores::open_with(url, options).await?
    };
    Ok(Engine::with_host(
        store,
        host.clock.unwrap_or_else(|| Arc::new(SystemClock)),
        host.ids.unwrap_or_else(|| Arc::new(OrderedIds)),
        host.auth.unwrap_or_else(|| Arc::new(AllowAll)),
        host.config,
    ))
}

/// The profiles of a new session: a comma-separated list or `all`.
pub fn profiles(list: Option<String>) -> Result<Option<ProfileSet>, EngineError> {
    list.map(|l| ProfileSet::parse(&l).map_err(|_| invalid("unknown profile")))
        .transpose()
}

/// Creates a session with labels.
pub async fn create_session(
    e: &Eng,
    p: &Principal,
    new: NewSession,
    labels: std::collections::BTreeMap<String, String>,
) -> Result<String, EngineError> {
    e.create_session_labeled(p, new, labels).await
}

/// An event scope from its kind and id.
pub fn scope(kind: &str, id: Option<String>) -> Result<EventScope, EngineError> {
    match (kind, id) {
        ("session", _) => Ok(EventScope::Session),
        ("run", Some(r)) => Ok(EventScope::Run(r)),
        ("workflow", Some(w)) => Ok(EventScope::Workflow(w)),
        _ => Err(invalid(
            "scope must be session, run with an id, or workflow with an id",
        )),
    }
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

/// Starts (or queues) a run, under an idempotency `key` when given:
/// `(running, run_id)`.
pub async fn start_run(
    e: &Eng,
    p: &Principal,
    sid: &str,
    a: RunArgs,
    key: Option<String>,
) -> Result<(bool, String), EngineError> {
    let start = StartRun {
        run_id: a.run_id,
        parent_run_id: a.parent_run_id,
        workflow_id: a.workflow_id,
        client_executor_id: a.client_executor_id,
        queue_if_busy: a.queue,
    };
    let started = match key {
        Some(k) => e.idempotent(k).start_run(p, sid, start).await?,
        None => e.start_run(p, sid, start).await?,
    };
    Ok(match started {
        Started::Running(r) => (true, r),
        Started::Queued(r) => (false, r),
    })
}

/// A tool call's outcome.
pub fn outcome(
    kind: &str,
    response: Value,
    code: Option<String>,
    message: Option<String>,
) -> Result<ToolOutcome, EngineError> {
    let outcome = match kind {
        "success" => "success",
        "error" => "error",
        "cancelled" => "cancelled",
        _ => return Err(invalid("outcome must be success, error or cancelled")),
    };
    Ok(ToolOutcome {
        outcome,
        response,
        code,
        message,
    })
}

/// A run terminal: `finished`, `error` (needs a code) or `cancelled`.
pub fn terminal(
    kind: &str,
    usage: Option<Value>,
    artifact_ids: Vec<String>,
    code: Option<String>,
    message: Option<String>,
) -> Result<Terminal, EngineError> {
    if let Some(u) = &usage {
        narad_engine::Usage::from_value(u)?;
    }
    Ok(match kind {
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
    })
}

/// `stop`'s target: the run named, or the session's active root.
pub fn stop_target(run: Option<String>) -> StopTarget {
    run.map_or(StopTarget::ActiveRoot, StopTarget::Run)
}

/// An interrupt on a run or a workflow.
pub fn interrupt(
    scope_kind: &str,
    scope_id: String,
    kind: String,
    actions: Vec<String>,
    input: Option<Value>,
    expires_at: Option<f64>,
    title: Option<String>,
) -> Result<Interrupt, EngineError> {
    let scope = match scope_kind {
        "run" => InterruptScope::Run(scope_id),
        "workflow" => InterruptScope::Workflow(scope_id),
        _ => return Err(invalid("an interrupt waits on a run or a workflow")),
    };
    Ok(Interrupt {
        scope,
        kind,
        actions,
        input,
        expires_at: expires_at
            .map(crate::host::posix)
            .transpose()?
            .map(narad_engine::Expiry::At),
        title,
    })
}

/// `resolve-interrupt` by id alone.
pub fn resolve(
    interrupt_id: String,
    decision: String,
    reason: Option<String>,
    expected_revision: Option<u64>,
    members: Option<Value>,
) -> Resolve {
    Resolve {
        interrupt_id,
        decision,
        reason,
        expected_revision,
        members,
    }
}

/// A session slot as `(kind, id)`.
pub fn slot(s: Option<&Slot>) -> Option<(&'static str, String)> {
    match s? {
        Slot::Run(r) => Some(("run", r.clone())),
        Slot::Workflow(w) => Some(("workflow", w.clone())),
    }
}

/// The §10.4 capability record: `(protocolVersion, activeProfiles,
/// historyLimit, sessionSequence, activeExecution)`.
pub type Caps = (
    &'static str,
    Vec<&'static str>,
    usize,
    u64,
    Option<(&'static str, String)>,
);

/// [`Caps`] of the engine's record.
pub fn caps(c: &narad_engine::Capabilities) -> Caps {
    (
        c.protocol_version,
        c.active_profiles.clone(),
        c.history_limit,
        c.session_sequence,
        slot(c.active_execution.as_ref()),
    )
}

/// One listed open interrupt: `(sessionId, interruptId, (scope kind, id),
/// kind, title, actions, expiresAt)`.
pub type Listed = (
    String,
    String,
    (&'static str, String),
    String,
    Option<String>,
    Vec<String>,
    Option<String>,
);

/// The open interrupts of every session, one index page.
pub async fn open_interrupts(
    e: &Eng,
    p: &Principal,
    after: Option<String>,
    limit: usize,
) -> Result<(Vec<Listed>, Option<String>), EngineError> {
    let page = e.open_interrupts(p, after.as_deref(), limit).await?;
    let open = page
        .open
        .into_iter()
        .map(|i| {
            let scope = match i.scope {
                InterruptScope::Run(r) => ("run", r),
                InterruptScope::Workflow(w) => ("workflow", w),
            };
            (
                i.session_id,
                i.interrupt_id,
                scope,
                i.kind,
                i.title,
                i.actions,
                i.expires_at,
            )
        })
        .collect();
    Ok((open, page.next))
}

/// What `client_finish` did: `appended` or `repeated`.
pub fn finished(f: Finished) -> &'static str {
    match f {
        Finished::Appended => "appended",
        Finished::Repeated => "repeated",
    }
}
