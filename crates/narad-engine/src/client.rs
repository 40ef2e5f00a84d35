//! Client execution, host side (§11): leases, heartbeats, fenced targeted
//! execution with single-call tokens, finishes, expiry and delivery
//! failure. The engine has no transport: control messages for an executor
//! go to its [`ClientOutbox`], which the embedding transport drains.
//!
//! Durable records (store side records, written in the same batch as the
//! authority they accompany):
//! - `Lease/<executor>`: the current lease, its expiry, the executor's
//!   unfinished tokens and the runs paused for its absence;
//! - `Lease/*`: every executor ever seen (so a restarted engine finds them);
//! - `Token/<token>`: executor, originating lease, session, tool call,
//!   expiry, the execute payload, and the accepted finish or closure.
//!
//! Every change of an executor record is conditional on the bytes read
//! (`Expect::Equals`), so two engines over one file cannot lose an update;
//! a conflict re-reads and retries.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bytes::Bytes;
use narad_core::model::ControlPayload;
use narad_core::{Parsed, Record};
use narad_store::{Expect, SideSpace, SideWrite, Store, StoreError};
use serde_json::{json, Value};

use crate::engine::{side, Plan};
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::journal::Draft;
use crate::Engine;

fn client_err(code: &'static str, message: impl Into<String>) -> EngineError {
    EngineError::Client {
        code,
        message: message.into(),
    }
}

fn corrupt() -> EngineError {
    EngineError::Store(StoreError::Backend(
        "a client execution record is unreadable".into(),
    ))
}

/// A string field of a stored record (`""` when absent).
fn str_field(v: &Value, field: &str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn parse_time(v: &Value, field: &str) -> Option<SystemTime> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|t| humantime::parse_rfc3339(t).ok())
}

/// The in-memory side: outboxes and per-executor locks.
#[derive(Debug, Default)]
pub(crate) struct Clients {
    outboxes: Mutex<HashMap<String, Arc<Outbox>>>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Executors this engine has already recorded in `Lease/*`.
    remembered: Mutex<std::collections::BTreeSet<String>>,
}

impl Clients {
    fn outbox(&self, executor: &str) -> Arc<Outbox> {
        let mut m = match self.outboxes.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        Arc::clone(m.entry(executor.to_owned()).or_default())
    }

    fn lock(&self, executor: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut m = match self.locks.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        Arc::clone(m.entry(executor.to_owned()).or_default())
    }
}

/// The most control messages an outbox holds; beyond it, heartbeats are
/// dropped (executions are bounded by open tool calls and always kept).
pub const OUTBOX_CAPACITY: usize = 1024;

#[derive(Debug, Default)]
struct Outbox {
    queue: Mutex<VecDeque<(bool, Bytes)>>,
    notify: tokio::sync::Notify,
}

impl Outbox {
    fn push(&self, essential: bool, msg: Bytes) {
        if let Ok(mut q) = self.queue.lock() {
            if q.len() >= OUTBOX_CAPACITY && !essential {
                return;
            }
            q.push_back((essential, msg));
        }
        self.notify.notify_one();
    }

    fn pop(&self) -> Option<Bytes> {
        self.queue.lock().ok()?.pop_front().map(|(_, b)| b)
    }
}

/// The control messages addressed to one executor, in order. Only its
/// executor may be given them (§11.3 rule 1): the transport authenticates
/// the executor before draining.
#[derive(Debug, Clone)]
pub struct ClientOutbox {
    inner: Arc<Outbox>,
}

impl ClientOutbox {
    /// The next message, waiting for one.
    pub async fn next(&self) -> Bytes {
        loop {
            let notified = self.inner.notify.notified();
            if let Some(b) = self.inner.pop() {
                return b;
            }
            notified.await;
        }
    }

    /// The next message if one is queued.
    pub fn try_next(&self) -> Option<Bytes> {
        self.inner.pop()
    }

    /// The next message, typed: the bytes above parsed as the control
    /// message they are (the engine only queues valid ones).
    pub async fn next_control(&self) -> Result<(ControlPayload, Bytes), EngineError> {
        let bytes = self.next().await;
        match narad_core::Validator::default().parse(&bytes) {
            Ok(Parsed::Record {
                record: Record::Control(c),
                ..
            }) => Ok((c.payload, bytes)),
            _ => Err(EngineError::InvalidCommand(
                "the outbox held a record that is not a control message".into(),
            )),
        }
    }
}

/// What `client_finish` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// `tool.call.finished` was appended.
    Appended,
    /// The identical finish was accepted before; nothing appended.
    Repeated,
}

/// What one `client_tick` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Tool calls closed with `client_execution_expired`.
    pub expired_calls: Vec<String>,
    /// Runs paused with `client_executor_unavailable`.
    pub paused_runs: Vec<String>,
    /// Executors whose lease lapsed.
    pub unavailable: Vec<String>,
}

/// An executor's durable record.
#[derive(Debug, Clone, Default)]
struct ExecutorRecord {
    raw: Option<Bytes>,
    lease: Option<String>,
    lease_expires: Option<SystemTime>,
    pending: Vec<String>,
    /// `(session, run, waitId)` paused for this executor's absence.
    paused: Vec<(String, String, String)>,
}

impl ExecutorRecord {
    fn decode(raw: Option<Bytes>) -> Result<Self, EngineError> {
        let Some(b) = raw else {
            return Ok(Self::default());
        };
        let v: Value = serde_json::from_slice(&b).map_err(|_| corrupt())?;
        let strs = |k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let paused = v
            .get("paused")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| {
                        let f = |i: usize| p.get(i).and_then(Value::as_str).map(str::to_owned);
                        Some((f(0)?, f(1)?, f(2)?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            lease: v.get("leaseId").and_then(Value::as_str).map(str::to_owned),
            lease_expires: parse_time(&v, "leaseExpiresAt"),
            pending: strs("pending"),
            paused,
            raw: Some(b),
        })
    }

    fn encode(&self) -> Vec<u8> {
        json!({
            "leaseId": self.lease,
            "leaseExpiresAt": self.lease_expires.map(timestamp),
            "pending": self.pending,
            "paused": self.paused.iter().map(|(s, r, w)| json!([s, r, w])).collect::<Vec<_>>(),
        })
        .to_string()
        .into_bytes()
    }

    fn valid_lease(&self, now: SystemTime) -> Option<&str> {
        match (&self.lease, self.lease_expires) {
            (Some(l), Some(t)) if now < t => Some(l),
            _ => None,
        }
    }

    /// The conditional write replacing this record.
    fn write(&self, executor: &str) -> SideWrite {
        let expect = match &self.raw {
            Some(b) => Expect::Equals(b.clone()),
            None => Expect::Absent,
        };
        side(SideSpace::Lease, executor, expect, self.encode())
    }
}

fn control(payload: &ControlPayload) -> Bytes {
    let mut v = serde_json::to_value(payload).unwrap_or(Value::Null);
    v["protocolVersion"] = narad_core::PROTOCOL_VERSION.into();
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

const EXECUTORS_KEY: &str = "*";

impl<S: Store + 'static> Engine<S> {
    async fn executor(&self, executor: &str) -> Result<ExecutorRecord, EngineError> {
        ExecutorRecord::decode(self.inner.store.side(SideSpace::Lease, executor).await?)
    }

    async fn token(&self, token: &str) -> Result<Option<(Bytes, Value)>, EngineError> {
        match self.inner.store.side(SideSpace::Token, token).await? {
            Some(b) => {
                let v = serde_json::from_slice(&b).map_err(|_| corrupt())?;
                Ok(Some((b, v)))
            }
            None => Ok(None),
        }
    }

    /// Registers `executor` in the durable list of executors (idempotent).
    async fn remember_executor(&self, executor: &str) -> Result<(), EngineError> {
        // The list only grows: once recorded, no need to read it again.
        let known = |c: &Clients| c.remembered.lock().is_ok_and(|r| r.contains(executor));
        if known(&self.inner.clients) {
            return Ok(());
        }
        let done = |c: &Clients| {
            if let Ok(mut r) = c.remembered.lock() {
                r.insert(executor.to_owned());
            }
        };
        for _ in 0..=self.inner.config.max_retries {
            let raw = self
                .inner
                .store
                .side(SideSpace::Lease, EXECUTORS_KEY)
                .await?;
            let mut list: Vec<String> = match &raw {
                Some(b) => serde_json::from_slice(b).map_err(|_| corrupt())?,
                None => Vec::new(),
            };
            if list.iter().any(|e| e == executor) {
                done(&self.inner.clients);
                return Ok(());
            }
            list.push(executor.to_owned());
            let expect = raw.map_or(Expect::Absent, Expect::Equals);
            let bytes = serde_json::to_vec(&list).map_err(|_| corrupt())?;
            let batch = narad_store::Batch {
                side: vec![side(SideSpace::Lease, EXECUTORS_KEY, expect, bytes)],
                ..narad_store::Batch::default()
            };
            match self.inner.store.append(batch).await {
                Ok(_) => {
                    done(&self.inner.clients);
                    return Ok(());
                }
                Err(StoreError::SideConflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(EngineError::Contended)
    }

    /// The outbox of control messages for `executor`.
    pub fn client_outbox(&self, executor: &str) -> ClientOutbox {
        ClientOutbox {
            inner: self.inner.clients.outbox(executor),
        }
    }

    /// Attaches (or reattaches) a logical executor: a fresh unguessable
    /// lease supersedes any prior one; `client.attached` goes to its outbox,
    /// then every unfinished execution is redelivered with its original
    /// token and lease, and runs paused for its absence resume.
    pub async fn attach_client(
        &self,
        p: &Principal,
        executor: &str,
    ) -> Result<String, EngineError> {
        self.authorize(
            p,
            crate::Action::Write {
                session_id: "",
                event_type: "client.attached",
            },
        )?;
        if executor.is_empty() {
            return Err(EngineError::InvalidCommand("empty clientExecutorId".into()));
        }
        self.remember_executor(executor).await?;
        let lock = self.inner.clients.lock(executor);
        let _guard = lock.lock().await;
        let lease = self.inner.ids.next_id("lease");
        let now = self.inner.clock.now();
        let expires = now + self.inner.config.lease_ttl;
        let mut rec;
        loop {
            rec = self.executor(executor).await?;
            let mut next = rec.clone();
            next.lease = Some(lease.clone());
            next.lease_expires = Some(expires);
            let resumes = std::mem::take(&mut next.paused);
            let batch = narad_store::Batch {
                side: vec![next.write(executor)],
                ..narad_store::Batch::default()
            };
            match self.inner.store.append(batch).await {
                Ok(_) => {
                    rec = next;
                    // Resume what waited for this executor.
                    for (sid, run, wait) in resumes {
                        match self.resume_run(p, &sid, &run, &wait).await {
                            Ok(()) | Err(EngineError::Rejected { .. }) => {}
                            Err(e) => return Err(e),
                        }
                    }
                    break;
                }
                Err(StoreError::SideConflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let out = self.inner.clients.outbox(executor);
        out.push(
            true,
            control(&ControlPayload::ClientAttached {
                client_executor_id: executor.to_owned(),
                lease_id: lease.clone(),
                heartbeat_interval_ms: self.inner.config.heartbeat_interval.as_millis() as u64,
                lease_expires_at: timestamp(expires),
            }),
        );
        for token in &rec.pending {
            if let Some((_, t)) = self.token(token).await? {
                if t.get("finish").is_none_or(Value::is_null)
                    && t.get("closed").is_none_or(Value::is_null)
                {
                    out.push(true, execute_message(token, &t));
                }
            }
        }
        Ok(lease)
    }

    /// `client.heartbeat`: renews the executor's current, unexpired lease.
    pub async fn client_heartbeat(
        &self,
        p: &Principal,
        executor: &str,
        lease: &str,
    ) -> Result<(), EngineError> {
        self.authorize(
            p,
            crate::Action::Write {
                session_id: "",
                event_type: "client.heartbeat",
            },
        )?;
        let lock = self.inner.clients.lock(executor);
        let _guard = lock.lock().await;
        loop {
            let rec = self.executor(executor).await?;
            let now = self.inner.clock.now();
            if rec.valid_lease(now) != Some(lease) {
                return Err(client_err(
                    "lease_invalid",
                    "the lease is not current or has expired",
                ));
            }
            let mut next = rec.clone();
            next.lease_expires = Some(now + self.inner.config.lease_ttl);
            let batch = narad_store::Batch {
                side: vec![next.write(executor)],
                ..narad_store::Batch::default()
            };
            match self.inner.store.append(batch).await {
                Ok(_) => return Ok(()),
                Err(StoreError::SideConflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Starts a client tool call on a run bound to an executor. With a valid
    /// lease: `tool.call.started` and the durable token commit together,
    /// then exactly one `client.tool.execute` goes to that executor's
    /// outbox. Without one, delivery cannot be accepted: the call is closed
    /// at once with `client_unavailable` (§11.3 rule 11).
    pub async fn start_client_tool_call(
        &self,
        p: &Principal,
        session_id: &str,
        run_id: &str,
        tool_name: &str,
        args: Value,
    ) -> Result<String, EngineError> {
        let tool_call_id = self.inner.ids.next_id("tool");
        let token = self.inner.ids.next_id("token");
        // The executor comes from the run's binding (read under the session
        // lock by the plan; here only to pick the executor lock).
        let executor = {
            let (e, _) = self
                .command(p, session_id, |j| {
                    let run = j
                        .checker
                        .run(&j.session_id, run_id)
                        .ok_or(EngineError::UnknownRun)?;
                    Ok(Plan::of(Vec::new(), run.client_executor.clone()))
                })
                .await?;
            e
        };
        let Some(executor) = executor else {
            // Let the checker refuse it with its own code.
            let (_, _) = self
                .command(p, session_id, |j| {
                    let body = json!({"toolCallId": tool_call_id, "toolName": tool_name, "executor": "client", "args": args});
                    Ok(Plan::of(vec![Draft::new("tool.call.started", j.run_at(run_id)?, body)], ()))
                })
                .await?;
            return Ok(tool_call_id);
        };
        self.remember_executor(&executor).await?;
        let lock = self.inner.clients.lock(&executor);
        let _guard = lock.lock().await;
        for _ in 0..=self.inner.config.max_retries {
            let rec = self.executor(&executor).await?;
            let now = self.inner.clock.now();
            let lease = rec.valid_lease(now).map(str::to_owned);
            let expires = now + self.inner.config.token_ttl;
            let token_record = json!({
                "executor": executor, "lease": lease, "sessionId": session_id,
                "toolCallId": tool_call_id, "runId": run_id,
                "expiresAt": timestamp(expires), "toolName": tool_name, "args": args,
                "finish": null, "closed": null,
            });
            let r = self
                .command(p, session_id, |j| {
                    let at = j.run_at(run_id)?;
                    let started = Draft::new(
                        "tool.call.started",
                        at.clone(),
                        json!({"toolCallId": tool_call_id, "toolName": tool_name, "executor": "client", "args": args}),
                    );
                    if lease.is_none() {
                        let closed = Draft::new(
                            "tool.call.finished",
                            at,
                            json!({"toolCallId": tool_call_id, "outcome": "error",
                                   "response": {"code": "client_unavailable"}, "code": "client_unavailable",
                                   "message": closure_message("client_unavailable")}),
                        );
                        return Ok(Plan::of(vec![started, closed], false));
                    }
                    let mut next = rec.clone();
                    next.pending.push(token.clone());
                    let mut plan = Plan::of(vec![started], true);
                    plan.side.push(side(
                        SideSpace::Token,
                        &token,
                        Expect::Absent,
                        token_record.to_string().into_bytes(),
                    ));
                    plan.side.push(next.write(&executor));
                    Ok(plan)
                })
                .await;
            match r {
                Ok((true, _)) => {
                    self.inner
                        .clients
                        .outbox(&executor)
                        .push(true, execute_message(&token, &token_record));
                    return Ok(tool_call_id);
                }
                Ok((false, _)) => return Ok(tool_call_id),
                Err(EngineError::Store(StoreError::SideConflict)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::Contended)
    }

    /// `client.tool.finish` (the control message's bytes, as received).
    /// The token is validated — its executor, its originating lease (even
    /// superseded), its tool call, its expiry — before `tool.call.finished`
    /// is appended with exactly the finish's outcome and response, in the
    /// same batch as the accepted finish. An identical repeat is
    /// [`Finished::Repeated`]; other data under the same token is refused.
    pub async fn client_finish(
        &self,
        p: &Principal,
        message: &[u8],
    ) -> Result<Finished, EngineError> {
        let parsed = narad_core::Validator::default()
            .parse(message)
            .map_err(|e| EngineError::Rejected {
                code: e.code.as_str(),
                section: "11",
                message: e.to_string(),
            })?;
        let Parsed::Record {
            record: Record::Control(c),
            ..
        } = parsed
        else {
            return Err(EngineError::InvalidCommand("not a control message".into()));
        };
        let ControlPayload::ClientToolFinish {
            client_executor_id,
            lease_id,
            execution_token,
            tool_call_id,
            outcome,
            response,
        } = c.payload
        else {
            return Err(EngineError::InvalidCommand("not client.tool.finish".into()));
        };
        self.authorize(
            p,
            crate::Action::Write {
                session_id: "",
                event_type: "client.tool.finish",
            },
        )?;
        let outcome = serde_json::to_value(outcome).unwrap_or(Value::Null);
        let finish = json!({"outcome": outcome, "response": response});
        let lock = self.inner.clients.lock(&client_executor_id);
        let _guard = lock.lock().await;
        for _ in 0..=self.inner.config.max_retries {
            let Some((raw, t)) = self.token(&execution_token).await? else {
                return Err(client_err("token_unknown", "no such execution token"));
            };
            let field = |k: &str| str_field(&t, k);
            if field("executor") != client_executor_id {
                return Err(client_err(
                    "executor_mismatch",
                    "the token belongs to another executor",
                ));
            }
            if field("lease") != lease_id || field("toolCallId") != tool_call_id {
                return Err(client_err(
                    "token_mismatch",
                    "the token was issued to another lease or tool call",
                ));
            }
            if let Some(prev) = t.get("finish").filter(|f| !f.is_null()) {
                return if *prev == finish {
                    Ok(Finished::Repeated)
                } else {
                    Err(client_err(
                        "finish_conflict",
                        "the token was finished with other data",
                    ))
                };
            }
            if t.get("closed").is_some_and(|c| !c.is_null()) {
                return Err(client_err("call_closed", "the call was already closed"));
            }
            let now = self.inner.clock.now();
            if parse_time(&t, "expiresAt").is_none_or(|e| now >= e) {
                return Err(client_err(
                    "token_expired",
                    "the execution token has expired",
                ));
            }
            let sid = field("sessionId");
            let rec = self.executor(&client_executor_id).await?;
            let mut next = rec.clone();
            next.pending.retain(|x| *x != execution_token);
            let mut accepted = t.clone();
            accepted["finish"] = finish.clone();
            let r = self
                .command(p, &sid, |j| {
                    let (run, open) = j
                        .checker
                        .tool_call(&j.session_id, &tool_call_id)
                        .ok_or(EngineError::UnknownToolCall)?;
                    if !open {
                        return Err(client_err("call_closed", "the call was already closed"));
                    }
                    let mut body = json!({"toolCallId": tool_call_id, "outcome": outcome});
                    body["response"] = response.clone();
                    let mut plan = Plan::of(
                        vec![Draft::new("tool.call.finished", j.run_at(run)?, body)],
                        (),
                    );
                    plan.side.push(side(
                        SideSpace::Token,
                        &execution_token,
                        Expect::Equals(raw.clone()),
                        accepted.to_string().into_bytes(),
                    ));
                    plan.side.push(next.write(&client_executor_id));
                    Ok(plan)
                })
                .await;
            match r {
                Ok(_) => return Ok(Finished::Appended),
                Err(EngineError::Store(StoreError::SideConflict)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::Contended)
    }

    /// The transport could not deliver an execution: the call closes with
    /// `outcome=error`, `code=delivery_failed` (unless already closed).
    pub async fn client_delivery_failed(
        &self,
        p: &Principal,
        token: &str,
    ) -> Result<(), EngineError> {
        self.close_token(p, token, "delivery_failed")
            .await
            .map(|_| ())
    }

    /// Closes a token's call without a finish (`code` is the closure code).
    /// Returns the tool call id if it closed it.
    async fn close_token(
        &self,
        p: &Principal,
        token: &str,
        code: &'static str,
    ) -> Result<Option<String>, EngineError> {
        for _ in 0..=self.inner.config.max_retries {
            let Some((raw, t)) = self.token(token).await? else {
                return Err(client_err("token_unknown", "no such execution token"));
            };
            let field = |k: &str| str_field(&t, k);
            let executor = field("executor");
            let done = t.get("finish").is_some_and(|f| !f.is_null())
                || t.get("closed").is_some_and(|c| !c.is_null());
            let rec = self.executor(&executor).await?;
            let mut next = rec.clone();
            next.pending.retain(|x| x != token);
            let (sid, tool) = (field("sessionId"), field("toolCallId"));
            let mut closed = t.clone();
            closed["closed"] = code.into();
            let r = self
                .command(p, &sid, |j| {
                    let open_in = j
                        .checker
                        .tool_call(&j.session_id, &tool)
                        .filter(|(_, open)| *open)
                        .map(|(run, _)| run.to_owned());
                    let mut plan = Plan::of(Vec::new(), false);
                    if !done {
                        plan.side.push(side(
                            SideSpace::Token,
                            token,
                            Expect::Equals(raw.clone()),
                            closed.to_string().into_bytes(),
                        ));
                    }
                    if next.pending.len() != rec.pending.len() {
                        plan.side.push(next.write(&executor));
                    }
                    if let (Some(run), false) = (open_in, done) {
                        plan.drafts.push(Draft::new(
                            "tool.call.finished",
                            j.run_at(&run)?,
                            json!({"toolCallId": tool, "outcome": "error",
                                   "response": {"code": code}, "code": code,
                                   "message": closure_message(code)}),
                        ));
                        plan.out = true;
                    }
                    Ok(plan)
                })
                .await;
            match r {
                Ok((closed, _)) => return Ok(closed.then_some(tool)),
                Err(EngineError::Store(StoreError::SideConflict)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EngineError::Contended)
    }

    /// The host's timer: `server.heartbeat` to executors with a valid lease;
    /// calls whose token expired close with `client_execution_expired`;
    /// executors whose lease lapsed are unavailable, and their runs with an
    /// open client call pause with `reason=client_executor_unavailable`
    /// (never terminated by missing heartbeats) until a lease returns.
    pub async fn client_tick(&self, p: &Principal) -> Result<TickReport, EngineError> {
        let mut report = TickReport::default();
        let list: Vec<String> = match self
            .inner
            .store
            .side(SideSpace::Lease, EXECUTORS_KEY)
            .await?
        {
            Some(b) => serde_json::from_slice(&b).map_err(|_| corrupt())?,
            None => Vec::new(),
        };
        for executor in list {
            let lock = self.inner.clients.lock(&executor);
            let _guard = lock.lock().await;
            let now = self.inner.clock.now();
            let rec = self.executor(&executor).await?;
            // Expired tokens first: their calls close, whatever the lease.
            for token in rec.pending.clone() {
                let Some((_, t)) = self.token(&token).await? else {
                    continue;
                };
                if parse_time(&t, "expiresAt").is_some_and(|e| now >= e) {
                    if let Some(call) = self
                        .close_token(p, &token, "client_execution_expired")
                        .await?
                    {
                        report.expired_calls.push(call);
                    }
                }
            }
            let rec = self.executor(&executor).await?;
            if rec.valid_lease(now).is_some() {
                self.inner.clients.outbox(&executor).push(
                    false,
                    control(&ControlPayload::ServerHeartbeat {
                        server_time: Some(timestamp(now)),
                    }),
                );
                continue;
            }
            if rec.lease.is_none() && rec.pending.is_empty() {
                continue;
            }
            report.unavailable.push(executor.clone());
            // Pause each running run that waits on this executor.
            let mut paused = rec.paused.clone();
            for token in &rec.pending {
                let Some((_, t)) = self.token(token).await? else {
                    continue;
                };
                let field = |k: &str| str_field(&t, k);
                let (sid, run) = (field("sessionId"), field("runId"));
                if paused.iter().any(|(s, r, _)| *s == sid && *r == run) {
                    continue;
                }
                let wait = self.inner.ids.next_id("wait");
                let r = self
                    .command(p, &sid, |j| {
                        let running = j
                            .checker
                            .run(&j.session_id, &run)
                            .is_some_and(|r| r.state == narad_core::checker::RunState::Running);
                        if !running {
                            return Ok(Plan::of(Vec::new(), false));
                        }
                        Ok(Plan::of(
                            vec![Draft::new(
                                "run.paused",
                                j.run_at(&run)?,
                                json!({"waitId": wait, "reason": "client_executor_unavailable",
                                       "resumeMode": "automatic"}),
                            )],
                            true,
                        ))
                    })
                    .await?;
                if r.0 {
                    paused.push((sid, run.clone(), wait));
                    report.paused_runs.push(run);
                }
            }
            if paused.len() != rec.paused.len() {
                let mut next = rec.clone();
                next.paused = paused;
                let batch = narad_store::Batch {
                    side: vec![next.write(&executor)],
                    ..narad_store::Batch::default()
                };
                // A conflict means another engine changed the record; the
                // next tick sees its state.
                match self.inner.store.append(batch).await {
                    Ok(_) | Err(StoreError::SideConflict) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(report)
    }
}

/// The user-safe message of a closure code.
fn closure_message(code: &str) -> &'static str {
    match code {
        "client_unavailable" => "The selected client executor is unavailable.",
        "client_execution_expired" => "The client did not finish the tool call in time.",
        "delivery_failed" => "The tool call could not be delivered to the client.",
        _ => "The tool call was closed.",
    }
}

fn execute_message(token: &str, t: &Value) -> Bytes {
    let field = |k: &str| str_field(t, k);
    control(&ControlPayload::ClientToolExecute {
        client_executor_id: field("executor"),
        lease_id: field("lease"),
        execution_token: token.to_owned(),
        execution_token_expires_at: field("expiresAt"),
        tool_call_id: field("toolCallId"),
        tool_name: field("toolName"),
        args: t.get("args").cloned().unwrap_or(Value::Null),
    })
}
