//! Streams: the typed session follower, the session watch follower, the
//! workspace watch page, and the engine's streamed-text and reasoning
//! handles.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use narad_engine::{EngineError, ReasoningStream, Role, TextOptions, TextStream};
use narad_stores::AnyStore;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::bridge::{spawn, spawn_endless};
use crate::conv::Raw;
use crate::protocol;
use crate::NativeEngine;

/// One followed event: its `type`, its parsed record (built from the
/// engine's typed record, no JSON text) and its exact bytes.
pub struct Item(narad_engine::FollowItem);

impl<'py> IntoPyObject<'py> for Item {
    type Target = pyo3::types::PyTuple;
    type Output = Bound<'py, pyo3::types::PyTuple>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        let json = self.0.record.wire.json();
        let ty = json.get("type").and_then(|t| t.as_str()).unwrap_or("");
        let data: Bound<'py, PyDict> = crate::conv::map_to_py(py, json)?;
        (ty, data, PyBytes::new(py, &self.0.event.bytes)).into_pyobject(py)
    }
}

/// A follower behind the lock its pending `next` holds, with its cursor
/// (and lag count) mirrored after every `next`, so reading them never
/// waits for, nor misses behind, a `next` that waits for a live event.
struct Followed<F> {
    follow: Arc<tokio::sync::Mutex<F>>,
    cursor: Arc<AtomicU64>,
    lag_signals: Arc<AtomicU64>,
}

impl<F> Followed<F> {
    fn new(f: F, cursor: u64) -> Self {
        Self {
            follow: Arc::new(tokio::sync::Mutex::new(f)),
            cursor: Arc::new(AtomicU64::new(cursor)),
            lag_signals: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The lock and both mirrors, for a `next` task.
    fn parts(&self) -> (Arc<tokio::sync::Mutex<F>>, Arc<AtomicU64>, Arc<AtomicU64>) {
        (
            Arc::clone(&self.follow),
            Arc::clone(&self.cursor),
            Arc::clone(&self.lag_signals),
        )
    }
}

/// A live follower of one session: replay, then live, without gap.
#[pyclass(frozen, module = "narad._native")]
pub struct NativeFollow(Followed<protocol::Follow>);

impl NativeFollow {
    pub fn new(f: protocol::Follow) -> Self {
        let cursor = f.cursor();
        Self(Followed::new(f, cursor))
    }
}

#[pymethods]
impl NativeFollow {
    /// The next event as `(type, data, raw)`, or `None` once the store closed.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (f, cursor, lag) = self.0.parts();
        spawn_endless(py, async move {
            let mut f = f.lock().await;
            let item = f.next_item().await;
            cursor.store(f.cursor(), Ordering::Release);
            lag.store(f.lag_signals(), Ordering::Release);
            Ok::<_, EngineError>(item?.map(Item))
        })
    }

    /// The `sessionSequence` of the last event returned.
    fn cursor(&self) -> u64 {
        self.0.cursor.load(Ordering::Acquire)
    }

    /// How often the follower fell behind the live notices and re-read
    /// from its cursor (nothing is lost; a count for monitoring).
    fn lag_signals(&self) -> u64 {
        self.0.lag_signals.load(Ordering::Acquire)
    }
}

/// A follower of a session's watch events (§8).
#[pyclass(frozen, module = "narad._native")]
pub struct NativeWatch(Followed<narad_engine::WatchFollow<AnyStore>>);

#[pymethods]
impl NativeWatch {
    /// The next watch event's bytes, or `None` once the store closed.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (f, cursor, _) = self.0.parts();
        spawn_endless(py, async move {
            let mut f = f.lock().await;
            let item = f.next().await;
            cursor.store(f.cursor(), Ordering::Release);
            Ok::<_, EngineError>(item?.map(Raw))
        })
    }

    /// The session position covered so far.
    fn cursor(&self) -> u64 {
        self.0.cursor.load(Ordering::Acquire)
    }
}

enum Handle {
    Text(TextStream<AnyStore>),
    Reasoning(ReasoningStream<AnyStore>),
}

/// A streamed message or reasoning stream being written.
#[pyclass(frozen, module = "narad._native")]
pub struct NativeText {
    handle: Arc<Handle>,
}

#[pymethods]
impl NativeText {
    /// The `messageId` (text) or `reasoningId` (reasoning).
    #[getter]
    fn id(&self) -> &str {
        match &*self.handle {
            Handle::Text(t) => t.message_id(),
            Handle::Reasoning(r) => r.reasoning_id(),
        }
    }

    /// Appends one delta.
    fn delta<'py>(&self, py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
        let h = Arc::clone(&self.handle);
        spawn(py, async move {
            match &*h {
                Handle::Text(t) => t.delta(&text).await,
                Handle::Reasoning(r) => r.delta(&text).await,
            }
            .map(|_| ())
        })
    }

    /// Appends the completion.
    fn complete<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let h = Arc::clone(&self.handle);
        spawn(py, async move {
            match &*h {
                Handle::Text(t) => t.complete().await,
                Handle::Reasoning(r) => r.complete().await,
            }
            .map(|_| ())
        })
    }

    /// Starts this message's reasoning (`reasoningId` `reasoning:{messageId}`).
    fn reasoning<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let h = Arc::clone(&self.handle);
        spawn(py, async move {
            match &*h {
                Handle::Text(t) => Ok(text(Handle::Reasoning(t.reasoning().await?))),
                Handle::Reasoning(_) => Err(protocol::invalid("reasoning has no reasoning")),
            }
        })
    }
}

fn text(h: Handle) -> NativeText {
    NativeText {
        handle: Arc::new(h),
    }
}

fn role(r: &str) -> Result<Role, EngineError> {
    match r {
        "assistant" => Ok(Role::Assistant),
        "system" => Ok(Role::System),
        _ => Err(protocol::invalid("role must be assistant or system")),
    }
}

/// Starts a streamed message (`message.text.started`) at a scope.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id = None, message_id = None, role_name = "assistant".to_owned()))]
fn start_text<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    message_id: Option<String>,
    role_name: String,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let options = TextOptions {
            message_id,
            role: role(&role_name)?,
        };
        let scope = protocol::scope(&scope, scope_id)?;
        let t = e.start_text(&p, &session_id, scope, options).await?;
        Ok::<_, EngineError>(text(Handle::Text(t)))
    })
}

/// Starts a reasoning stream (`reasoning.started`) at a scope.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id = None, reasoning_id = None, message_id = None))]
fn start_reasoning<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    reasoning_id: Option<String>,
    message_id: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let scope = protocol::scope(&scope, scope_id)?;
        let r = e
            .start_reasoning(&p, &session_id, scope, reasoning_id, message_id)
            .await?;
        Ok::<_, EngineError>(text(Handle::Reasoning(r)))
    })
}

/// A whole assistant message at once; returns its `messageId`.
#[pyfunction]
#[pyo3(signature = (engine, session_id, scope, scope_id, text))]
fn say<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    scope: String,
    scope_id: Option<String>,
    text: String,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let scope = protocol::scope(&scope, scope_id)?;
        e.say(&p, &session_id, scope, &text).await
    })
}

/// Follows a session's watch events after session position `after`.
#[pyfunction]
fn watch<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    after: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let f = e.watch(&p, &session_id, after).await?;
        let cursor = f.cursor();
        Ok::<_, EngineError>(NativeWatch(Followed::new(f, cursor)))
    })
}

/// One page of a workspace's watch stream: `([(revision, bytes)], next)`.
#[pyfunction]
fn workspace_watch<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    workspace_id: String,
    after: u64,
    limit: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        let page = e.workspace_watch(&p, &workspace_id, after, limit).await?;
        let events: Vec<(u64, Raw)> = page
            .events
            .into_iter()
            .map(|w| (w.revision, Raw(w.bytes)))
            .collect();
        Ok::<_, EngineError>((events, page.next))
    })
}

/// Announces a session on its workspace's watch stream; returns the revision.
#[pyfunction]
fn announce_session<'py>(
    py: Python<'py>,
    engine: &NativeEngine,
    session_id: String,
    archived: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (e, p) = engine.get()?;
    spawn(py, async move {
        e.announce_session(&p, &session_id, archived).await
    })
}

/// Registers this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(start_text, m)?)?;
    m.add_function(wrap_pyfunction!(start_reasoning, m)?)?;
    m.add_function(wrap_pyfunction!(say, m)?)?;
    m.add_function(wrap_pyfunction!(watch, m)?)?;
    m.add_function(wrap_pyfunction!(workspace_watch, m)?)?;
    m.add_function(wrap_pyfunction!(announce_session, m)?)?;
    Ok(())
}
