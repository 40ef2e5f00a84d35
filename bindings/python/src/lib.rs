//! `narad._native`: the extension module under the `narad` Python package.
//!
//! Every engine call returns an asyncio future that the caller's loop
//! drives (`bridge`), so the event loop never blocks. Arguments are plain
//! Python values (JSON-like objects become `serde_json` values without JSON
//! text, `conv`); results are Python values built on the loop's thread.
//! The core commands are methods of `NativeEngine`; the session lifecycle,
//! the typed recording commands and the streams live in their own modules.

/// Runs `$call` on the engine `$e`, or, with an idempotency key, on the
/// engine's [`narad_engine::Idempotent`] handle for that key (same method,
/// same arguments: a retry answers the recorded result).
macro_rules! keyed {
    ($e:ident, $key:ident, |$h:ident| $call:expr) => {
        match $key {
            Some(k) => {
                let $h = $e.idempotent(k);
                $call.await
            }
            None => {
                let $h = &$e;
                $call.await
            }
        }
    };
}

mod assets;
mod bench;
mod bridge;
mod conv;
mod errors;
mod host;
mod knob;
mod lifecycle;
mod protocol;
mod records;
mod spin;
mod split;
mod state;
mod streams;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use narad_engine::{EngineError, NewSession, Principal, SequentialIds};
use pyo3::prelude::*;

use crate::bridge::{spawn, spawn_endless};
use crate::conv::{opt_value, value, Json, Raw, Typed};
use crate::protocol::{Eng, Host, RunArgs};

fn closed() -> EngineError {
    EngineError::InvalidCommand("the engine is closed".into())
}

/// The engine over one store, acting as one principal.
#[pyclass(frozen, module = "narad._native")]
pub struct NativeEngine {
    engine: Arc<Mutex<Option<Eng>>>,
    principal: Principal,
}

impl NativeEngine {
    /// The engine and principal, or `invalid_command` once closed.
    pub fn get(&self) -> PyResult<(Eng, Principal)> {
        let guard = self.engine.lock().map_err(|_| errors::to_py(closed()))?;
        let e = guard.as_ref().ok_or_else(|| errors::to_py(closed()))?;
        Ok((e.clone(), self.principal.clone()))
    }
}

/// Runs `$body` (an async block using `e` and `p`) as an awaitable.
#[macro_export]
macro_rules! awaitable {
    ($self:ident, $py:ident, |$e:ident, $p:ident| $body:expr) => {{
        let ($e, $p) = $self.get()?;
        $crate::bridge::spawn($py, async move { $body })
    }};
    // A read whose work grows with the session: it starts on a worker.
    (on_worker $self:ident, $py:ident, |$e:ident, $p:ident| $body:expr) => {{
        let ($e, $p) = $self.get()?;
        $crate::bridge::spawn_on_worker($py, async move { $body })
    }};
}

#[pymethods]
impl NativeEngine {
    #[staticmethod]
    #[pyo3(signature = (url, principal = "local".to_owned(), clock = None, sequential_ids = false, rules = None, config = None, redb_cache_bytes = None, read_only = false))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn open<'py>(
        py: Python<'py>,
        url: String,
        principal: String,
        clock: Option<PyRef<'py, host::NativeClock>>,
        sequential_ids: bool,
        rules: Option<PyRef<'py, host::NativeRules>>,
        config: Option<protocol::ConfigArgs>,
        redb_cache_bytes: Option<usize>,
        read_only: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut h = Host::default();
        if let Some(c) = config {
            h.config = protocol::config(c).map_err(errors::to_py)?;
        }
        if let Some(c) = clock {
            h.clock = Some(c.clock.clone());
        }
        if sequential_ids {
            h.ids = Some(Arc::new(SequentialIds::default()));
        }
        if let Some(r) = rules {
            h.auth = Some(r.rules.clone());
        }
        spawn(py, async move {
            let mut options = narad_stores::OpenOptions::default();
            if let Some(b) = redb_cache_bytes {
                options = options.redb_cache_bytes(b);
            }
            let engine = protocol::open(&url, &options, read_only, h).await?;
            Ok::<_, narad_stores::OpenError>(NativeEngine {
                engine: Arc::new(Mutex::new(Some(engine))),
                principal: Principal::new(principal),
            })
        })
    }

    /// The same engine acting as another principal.
    fn with_principal(&self, principal: String) -> Self {
        Self {
            engine: Arc::clone(&self.engine),
            principal: Principal::new(principal),
        }
    }

    /// The principal this handle acts as.
    #[getter]
    fn principal(&self) -> &str {
        &self.principal.0
    }

    /// Finishes accepted appends and releases the store (idempotent).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let e = self.engine.lock().ok().and_then(|mut g| g.take());
        spawn(py, async move {
            match e {
                Some(e) => e.close().await,
                None => Ok(()),
            }
        })
    }

    /// `(hydrations, from_snapshot, retries, snapshots_rejected,
    /// cached_sessions, snapshots_earlier)`.
    fn stats(&self) -> PyResult<(u64, u64, u64, u64, usize, u64)> {
        let (e, _) = self.get()?;
        let s = e.stats();
        Ok((
            s.hydrations,
            s.from_snapshot,
            s.retries,
            s.snapshots_rejected,
            e.cached_sessions(),
            s.snapshots_earlier,
        ))
    }

    #[pyo3(signature = (session_id = None, profiles = None, workspace_id = None, labels = BTreeMap::new(), key = None))]
    fn create_session<'py>(
        &self,
        py: Python<'py>,
        session_id: Option<String>,
        profiles: Option<String>,
        workspace_id: Option<String>,
        labels: BTreeMap<String, String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| {
            let new = NewSession {
                session_id,
                profiles: protocol::profiles(profiles)?,
                workspace_id,
            };
            match key {
                None => protocol::create_session(&e, &p, new, labels).await,
                Some(_) if !labels.is_empty() => Err(protocol::invalid(
                    "a keyed create_session takes no labels; set them with set_labels",
                )),
                Some(k) => e.idempotent(k).create_session(&p, new).await,
            }
        })
    }

    #[pyo3(signature = (session_id, content, message_id = None, key = None))]
    fn message<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        content: Bound<'py, PyAny>,
        message_id: Option<String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let content = value(&content)?;
        awaitable!(self, py, |e, p| match (message_id, key) {
            (Some(_), Some(_)) => Err(protocol::invalid(
                "give message_id or idempotency_key, not both",
            )),
            (Some(id), None) => e.message_with_id(&p, &session_id, &id, content).await,
            (None, key) => keyed!(e, key, |h| h.message(&p, &session_id, content)),
        })
    }

    #[pyo3(signature = (session_id, event_type, scope, scope_id, body, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn append<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        event_type: String,
        scope: String,
        scope_id: Option<String>,
        body: Bound<'py, PyAny>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let body = value(&body)?;
        awaitable!(self, py, |e, p| {
            let scope = protocol::scope(&scope, scope_id)?;
            let ev = keyed!(e, key, |h| h.append(
                &p,
                &session_id,
                &event_type,
                scope,
                body
            ))?;
            Ok::<_, EngineError>(Raw(ev.bytes))
        })
    }

    #[pyo3(signature = (session_id, run_id = None, parent_run_id = None, workflow_id = None, client_executor_id = None, queue = false, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn start_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: Option<String>,
        parent_run_id: Option<String>,
        workflow_id: Option<String>,
        client_executor_id: Option<String>,
        queue: bool,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = RunArgs {
            run_id,
            parent_run_id,
            workflow_id,
            client_executor_id,
            queue,
        };
        awaitable!(self, py, |e, p| protocol::start_run(
            &e,
            &p,
            &session_id,
            args,
            key
        )
        .await)
    }

    fn drain_queue<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.drain_queue(&p, &session_id).await)
    }

    #[pyo3(signature = (session_id, workflow_id = None, default_client_executor_id = None, key = None))]
    fn start_workflow<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        workflow_id: Option<String>,
        default_client_executor_id: Option<String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| keyed!(e, key, |h| h.start_workflow(
            &p,
            &session_id,
            workflow_id,
            default_client_executor_id
        )))
    }

    #[pyo3(signature = (session_id, run_id, tool_name, args, client = false, key = None, tool_call_id = None))]
    #[allow(clippy::too_many_arguments)]
    fn start_tool_call<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        tool_name: String,
        args: Bound<'py, PyAny>,
        client: bool,
        key: Option<String>,
        tool_call_id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = value(&args)?;
        awaitable!(self, py, |e, p| match (client, key, tool_call_id) {
            (true, None, None) => {
                e.start_client_tool_call(&p, &session_id, &run_id, &tool_name, args)
                    .await
            }
            (true, _, _) => Err(protocol::invalid(
                "a client tool call takes no idempotency key or tool_call_id",
            )),
            (false, Some(_), Some(_)) => Err(protocol::invalid(
                "give tool_call_id or idempotency_key, not both",
            )),
            (false, None, Some(id)) => {
                e.start_tool_call_with_id(&p, &session_id, &run_id, &id, &tool_name, args)
                    .await
            }
            (false, key, None) => keyed!(e, key, |h| h.start_tool_call(
                &p,
                &session_id,
                &run_id,
                &tool_name,
                args
            )),
        })
    }

    /// Writes a reducer snapshot of the session at its head; returns the head.
    fn write_snapshot<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(on_worker self, py, |e, p| e.write_snapshot(&p, &session_id).await)
    }

    #[pyo3(signature = (session_id, tool_call_id, outcome, response, code = None, message = None, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn finish_tool_call<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        tool_call_id: String,
        outcome: String,
        response: Bound<'py, PyAny>,
        code: Option<String>,
        message: Option<String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let response = value(&response)?;
        awaitable!(self, py, |e, p| {
            let out = protocol::outcome(&outcome, response, code, message)?;
            keyed!(e, key, |h| h.finish_tool_call(
                &p,
                &session_id,
                &tool_call_id,
                out
            ))
        })
    }

    #[pyo3(signature = (session_id, run_id, reason, automatic = false, retry_at = None, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn pause_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        reason: String,
        automatic: bool,
        retry_at: Option<f64>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| match retry_at {
            Some(t) => {
                let at = host::posix(t)?;
                keyed!(e, key, |h| h.pause_run_until(
                    &p,
                    &session_id,
                    &run_id,
                    &reason,
                    at
                ))
            }
            None => keyed!(e, key, |h| h.pause_run(
                &p,
                &session_id,
                &run_id,
                &reason,
                automatic
            )),
        })
    }

    #[pyo3(signature = (session_id, run_id, wait_id, key = None))]
    fn resume_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        wait_id: String,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| keyed!(e, key, |h| h.resume_run(
            &p,
            &session_id,
            &run_id,
            &wait_id
        )))
    }

    #[pyo3(signature = (session_id, run_id, status, usage = None, artifact_ids = Vec::new(), code = None, message = None, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn end_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        status: String,
        usage: Option<Bound<'py, PyAny>>,
        artifact_ids: Vec<String>,
        code: Option<String>,
        message: Option<String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let usage = opt_value(usage.as_ref())?;
        awaitable!(self, py, |e, p| {
            let t = protocol::terminal(&status, usage, artifact_ids, code, message)?;
            keyed!(e, key, |h| h.end_run(&p, &session_id, &run_id, t))
        })
    }

    #[pyo3(signature = (session_id, run_id = None, key = None))]
    fn stop<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: Option<String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| keyed!(e, key, |h| h.stop(
            &p,
            &session_id,
            protocol::stop_target(run_id)
        )))
    }

    #[pyo3(signature = (session_id, scope, scope_id, kind, actions, input = None, expires_at = None, title = None, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn request_interrupt<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        scope: String,
        scope_id: String,
        kind: String,
        actions: Vec<String>,
        input: Option<Bound<'py, PyAny>>,
        expires_at: Option<f64>,
        title: Option<String>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let input = opt_value(input.as_ref())?;
        awaitable!(self, py, |e, p| {
            let i = protocol::interrupt(&scope, scope_id, kind, actions, input, expires_at, title)?;
            keyed!(e, key, |h| h.request_interrupt(&p, &session_id, i))
        })
    }

    #[pyo3(signature = (interrupt_id, decision, reason = None, expected_revision = None, members = None, key = None))]
    #[allow(clippy::too_many_arguments)]
    fn resolve_interrupt<'py>(
        &self,
        py: Python<'py>,
        interrupt_id: String,
        decision: String,
        reason: Option<String>,
        expected_revision: Option<u64>,
        members: Option<Bound<'py, PyAny>>,
        key: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let members = opt_value(members.as_ref())?;
        let r = protocol::resolve(interrupt_id, decision, reason, expected_revision, members);
        awaitable!(self, py, |e, p| keyed!(e, key, |h| h
            .resolve_interrupt(&p, r))
        .map(|r| r.session_id))
    }

    fn expire_due<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.expire_due(&p).await)
    }

    #[pyo3(signature = (after = None, limit = 100))]
    fn open_interrupts<'py>(
        &self,
        py: Python<'py>,
        after: Option<String>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::open_interrupts(
            &e, &p, after, limit
        )
        .await)
    }

    /// Benchmark only: the same turns as `examples/bench.py`, run from
    /// Rust on this engine. Returns `(commands, seconds)`.
    fn _bench_rust<'py>(
        &self,
        py: Python<'py>,
        sessions: usize,
        turns: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (e, p) = self.get()?;
        let rt = bridge::runtime()?;
        // On tokio tasks, as a Rust host runs them; only the total crosses.
        let task = rt.spawn(bench::run(e, p, sessions, turns));
        spawn(py, async move {
            task.await
                .map_err(|_| protocol::invalid("a benchmark task failed"))?
        })
    }

    fn state<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(on_worker self, py, |e, p| e
            .state(&p, &session_id)
            .await
            .map(state::NativeState::from))
    }

    /// The primary transcript view (§9.2), reasoning joined when
    /// `with_reasoning`.
    fn transcript_view<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        with_reasoning: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(on_worker self, py, |e, p| e
            .state(&p, &session_id)
            .await
            .map(|s| state::NativeTranscript::from(s.transcript_view(with_reasoning))))
    }

    fn state_json<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(on_worker self, py, |e, p| e.state_json(&p, &session_id).await)
    }

    fn capabilities<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .capabilities(&p, &session_id)
            .await
            .map(|c| protocol::caps(&c)))
    }

    #[pyo3(signature = (session_id, after = None, root_run_id = None, after_sequence = None, workflow_id = None, after_workflow_sequence = None, limit = 1000))]
    #[allow(clippy::too_many_arguments)]
    fn history<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        after: Option<u64>,
        root_run_id: Option<String>,
        after_sequence: Option<u64>,
        workflow_id: Option<String>,
        after_workflow_sequence: Option<u64>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let q = narad_store::HistoryQuery {
            after_session_sequence: after,
            run: root_run_id.map(|r| (r, after_sequence)),
            workflow: workflow_id.map(|w| (w, after_workflow_sequence)),
            limit,
        };
        // A page is up to 4 MiB of events; each one's type is read on the
        // worker, and its data parsed in Python only when asked for.
        awaitable!(on_worker self, py, |e, p| {
            let page = e.history(&p, &session_id, &q).await?;
            let events: Vec<_> = page.events.into_iter().map(|ev| Typed::from(ev.bytes)).collect();
            Ok::<_, EngineError>((events, page.next))
        })
    }

    fn attach<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        // A long session's hydrate renders megabytes of JSON: not on the
        // loop's thread.
        awaitable!(on_worker self, py, |e, p| {
            let a = e.attach(&p, &session_id).await?;
            let hydrate: Vec<_> = a.hydrate.into_iter().map(Typed::from).collect();
            Ok::<_, EngineError>((
                protocol::caps(&a.capabilities),
                hydrate,
                streams::NativeFollow::new(a.follow),
            ))
        })
    }

    fn subscribe<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        after: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .subscribe(&p, &session_id, after)
            .await
            .map(streams::NativeFollow::new))
    }

    fn attach_client<'py>(
        &self,
        py: Python<'py>,
        executor_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.attach_client(&p, &executor_id).await)
    }

    fn client_heartbeat<'py>(
        &self,
        py: Python<'py>,
        executor_id: String,
        lease_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .client_heartbeat(&p, &executor_id, &lease_id)
            .await)
    }

    fn client_finish<'py>(&self, py: Python<'py>, message: Vec<u8>) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .client_finish(&p, &message)
            .await
            .map(protocol::finished))
    }

    fn client_delivery_failed<'py>(
        &self,
        py: Python<'py>,
        token: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.client_delivery_failed(&p, &token).await)
    }

    /// `(expiredCalls, pausedRuns, unavailable)`.
    fn client_tick<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.client_tick(&p).await.map(|r| (
            r.expired_calls,
            r.paused_runs,
            r.unavailable
        )))
    }

    /// The next control message for an executor, or `None` after `timeout`
    /// seconds.
    #[pyo3(signature = (executor_id, timeout = None))]
    fn outbox_next<'py>(
        &self,
        py: Python<'py>,
        executor_id: String,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (e, _) = self.get()?;
        let outbox = e.client_outbox(&executor_id);
        spawn_endless(py, async move {
            let got = match timeout {
                None => Some(outbox.next().await),
                Some(s) => {
                    let d = Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX);
                    tokio::time::timeout(d, outbox.next()).await.ok()
                }
            };
            Ok::<_, PyErr>(got.map(Raw))
        })
    }

    /// Returns a JSON value unchanged through the bridge (tests of `conv`).
    #[staticmethod]
    fn _echo_json(py: Python<'_>, v: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let v = value(&v)?;
        Json(v).into_pyobject(py).map(Bound::unbind)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    spin::configure_writer_spin();
    m.add_class::<NativeEngine>()?;
    m.add_class::<streams::NativeFollow>()?;
    m.add_class::<streams::NativeWatch>()?;
    m.add_class::<streams::NativeText>()?;
    m.add_class::<records::NativeExecutor>()?;
    m.add_class::<host::NativeClock>()?;
    m.add_class::<host::NativeRules>()?;
    m.add_class::<bridge::LoopChannel>()?;
    m.add_class::<state::NativeState>()?;
    m.add_function(wrap_pyfunction!(bridge::_bridge_stats, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::_set_loop_polls, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::_set_spin_us, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::_writer_spin_us, m)?)?;
    lifecycle::register(m)?;
    records::register(m)?;
    assets::register(m)?;
    streams::register(m)?;
    Ok(())
}
