//! The typed recording commands (progress, documents, extensions) and the
//! client executor (§11).

use std::sync::Arc;

use narad_engine::executor::{ClientExecutor, Handled};
use narad_engine::{DocumentKind, EngineError, Privacy, Progress, ProgressStatus};
use narad_stores::AnyStore;
use pyo3::prelude::*;
use serde_json::Value;

use crate::bridge::{self, spawn};
use crate::conv::{value, Raw};
use crate::protocol::{self, invalid};
use crate::NativeEngine;

fn status(s: &str) -> Result<ProgressStatus, EngineError> {
    match s {
        "active" => Ok(ProgressStatus::Active),
        "completed" => Ok(ProgressStatus::Completed),
        "failed" => Ok(ProgressStatus::Failed),
        "cancelled" => Ok(ProgressStatus::Cancelled),
        _ => Err(invalid(
            "status must be active, completed, failed or cancelled",
        )),
    }
}

fn privacy(s: &str) -> Result<Privacy, EngineError> {
    match s {
        "public" => Ok(Privacy::Public),
        "internal" => Ok(Privacy::Internal),
        "sensitive" => Ok(Privacy::Sensitive),
        _ => Err(invalid("privacy must be public, internal or sensitive")),
    }
}

fn kind(s: &str) -> Result<DocumentKind, EngineError> {
    match s {
        "state" => Ok(DocumentKind::State),
        "ui" => Ok(DocumentKind::Ui),
        _ => Err(invalid("a document is state or ui")),
    }
}

/// `progress.recorded` on a run; returns the `progressId`.
#[pyfunction]
#[pyo3(signature = (engine, session_id, run_id, category, label, progress_id = None, status_name = "active".to_owned(), privacy_name = "public".to_owned(), detail = None, key = None))]
#[allow(clippy::too_many_arguments)]
fn record_progress<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    run_id: String,
    category: String,
    label: String,
    progress_id: Option<String>,
    status_name: String,
    privacy_name: String,
    detail: Option<String>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let mut pr = Progress::new(category, label)
            .status(status(&status_name)?)
            .privacy(privacy(&privacy_name)?);
        if let Some(id) = progress_id {
            pr = pr.id(id);
        }
        if let Some(d) = detail {
            pr = pr.detail(d);
        }
        keyed!(e, key, |h| h.record_progress(&p, &session_id, &run_id, pr))
    })
}

/// Replaces a state or UI document; returns its new revision.
#[pyfunction]
#[pyo3(signature = (engine, session_id, kind_name, scope, scope_id, document, key = None))]
#[allow(clippy::too_many_arguments)]
fn put_document<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    kind_name: String,
    scope: String,
    scope_id: Option<String>,
    document: Bound<'py, PyAny>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let v = value(&document)?;
    spawn(py, async move {
        let scope = protocol::scope(&scope, scope_id)?;
        let k = kind(&kind_name)?;
        keyed!(e, key, |h| h.put_document(&p, &session_id, k, scope, v))
    })
}

/// Patches a state or UI document with JSON Patch operations (a list of
/// `{"op", "path", "value"|"from"}`); returns its new revision.
#[pyfunction]
#[pyo3(signature = (engine, session_id, kind_name, scope, scope_id, operations, key = None))]
#[allow(clippy::too_many_arguments)]
fn patch_document<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    kind_name: String,
    scope: String,
    scope_id: Option<String>,
    operations: Bound<'py, PyAny>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let ops = value(&operations)?;
    spawn(py, async move {
        let patch = patch_of(ops)?;
        let scope = protocol::scope(&scope, scope_id)?;
        let k = kind(&kind_name)?;
        keyed!(e, key, |h| h.patch_document(
            &p,
            &session_id,
            k,
            scope,
            patch
        ))
    })
}

/// The engine's typed [`narad_engine::Patch`] from RFC 6902 operations.
pub(crate) fn patch_of(ops: Value) -> Result<narad_engine::Patch, EngineError> {
    let Value::Array(ops) = ops else {
        return Err(invalid("a patch is a list of operations"));
    };
    let mut patch = narad_engine::Patch::new();
    for op in ops {
        let field = |k: &str| op.get(k).and_then(Value::as_str).map(str::to_owned);
        let path = field("path").ok_or_else(|| invalid("a patch operation needs a path"))?;
        let val = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| invalid("this patch operation needs a value"))
        };
        let from = || field("from").ok_or_else(|| invalid("this patch operation needs from"));
        patch = match field("op").as_deref() {
            Some("add") => patch.add(path, val()?),
            Some("remove") => patch.remove(path),
            Some("replace") => patch.replace(path, val()?),
            Some("move") => patch.move_to(from()?, path),
            Some("copy") => patch.copy(from()?, path),
            _ => return Err(invalid("op must be add, remove, replace, move or copy")),
        };
    }
    Ok(patch)
}

/// A `*.custom` extension event; returns its bytes.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id, name, custom, key = None))]
#[allow(clippy::too_many_arguments)]
fn record_custom<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    name: String,
    custom: Bound<'py, PyAny>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let v = value(&custom)?;
    spawn(py, async move {
        let scope = protocol::scope(&scope, scope_id)?;
        let ev = keyed!(e, key, |h| h.record_custom(
            &p,
            &session_id,
            scope,
            &name,
            v
        ))?;
        Ok::<_, EngineError>(Raw(ev.bytes))
    })
}

/// A `*.raw` extension event; returns its bytes.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id, content_type, payload, key = None))]
#[allow(clippy::too_many_arguments)]
fn record_raw<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    content_type: String,
    payload: String,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let scope = protocol::scope(&scope, scope_id)?;
        let ev = keyed!(e, key, |h| h.record_raw(
            &p,
            &session_id,
            scope,
            &content_type,
            &payload
        ))?;
        Ok::<_, EngineError>(Raw(ev.bytes))
    })
}

/// The client executor with its durable ledger (§11).
#[pyclass(frozen, module = "narad._native")]
pub struct NativeExecutor {
    exec: Arc<ClientExecutor<AnyStore>>,
}

fn static_outcome(s: &str) -> &'static str {
    match s {
        "success" => "success",
        "cancelled" => "cancelled",
        _ => "error",
    }
}

/// Runs the Python tool `tool(name, args)`, an async function that returns
/// `(outcome, response)`, on the caller's event loop. A tool that raises
/// finishes as an error whose response names no detail (its text may be
/// protected).
async fn run_tool(
    event_loop: Py<PyAny>,
    tool: Py<PyAny>,
    name: String,
    args: Value,
) -> (&'static str, Value) {
    let raised = || ("error", serde_json::json!({"code": "tool_raised"}));
    let out = bridge::call_async(event_loop, move |py| {
        let args = crate::conv::to_py(py, &args)?;
        tool.bind(py).call1((name, args))
    })
    .await;
    let Ok(out) = out else { return raised() };
    let parsed = Python::attach(|py| -> PyResult<(String, Value)> {
        let (outcome, response): (String, Bound<'_, PyAny>) = out.bind(py).extract()?;
        Ok((outcome, value(&response)?))
    });
    match parsed {
        Ok((outcome, v)) => (static_outcome(&outcome), v),
        Err(_) => raised(),
    }
}

#[pymethods]
impl NativeExecutor {
    #[staticmethod]
    fn open(py: Python<'_>, ledger_url: String, executor_id: String) -> PyResult<Bound<'_, PyAny>> {
        spawn(py, async move {
            let ledger = narad_stores::open(&ledger_url).await?;
            Ok::<_, narad_stores::OpenError>(NativeExecutor {
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
        bridge::spawn_on_loop(py, async move {
            let handled = exec
                .handle(&message, |name, args| {
                    run_tool(event_loop, tool, name, args)
                })
                .await?;
            Ok::<_, EngineError>(match handled {
                Handled::Finish(b) => ("finish", Some(Raw(b)), None),
                Handled::Attached(lease) => ("attached", None, Some(lease)),
                Handled::AcceptedBefore => ("accepted_before", None, None),
                Handled::Ignored(why) => ("ignored", None, Some(why.to_string())),
            })
        })
    }
}

/// Registers this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(record_progress, m)?)?;
    m.add_function(wrap_pyfunction!(put_document, m)?)?;
    m.add_function(wrap_pyfunction!(patch_document, m)?)?;
    m.add_function(wrap_pyfunction!(record_custom, m)?)?;
    m.add_function(wrap_pyfunction!(record_raw, m)?)?;
    Ok(())
}
