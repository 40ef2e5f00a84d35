//! `narad._native`: the extension module under the `narad` Python package.
//!
//! Every engine call returns a Python awaitable: the work runs on the
//! binding's tokio runtime (via `pyo3-async-runtimes`), so the asyncio event
//! loop is never blocked. Arguments and results are plain values (strings,
//! bytes, JSON text); `protocol` builds the engine's arguments, and the
//! Python package turns JSON text into dicts and dataclasses.

mod bench;
mod bridge;
mod errors;
mod protocol;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use narad_engine::executor::{ClientExecutor, Handled};
use narad_engine::{EngineError, Principal};
use narad_stores::AnyStore;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::Value;

use crate::bridge::{spawn as future_into_py, spawn_abortable};
use crate::errors::to_py;
use crate::protocol::{Eng, RunArgs};

fn py_bytes(b: &[u8]) -> Py<PyAny> {
    Python::attach(|py| PyBytes::new(py, b).into_any().unbind())
}

fn closed() -> PyErr {
    to_py(EngineError::InvalidCommand("the engine is closed".into()))
}

/// The engine over one store.
#[pyclass(frozen, module = "narad._native")]
struct NativeEngine {
    engine: Mutex<Option<Eng>>,
    principal: Principal,
}

impl NativeEngine {
    fn get(&self) -> PyResult<(Eng, Principal)> {
        let guard = self.engine.lock().map_err(|_| closed())?;
        let e = guard.as_ref().ok_or_else(closed)?.clone();
        Ok((e, self.principal.clone()))
    }
}

/// Runs `$body` (an async block using `e` and `p`) as a Python awaitable.
macro_rules! awaitable {
    ($self:ident, $py:ident, |$e:ident, $p:ident| $body:expr) => {{
        let ($e, $p) = $self.get()?;
        future_into_py($py, async move { $body.map_err(to_py) })
    }};
}

#[pymethods]
impl NativeEngine {
    #[staticmethod]
    #[pyo3(signature = (url, principal = "local".to_owned()))]
    fn open(py: Python<'_>, url: String, principal: String) -> PyResult<Bound<'_, PyAny>> {
        future_into_py(py, async move {
            let engine = protocol::open(&url).await.map_err(to_py)?;
            Ok(NativeEngine {
                engine: Mutex::new(Some(engine)),
                principal: Principal::new(principal),
            })
        })
    }

    fn close(&self) -> PyResult<()> {
        let mut guard = self.engine.lock().map_err(|_| closed())?;
        guard.take();
        Ok(())
    }

    #[pyo3(signature = (session_id = None, profiles = None, workspace_id = None))]
    fn create_session<'py>(
        &self,
        py: Python<'py>,
        session_id: Option<String>,
        profiles: Option<String>,
        workspace_id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::create_session(
            &e,
            &p,
            session_id,
            profiles,
            workspace_id
        )
        .await)
    }

    fn message<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        content: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::message(
            &e,
            &p,
            &session_id,
            &content
        )
        .await)
    }

    #[pyo3(signature = (session_id, event_type, scope, scope_id, body))]
    fn append<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        event_type: String,
        scope: String,
        scope_id: Option<String>,
        body: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::append(
            &e,
            &p,
            &session_id,
            &event_type,
            &scope,
            scope_id,
            &body
        )
        .await
        .map(|b| py_bytes(&b)))
    }

    #[pyo3(signature = (session_id, run_id = None, parent_run_id = None, workflow_id = None, client_executor_id = None, queue = false))]
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
            args
        )
        .await)
    }

    fn drain_queue<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.drain_queue(&p, &session_id).await)
    }

    #[pyo3(signature = (session_id, workflow_id = None, default_client_executor_id = None))]
    fn start_workflow<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        workflow_id: Option<String>,
        default_client_executor_id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .start_workflow(&p, &session_id, workflow_id, default_client_executor_id)
            .await)
    }

    #[pyo3(signature = (session_id, run_id, tool_name, args, client = false))]
    fn start_tool_call<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        tool_name: String,
        args: String,
        client: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::start_tool_call(
            &e,
            &p,
            &session_id,
            &run_id,
            &tool_name,
            &args,
            client
        )
        .await)
    }

    #[pyo3(signature = (session_id, tool_call_id, outcome, response, code = None, message = None))]
    #[allow(clippy::too_many_arguments)]
    fn finish_tool_call<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        tool_call_id: String,
        outcome: String,
        response: String,
        code: Option<String>,
        message: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::finish_tool_call(
            &e,
            &p,
            &session_id,
            &tool_call_id,
            &outcome,
            &response,
            code,
            message
        )
        .await)
    }

    #[pyo3(signature = (session_id, run_id, reason, automatic = false))]
    fn pause_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        reason: String,
        automatic: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .pause_run(&p, &session_id, &run_id, &reason, automatic)
            .await)
    }

    fn resume_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        wait_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e
            .resume_run(&p, &session_id, &run_id, &wait_id)
            .await)
    }

    #[pyo3(signature = (session_id, run_id, status, usage = None, artifact_ids = Vec::new(), code = None, message = None))]
    #[allow(clippy::too_many_arguments)]
    fn end_run<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        status: String,
        usage: Option<String>,
        artifact_ids: Vec<String>,
        code: Option<String>,
        message: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::end_run(
            &e,
            &p,
            &session_id,
            &run_id,
            &status,
            usage.as_deref(),
            artifact_ids,
            code,
            message
        )
        .await)
    }

    #[pyo3(signature = (session_id, run_id = None))]
    fn stop<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::stop(&e, &p, &session_id, run_id)
            .await)
    }

    #[pyo3(signature = (session_id, scope, scope_id, kind, actions, input = None, expires_at = None))]
    #[allow(clippy::too_many_arguments)]
    fn request_interrupt<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        scope: String,
        scope_id: String,
        kind: String,
        actions: Vec<String>,
        input: Option<String>,
        expires_at: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::request_interrupt(
            &e,
            &p,
            &session_id,
            &scope,
            scope_id,
            kind,
            actions,
            input.as_deref(),
            expires_at
        )
        .await)
    }

    #[pyo3(signature = (interrupt_id, decision, reason = None, expected_revision = None, members = None))]
    fn resolve_interrupt<'py>(
        &self,
        py: Python<'py>,
        interrupt_id: String,
        decision: String,
        reason: Option<String>,
        expected_revision: Option<u64>,
        members: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::resolve_interrupt(
            &e,
            &p,
            interrupt_id,
            decision,
            reason,
            expected_revision,
            members.as_deref()
        )
        .await)
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
        awaitable!(self, py, |e, p| bench::run(e, p, sessions, turns).await)
    }

    #[staticmethod]
    fn new_id(kind: &str) -> String {
        protocol::new_id(kind)
    }

    fn text_started<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        message_id: String,
        role: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::text_started(
            &e,
            &p,
            &session_id,
            &run_id,
            &message_id,
            &role
        )
        .await)
    }

    fn text_delta<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        message_id: String,
        delta: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::text_delta(
            &e,
            &p,
            &session_id,
            &run_id,
            &message_id,
            &delta
        )
        .await)
    }

    fn text_completed<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
        run_id: String,
        message_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::text_completed(
            &e,
            &p,
            &session_id,
            &run_id,
            &message_id
        )
        .await)
    }

    fn state_json<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.state_json(&p, &session_id).await)
    }

    fn capabilities<'py>(
        &self,
        py: Python<'py>,
        session_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::capabilities(&e, &p, &session_id)
            .await)
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
        let run = root_run_id.map(|r| (r, after_sequence));
        let wf = workflow_id.map(|w| (w, after_workflow_sequence));
        awaitable!(self, py, |e, p| protocol::history(
            &e,
            &p,
            &session_id,
            after,
            run,
            wf,
            limit
        )
        .await
        .map(|(events, next)| (
            events.iter().map(|b| py_bytes(b)).collect::<Vec<_>>(),
            next
        )))
    }

    fn attach<'py>(&self, py: Python<'py>, session_id: String) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::attach(&e, &p, &session_id)
            .await
            .map(|(caps, hydrate, follow)| (
                caps,
                hydrate.iter().map(|b| py_bytes(b)).collect::<Vec<_>>(),
                NativeFollow::new(follow)
            )))
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
            .map(NativeFollow::new))
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
        awaitable!(self, py, |e, p| protocol::client_finish(&e, &p, &message)
            .await)
    }

    fn client_delivery_failed<'py>(
        &self,
        py: Python<'py>,
        token: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| e.client_delivery_failed(&p, &token).await)
    }

    fn client_tick<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        awaitable!(self, py, |e, p| protocol::client_tick(&e, &p).await)
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
        spawn_abortable(py, async move {
            let got = match timeout {
                None => Some(outbox.next().await),
                Some(s) => {
                    let d = Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX);
                    tokio::time::timeout(d, outbox.next()).await.ok()
                }
            };
            Ok(got.map(|b| py_bytes(&b)))
        })
    }
}

/// A live follower of one session: replay, then live, without gap.
#[pyclass(frozen, module = "narad._native")]
struct NativeFollow {
    follow: Arc<tokio::sync::Mutex<protocol::Follow>>,
}

impl NativeFollow {
    fn new(f: protocol::Follow) -> Self {
        Self {
            follow: Arc::new(tokio::sync::Mutex::new(f)),
        }
    }
}

#[pymethods]
impl NativeFollow {
    /// The next event's bytes, or `None` once the store closed.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let f = Arc::clone(&self.follow);
        spawn_abortable(py, async move {
            let mut f = f.lock().await;
            let ev = f.next().await.map_err(to_py)?;
            Ok(ev.map(|ev| py_bytes(&ev.bytes)))
        })
    }

    /// The `sessionSequence` of the last event returned.
    fn cursor(&self) -> u64 {
        self.follow.try_lock().map_or(0, |f| f.cursor())
    }
}

/// The client executor with its durable ledger (§11).
#[pyclass(frozen, module = "narad._native")]
struct NativeExecutor {
    exec: Arc<ClientExecutor<AnyStore>>,
}

fn static_outcome(s: &str) -> &'static str {
    match s {
        "success" => "success",
        "cancelled" => "cancelled",
        _ => "error",
    }
}

/// Runs the Python tool `tool(name, args_json)`, an async function that
/// returns `(outcome, response_json)`, on the caller's event loop. A tool
/// that raises finishes as an error whose response names no detail (its
/// text may be protected).
async fn run_tool(
    event_loop: Py<PyAny>,
    tool: Py<PyAny>,
    name: String,
    args: Value,
) -> (&'static str, Value) {
    let raised = || ("error", serde_json::json!({"code": "tool_raised"}));
    let out = bridge::call_async(event_loop, move |py| {
        tool.bind(py).call1((name, args.to_string()))
    })
    .await;
    let Ok(out) = out else { return raised() };
    let parsed = Python::attach(|py| out.bind(py).extract::<(String, String)>());
    match parsed {
        Ok((outcome, response)) => match serde_json::from_str(&response) {
            Ok(v) => (static_outcome(&outcome), v),
            Err(_) => raised(),
        },
        Err(_) => raised(),
    }
}

#[pymethods]
impl NativeExecutor {
    #[staticmethod]
    fn open(py: Python<'_>, ledger_url: String, executor_id: String) -> PyResult<Bound<'_, PyAny>> {
        future_into_py(py, async move {
            let ledger = narad_stores::open(&ledger_url)
                .await
                .map_err(|e| to_py(narad_store::StoreError::from(e).into()))?;
            Ok(NativeExecutor {
                exec: Arc::new(ClientExecutor::new(ledger, executor_id)),
            })
        })
    }

    /// Handles one control message: `(kind, payload)` with kind `finish`
    /// (payload: the finish bytes), `attached` (the lease id),
    /// `accepted_before` or `ignored` (the reason).
    fn handle<'py>(
        &self,
        py: Python<'py>,
        message: Vec<u8>,
        tool: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let exec = Arc::clone(&self.exec);
        let event_loop = py
            .import("asyncio")?
            .call_method0("get_running_loop")?
            .unbind();
        future_into_py(py, async move {
            let handled = exec
                .handle(&message, |name, args| {
                    run_tool(event_loop, tool, name, args)
                })
                .await
                .map_err(to_py)?;
            Ok(match handled {
                Handled::Finish(b) => ("finish", Some(py_bytes(&b))),
                Handled::Attached(lease) => (
                    "attached",
                    Some(Python::attach(|py| {
                        lease.into_pyobject(py).map(|s| s.into_any().unbind())
                    })?),
                ),
                Handled::AcceptedBefore => ("accepted_before", None),
                Handled::Ignored(why) => (
                    "ignored",
                    Some(Python::attach(|py| {
                        why.into_pyobject(py).map(|s| s.into_any().unbind())
                    })?),
                ),
            })
        })
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeEngine>()?;
    m.add_class::<NativeFollow>()?;
    m.add_class::<NativeExecutor>()?;
    m.add_class::<bridge::LoopChannel>()?;
    m.add_function(wrap_pyfunction!(bridge::drain, m)?)?;
    Ok(())
}
