//! The asyncio ↔ tokio bridge. A command runs on the binding's tokio
//! runtime; its output is queued for the asyncio loop ([`LoopChannel`]),
//! so the event loop never blocks and engine threads never take the GIL.
//! Each command is first polled once on the caller's thread (GIL released;
//! the stores do their IO on blocking threads), so one that does not wait
//! needs no thread hop at all.
//!
//! Why not a stock bridge: a tokio worker that waits for the GIL stalls
//! every other session on that worker, and one that takes it while the
//! interpreter finalizes aborts the process ("PyGILState_Release … must be
//! current"). Here workers only queue; a cancelled asyncio future aborts
//! its task; and `drain` (registered with `atexit`) waits for in-flight
//! tasks (the client executor's tool call does enter Python) to finish.

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CHANNEL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The binding's tokio runtime (multi-threaded, started on first use).
pub fn runtime() -> PyResult<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // NARAD_WORKER_THREADS sizes the engine's runtime (default: one per core).
    if let Some(n) = std::env::var("NARAD_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        builder.worker_threads(n);
    }
    let rt = builder
        .enable_all()
        .thread_name("narad-engine")
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("tokio runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Counts a bridged task until it is dropped (finished or aborted).
struct InFlight;

impl InFlight {
    fn new() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Aborts the tokio task of an asyncio future that was cancelled.
#[pyclass(frozen)]
struct AbortOnCancel(Mutex<Option<tokio::task::AbortHandle>>);

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if fut.call_method0("cancelled")?.is_truthy()? {
            if let Ok(mut h) = self.0.lock() {
                if let Some(h) = h.take() {
                    h.abort();
                }
            }
        }
        Ok(())
    }
}

/// Turns a finished command's output into a Python value (on the loop's thread).
type Done = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;

/// The completions of one asyncio loop. Engine threads never take the GIL:
/// they queue `(future, output)` and write one byte to a pipe the loop
/// watches (`loop.add_reader`) when the queue turns non-empty; the loop
/// then resolves every queued future in one pass. A worker blocked on the
/// GIL would stall the engine's other sessions.
#[pyclass(frozen, module = "narad._native")]
pub struct LoopChannel {
    queue: Mutex<Vec<(Py<PyAny>, Done)>>,
    writer: Mutex<std::io::PipeWriter>,
    reader: Mutex<std::io::PipeReader>,
    fd: i64,
}

impl LoopChannel {
    fn push(&self, fut: Py<PyAny>, done: Done) {
        let was_empty = match self.queue.lock() {
            Ok(mut q) => {
                let was_empty = q.is_empty();
                q.push((fut, done));
                was_empty
            }
            Err(_) => return,
        };
        if was_empty {
            if let Ok(mut w) = self.writer.lock() {
                let _ = w.write_all(&[1]);
            }
        }
    }
}

#[pymethods]
impl LoopChannel {
    #[new]
    fn new() -> PyResult<Self> {
        let (reader, writer) =
            std::io::pipe().map_err(|e| PyRuntimeError::new_err(format!("pipe: {e}")))?;
        let fd = i64::from(reader.as_raw_fd());
        Ok(Self {
            queue: Mutex::new(Vec::new()),
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
            fd,
        })
    }

    /// The pipe's read end, for `loop.add_reader`.
    #[getter]
    fn fd(&self) -> i64 {
        self.fd
    }

    /// Resolves every queued future (the loop's reader callback).
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        if let Ok(mut r) = self.reader.lock() {
            // Non-blocking (set by `narad._bridge`): at most one byte waits per pass.
            let mut byte = [0u8; 1];
            let _ = r.read(&mut byte);
        }
        let items = match self.queue.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(_) => return Ok(()),
        };
        let resolve = RESOLVE.import(py, "narad._bridge", "resolve")?;
        for (fut, done) in items {
            let (ok, value) = match done(py) {
                Ok(v) => (true, v),
                Err(e) => (false, e.into_value(py).into_any()),
            };
            resolve.call1((fut, ok, value))?;
        }
        Ok(())
    }
}

/// Runs `fut` on the runtime and returns an asyncio future of its result.
/// Cancelling the future does not stop a command (it completes, unseen):
/// commands are short, and this saves a callback per call.
pub fn spawn<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    spawn_with(py, fut, false)
}

/// [`spawn`] for a wait that may never end (a follower, an outbox): a
/// cancelled future aborts its task.
pub fn spawn_abortable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    spawn_with(py, fut, true)
}

fn spawn_with<'py, F, T>(py: Python<'py>, fut: F, abortable: bool) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let rt = runtime()?;
    let event_loop = GET_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    let py_fut = event_loop.call_method0("create_future")?;
    let attr = intern!(py, "_narad_channel");
    let channel = match event_loop.getattr_opt(attr)? {
        Some(ch) => ch,
        None => CHANNEL
            .import(py, "narad._bridge", "channel")?
            .call1((&event_loop,))?,
    };
    let channel: Py<LoopChannel> = channel.cast_into::<LoopChannel>()?.unbind();
    // One poll on the caller's thread (GIL released, inside the runtime):
    // a command that does not wait (a read from the cached session) is done
    // without a thread hop; one that waits continues on the runtime.
    let mut fut = Box::pin(fut);
    let first = {
        let _in_runtime = rt.enter();
        py.detach(|| {
            let mut cx = Context::from_waker(Waker::noop());
            fut.as_mut().poll(&mut cx)
        })
    };
    if let Poll::Ready(out) = first {
        let resolve = RESOLVE.import(py, "narad._bridge", "resolve")?;
        match out.and_then(|v| v.into_py_any(py)) {
            Ok(v) => resolve.call1((&py_fut, true, v))?,
            Err(e) => resolve.call1((&py_fut, false, e.into_value(py)))?,
        };
        return Ok(py_fut);
    }
    let pf = py_fut.clone().unbind();
    let counted = InFlight::new();
    let handle = rt.spawn(async move {
        let _counted = counted;
        let out = fut.await;
        let done: Done = Box::new(move |py| out.and_then(|v| v.into_py_any(py)));
        channel.get().push(pf, done);
    });
    if abortable {
        let abort = AbortOnCancel(Mutex::new(Some(handle.abort_handle())));
        py_fut.call_method1("add_done_callback", (abort,))?;
    }
    Ok(py_fut)
}

/// Waits (without the GIL) until no bridged task is inside Python, at most
/// `timeout` seconds. Registered with `atexit`.
#[pyfunction]
pub fn drain(py: Python<'_>, timeout: f64) {
    let limit = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::ZERO);
    py.detach(|| {
        let start = Instant::now();
        while IN_FLIGHT.load(Ordering::SeqCst) > 0 && start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Sends once when called (a `concurrent.futures` done callback).
#[pyclass(frozen)]
struct Notify(Mutex<Option<oneshot::Sender<()>>>);

#[pymethods]
impl Notify {
    fn __call__(&self, _fut: &Bound<'_, PyAny>) {
        if let Ok(mut s) = self.0.lock() {
            if let Some(s) = s.take() {
                let _ = s.send(());
            }
        }
    }
}

/// Runs the coroutine `make()` returns on `event_loop` and waits for its
/// result from a tokio task.
pub async fn call_async<M>(event_loop: Py<PyAny>, make: M) -> PyResult<Py<PyAny>>
where
    M: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>,
{
    let (tx, rx) = oneshot::channel();
    let cf = Python::attach(|py| -> PyResult<Py<PyAny>> {
        let coro = make(py)?;
        let cf = py
            .import("asyncio")?
            .call_method1("run_coroutine_threadsafe", (coro, event_loop.bind(py)))?;
        cf.call_method1("add_done_callback", (Notify(Mutex::new(Some(tx))),))?;
        Ok(cf.unbind())
    })?;
    rx.await
        .map_err(|_| PyRuntimeError::new_err("the event loop dropped a tool call"))?;
    Python::attach(|py| cf.bind(py).call_method0("result").map(Bound::unbind))
}
