//! The session lifecycle: the session index (query, listing), labels,
//! archive, delete, retention, point-in-time state, fork, import, hydrate
//! records and the timer driver.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use narad_engine::{
    EngineError, RetentionPolicy, SessionEntry, SessionQuery, SessionStatus, TimerKind,
};
use pyo3::prelude::*;

use crate::bridge::{spawn, spawn_on_worker};
use crate::conv::Raw;
use crate::host::{posix, secs};
use crate::protocol::invalid;
use crate::state::NativeState;
use crate::NativeEngine;

/// A session index entry: `(sessionId, status, workspaceId, createdAt,
/// updatedAt, activeExecution, events, labels, forkedFrom)`.
type Entry = (
    String,
    &'static str,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<(String, String)>,
    u64,
    BTreeMap<String, String>,
    Option<(String, u64)>,
);

fn entry(e: SessionEntry) -> Entry {
    (
        e.session_id,
        e.status.name(),
        e.workspace_id,
        e.created_at,
        e.updated_at,
        e.active_execution.map(|a| (a.kind, a.id)),
        e.events,
        e.labels,
        e.forked_from,
    )
}

/// Sessions matching a query, from the index: `([Entry], next)`.
#[pyfunction]
#[pyo3(signature = (engine, status = Vec::new(), workspace_id = None, labels = BTreeMap::new(), updated_after = None, updated_before = None, after = None, limit = 100))]
#[allow(clippy::too_many_arguments)]
fn sessions<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    status: Vec<String>,
    workspace_id: Option<String>,
    labels: BTreeMap<String, String>,
    updated_after: Option<f64>,
    updated_before: Option<f64>,
    after: Option<String>,
    limit: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let status = status
            .iter()
            .map(|s| SessionStatus::parse(s).ok_or_else(|| invalid("unknown session status")))
            .collect::<Result<Vec<_>, _>>()?;
        let q = SessionQuery {
            status,
            workspace_id,
            labels,
            updated_after: updated_after.map(posix).transpose()?,
            updated_before: updated_before.map(posix).transpose()?,
        };
        let page = e.sessions(&p, &q, after.as_deref(), limit).await?;
        let out: Vec<Entry> = page.sessions.into_iter().map(entry).collect();
        Ok::<_, EngineError>((out, page.next))
    })
}

/// Session ids in id order after `after`, at most `limit`.
#[pyfunction]
#[pyo3(signature = (engine, after = None, limit = 100))]
fn list_sessions<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    after: Option<String>,
    limit: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        e.list_sessions(&p, after.as_deref(), limit).await
    })
}

/// Replaces a session's host labels.
#[pyfunction]
fn set_labels<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    labels: BTreeMap<String, String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(
        py,
        async move { e.set_labels(&p, &session_id, labels).await },
    )
}

/// Archives a session (read-only from now on).
#[pyfunction]
fn archive<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move { e.archive(&p, &session_id).await })
}

/// Deletes a session: `(sessionId, events, records, (runs, workflows,
/// interrupts, queued))` of what was open.
#[pyfunction]
#[pyo3(signature = (engine, session_id, force = false))]
fn delete_session<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    force: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let d = e.delete_session(&p, &session_id, force).await?;
        let o = d.open;
        Ok::<_, EngineError>((
            d.session_id,
            d.events,
            d.records,
            (o.runs, o.workflows, o.interrupts, o.queued),
        ))
    })
}

/// Ids of deleted sessions after `after`.
#[pyfunction]
#[pyo3(signature = (engine, after = None, limit = 100))]
fn deleted_sessions<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    after: Option<String>,
    limit: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, _) = engine.get()?;
    spawn(py, async move {
        e.deleted_sessions(after.as_deref(), limit).await
    })
}

fn policy(
    max_idle: Option<f64>,
    max_sessions_per_workspace: Option<usize>,
    force: bool,
) -> Result<RetentionPolicy, EngineError> {
    let max_idle = max_idle
        .map(|s| {
            Duration::try_from_secs_f64(s).map_err(|_| invalid("max_idle is a number of seconds"))
        })
        .transpose()?;
    Ok(RetentionPolicy {
        max_idle,
        max_sessions_per_workspace,
        force,
    })
}

/// Applies a retention policy once: `(deleted, [(kept, open work)])`.
#[pyfunction]
#[pyo3(signature = (engine, max_idle = None, max_sessions_per_workspace = None, force = false, dry_run = false))]
fn prune<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    max_idle: Option<f64>,
    max_sessions_per_workspace: Option<usize>,
    force: bool,
    dry_run: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let pol = policy(max_idle, max_sessions_per_workspace, force).map_err(crate::errors::to_py)?;
    spawn_on_worker(py, async move {
        let r = e.prune(&p, &pol, dry_run).await?;
        Ok::<_, EngineError>((r.deleted, r.kept))
    })
}

/// Sets (or, with no limit, clears) the policy the timer driver applies.
#[pyfunction]
#[pyo3(signature = (engine, max_idle = None, max_sessions_per_workspace = None, force = false))]
fn set_retention(
    engine: &NativeEngine,
    max_idle: Option<f64>,
    max_sessions_per_workspace: Option<usize>,
    force: bool,
) -> PyResult<()> {
    let (e, _) = engine.get()?;
    let on = max_idle.is_some() || max_sessions_per_workspace.is_some();
    let pol = policy(max_idle, max_sessions_per_workspace, force).map_err(crate::errors::to_py)?;
    e.set_retention(on.then_some(pol));
    Ok(())
}

/// The typed state after the events through `sequence`.
#[pyfunction]
fn state_at<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    sequence: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn_on_worker(py, async move {
        let at = e.state_at(&p, &session_id, sequence).await?;
        Ok::<_, EngineError>(at.state().map(NativeState::from))
    })
}

/// Forks a session at `through`; returns the new session's id.
#[pyfunction]
fn fork<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    through: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn_on_worker(py, async move { e.fork(&p, &session_id, through).await })
}

/// The records of one `import_records` call, copied in a slice at a time
/// by the caller (a loop turn between slices), so a long journal is never
/// copied in one go on the loop.
#[pyclass(module = "narad._native")]
#[derive(Default)]
pub struct ImportBuffer(std::sync::Mutex<Vec<Vec<u8>>>);

impl ImportBuffer {
    fn records(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl ImportBuffer {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Appends copies of `records`.
    fn extend(&self, records: Vec<Vec<u8>>) {
        self.records().extend(records);
    }

    fn __len__(&self) -> usize {
        self.records().len()
    }
}

/// Imports the records `buffer` holds (it is left empty): `(sessionId,
/// appended)`.
#[pyfunction]
fn import_records<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    buffer: &ImportBuffer,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    let records = std::mem::take(&mut *buffer.records());
    spawn_on_worker(py, async move { e.import(&p, &records).await })
}

/// One hydrate record for Python: `(bytes, [])`, or its large top-level
/// arrays split out (`crate::split`): `(base, [(key, items, ends)])`.
type SplitRecord = (Raw, Vec<(String, Raw, Raw)>);

/// Hydrate records at the head: `(head, [record])`, each split on the
/// blocking pool so that Python parses a long one between loop turns.
#[pyfunction]
fn hydrate_records<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn_on_worker(py, async move {
        let (head, recs) = e.hydrate_records(&p, &session_id).await?;
        let split = move || -> Vec<SplitRecord> {
            let raw = |b: Vec<u8>| Raw(Bytes::from(b));
            recs.into_iter()
                .map(|r| match crate::split::split(&r) {
                    Some(s) => {
                        let arrays = s.arrays.into_iter();
                        let arrays = arrays.map(|(k, items, ends)| (k, raw(items), raw(ends)));
                        (raw(s.base), arrays.collect())
                    }
                    None => (Raw(r), Vec::new()),
                })
                .collect()
        };
        let recs = tokio::task::spawn_blocking(split).await.map_err(|_| {
            EngineError::Store(narad_store::StoreError::Backend(
                "splitting the hydrate records failed".into(),
            ))
        })?;
        Ok::<_, EngineError>((head, recs))
    })
}

fn timer_kind(k: TimerKind) -> &'static str {
    k.name()
}

/// One pass of the timer driver: `([(kind, sessionId, id, due, [types])],
/// dropped, [(kind, id, code)])`.
#[pyfunction]
fn fire_due_timers<'py>(py: Python<'py>, engine: &NativeEngine) -> PyResult<Bound<'py, PyAny>> {
    let (e, _) = engine.get()?;
    spawn(py, async move {
        let r = e.fire_due_timers().await?;
        let fired: Vec<_> = r
            .fired
            .into_iter()
            .map(|f| {
                (
                    timer_kind(f.kind),
                    f.session_id,
                    f.id,
                    secs(f.due),
                    f.event_types,
                )
            })
            .collect();
        let failed: Vec<_> = r
            .failed
            .into_iter()
            .map(|(k, id, code)| (timer_kind(k), id, code))
            .collect();
        Ok::<_, EngineError>((fired, r.dropped, failed))
    })
}

/// Rebuilds a session's index entry from its journal if it differs;
/// returns whether it did.
#[pyfunction]
fn reindex<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn_on_worker(py, async move { e.reindex(&p, &session_id).await })
}

/// The entry rebuilt from the journal when the stored one differs, else `None`.
#[pyfunction]
fn check_index<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, _) = engine.get()?;
    spawn_on_worker(py, async move {
        Ok::<_, EngineError>(e.check_index(&session_id).await?.map(entry))
    })
}

/// Registers this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sessions, m)?)?;
    m.add_function(wrap_pyfunction!(list_sessions, m)?)?;
    m.add_function(wrap_pyfunction!(set_labels, m)?)?;
    m.add_function(wrap_pyfunction!(archive, m)?)?;
    m.add_function(wrap_pyfunction!(delete_session, m)?)?;
    m.add_function(wrap_pyfunction!(deleted_sessions, m)?)?;
    m.add_function(wrap_pyfunction!(prune, m)?)?;
    m.add_function(wrap_pyfunction!(set_retention, m)?)?;
    m.add_function(wrap_pyfunction!(state_at, m)?)?;
    m.add_function(wrap_pyfunction!(fork, m)?)?;
    m.add_class::<ImportBuffer>()?;
    m.add_function(wrap_pyfunction!(import_records, m)?)?;
    m.add_function(wrap_pyfunction!(hydrate_records, m)?)?;
    m.add_function(wrap_pyfunction!(fire_due_timers, m)?)?;
    m.add_function(wrap_pyfunction!(reindex, m)?)?;
    m.add_function(wrap_pyfunction!(check_index, m)?)?;
    Ok(())
}
