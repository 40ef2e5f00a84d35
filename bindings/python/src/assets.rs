//! The typed commands for views (§9.6) and for attachments and artifacts
//! (§9.5), as the Rust engine's: `view.*`, `attachment.*` and `artifact.*`
//! events without hand-written protocol JSON.

use narad_engine::{Asset, AssetStep, EngineError, ViewUpdate};
use pyo3::prelude::*;
use serde_json::Value;

use crate::bridge::spawn;
use crate::conv::{opt_value, Raw};
use crate::protocol::{self, invalid};
use crate::records::patch_of;
use crate::NativeEngine;

/// `ready`, `failed` (with `code` and a user-safe `message`) or `removed`.
fn step(
    name: &str,
    code: Option<String>,
    message: Option<String>,
) -> Result<AssetStep, EngineError> {
    match (name, code, message) {
        ("ready", None, None) => Ok(AssetStep::Ready),
        ("removed", None, None) => Ok(AssetStep::Removed),
        ("failed", Some(code), Some(message)) => Ok(AssetStep::failed(code, message)),
        ("failed", _, _) => Err(invalid("a failed step needs a code and a message")),
        ("ready" | "removed", _, _) => {
            Err(invalid("only a failed step takes a code and a message"))
        }
        _ => Err(invalid("step must be ready, failed or removed")),
    }
}

/// An asset's metadata: the named fields and any others (a dict with `str`
/// keys, written as given).
#[allow(clippy::too_many_arguments)]
fn asset(
    id: Option<String>,
    name: Option<String>,
    media_type: Option<String>,
    uri: Option<String>,
    size_bytes: Option<u64>,
    metadata: Value,
) -> Result<Asset, EngineError> {
    let mut a = Asset::new();
    a.id = id;
    a.name = name;
    a.media_type = media_type;
    a.uri = uri;
    a.size_bytes = size_bytes;
    match metadata {
        Value::Null => {}
        Value::Object(extra) => a.extra = extra,
        _ => return Err(invalid("metadata is a dict")),
    }
    Ok(a)
}

/// Opens (`step` `open`, with `model`), updates (`update`: a new `model`,
/// or RFC 6902 `operations`) or closes (`close`) a view; returns the
/// stored event's bytes.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id, view_id, step, model = None, operations = None, key = None))]
#[allow(clippy::too_many_arguments)]
fn view<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    view_id: String,
    step: String,
    model: Option<Bound<'py, PyAny>>,
    operations: Option<Bound<'py, PyAny>>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let model = opt_value(model.as_ref())?;
    let operations = opt_value(operations.as_ref())?;
    spawn(py, async move {
        let scope = protocol::scope(&scope, scope_id)?;
        let ev = match (step.as_str(), model, operations) {
            ("open", Some(m), None) => {
                keyed!(e, key, |h| h.open_view(&p, &session_id, scope, view_id, m))
            }
            ("update", m, ops) => {
                let update = match (m, ops) {
                    (Some(m), None) => ViewUpdate::Replace(m),
                    (None, Some(ops)) => ViewUpdate::Patch(patch_of(ops)?),
                    _ => return Err(invalid("give either a model or patch operations")),
                };
                keyed!(e, key, |h| h.update_view(
                    &p,
                    &session_id,
                    scope,
                    view_id,
                    update
                ))
            }
            ("close", None, None) => {
                keyed!(e, key, |h| h.close_view(&p, &session_id, scope, view_id))
            }
            _ => Err(invalid(
                "a view step is open (with a model), update or close",
            )),
        }?;
        Ok::<_, EngineError>(Raw(ev.bytes))
    })
}

/// Admits an attachment (`artifact = false`) or records an artifact;
/// returns its id.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id, artifact, asset_id = None, name = None, media_type = None, uri = None, size_bytes = None, metadata = None, key = None))]
#[allow(clippy::too_many_arguments)]
fn add_asset<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    artifact: bool,
    asset_id: Option<String>,
    name: Option<String>,
    media_type: Option<String>,
    uri: Option<String>,
    size_bytes: Option<u64>,
    metadata: Option<Bound<'py, PyAny>>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let metadata = opt_value(metadata.as_ref())?.unwrap_or(Value::Null);
    spawn(py, async move {
        let a = asset(asset_id, name, media_type, uri, size_bytes, metadata)?;
        let scope = protocol::scope(&scope, scope_id)?;
        if artifact {
            keyed!(e, key, |h| h.add_artifact(&p, &session_id, scope, a))
        } else {
            keyed!(e, key, |h| h.add_attachment(&p, &session_id, scope, a))
        }
    })
}

/// Moves an attachment or an artifact on (`ready`, `failed`, `removed`);
/// returns the stored event's bytes.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id, artifact, asset_id, step_name, code = None, message = None, key = None))]
#[allow(clippy::too_many_arguments)]
fn update_asset<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    artifact: bool,
    asset_id: String,
    step_name: String,
    code: Option<String>,
    message: Option<String>,
    key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let s = step(&step_name, code, message)?;
        let scope = protocol::scope(&scope, scope_id)?;
        let ev = if artifact {
            keyed!(e, key, |h| h.update_artifact(
                &p,
                &session_id,
                scope,
                &asset_id,
                s
            ))?
        } else {
            keyed!(e, key, |h| h.update_attachment(
                &p,
                &session_id,
                scope,
                &asset_id,
                s
            ))?
        };
        Ok::<_, EngineError>(Raw(ev.bytes))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(view, m)?)?;
    m.add_function(wrap_pyfunction!(add_asset, m)?)?;
    m.add_function(wrap_pyfunction!(update_asset, m)?)?;
    Ok(())
}
