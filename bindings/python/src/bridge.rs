//! The asyncio ↔ Rust bridge: an engine call is a Rust future that the
//! caller's asyncio loop itself drives. It is polled on the loop's thread
//! with the GIL released and inside the engine's tokio runtime (the stores
//! do their IO on blocking threads, so a poll never waits on IO). When the
//! store finishes, its waker queues the task on the loop's [`LoopChannel`]
//! and writes one byte to a pipe the loop watches (`loop.add_reader`); the
//! loop polls the task again and resolves its asyncio future. A write thus
//! costs one thread wake-up, as it does for a Rust caller on tokio, and
//! the engine's threads never take the GIL.
//!
//! Why not a stock bridge: a tokio worker that waits for the GIL stalls
//! every other session on that worker, and one that takes it while the
//! interpreter finalizes aborts the process ("PyGILState_Release … must be
//! current"). Here no engine thread enters Python; a cancelled asyncio
//! future of a wait that may never end (a follower, an outbox) drops its
//! task.
//!
//! `NARAD_BRIDGE=runtime` instead runs each call on a tokio worker after its
//! first poll (the engine's CPU work then runs beside the loop's thread);
//! the benchmark compares the two.

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::conv::Fail;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static ON_RUNTIME: OnceLock<bool> = OnceLock::new();
static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
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

fn on_runtime() -> bool {
    *ON_RUNTIME.get_or_init(|| std::env::var("NARAD_BRIDGE").is_ok_and(|v| v == "runtime"))
}

/// Turns a finished call's output into a Python value (on the loop's thread).
pub type Done = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;

type BoxFut = Pin<Box<dyn Future<Output = Done> + Send>>;

/// One engine call driven by an asyncio loop.
struct LoopTask {
    fut: Mutex<Option<BoxFut>>,
    py_fut: Py<PyAny>,
    channel: Py<LoopChannel>,
    queued: AtomicBool,
}

impl Wake for LoopTask {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.channel.get().push(Item::Poll(Arc::clone(self)));
        }
    }
}

impl LoopTask {
    /// Polls once (GIL released, inside the runtime); `Some` when done.
    fn poll(self: &Arc<Self>, py: Python<'_>, rt: &Runtime) -> Option<Done> {
        self.queued.store(false, Ordering::Release);
        let waker = Waker::from(Arc::clone(self));
        let _in_runtime = rt.enter();
        py.detach(|| {
            let mut slot = self.fut.lock().ok()?;
            let fut = slot.as_mut()?;
            match fut.as_mut().poll(&mut Context::from_waker(&waker)) {
                Poll::Ready(done) => {
                    *slot = None;
                    Some(done)
                }
                Poll::Pending => None,
            }
        })
    }
}

enum Item {
    Poll(Arc<LoopTask>),
    Ready(Py<PyAny>, Done),
}

/// Sets `fut`'s result (or exception) unless it was cancelled.
fn resolve(py: Python<'_>, fut: &Bound<'_, PyAny>, done: Done) -> PyResult<()> {
    if fut.call_method0(intern!(py, "done"))?.is_truthy()? {
        return Ok(());
    }
    match done(py) {
        Ok(v) => fut.call_method1(intern!(py, "set_result"), (v,))?,
        Err(e) => fut.call_method1(intern!(py, "set_exception"), (e.into_value(py),))?,
    };
    Ok(())
}

/// The ready tasks of one asyncio loop. Engine threads never take the
/// GIL: their wakers queue the task and write one byte to a pipe the loop
/// watches when the queue turns non-empty; the loop then polls every
/// queued task in one pass.
#[pyclass(frozen, module = "narad._native")]
pub struct LoopChannel {
    queue: Mutex<Vec<Item>>,
    writer: Mutex<std::io::PipeWriter>,
    reader: Mutex<std::io::PipeReader>,
    fd: i64,
}

impl LoopChannel {
    fn push(&self, item: Item) {
        let was_empty = match self.queue.lock() {
            Ok(mut q) => {
                let was_empty = q.is_empty();
                q.push(item);
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

    /// Polls every queued task and resolves the finished ones (the loop's
    /// reader callback).
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
        let rt = runtime()?;
        for item in items {
            match item {
                Item::Ready(fut, done) => resolve(py, fut.bind(py), done)?,
                Item::Poll(task) => {
                    if let Some(done) = task.poll(py, rt) {
                        resolve(py, task.py_fut.bind(py), done)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Drops the task of an asyncio future that was cancelled.
#[pyclass(frozen)]
struct DropOnCancel(
    Mutex<Option<Arc<LoopTask>>>,
    Mutex<Option<tokio::task::AbortHandle>>,
);

#[pymethods]
impl DropOnCancel {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if fut.call_method0("cancelled")?.is_truthy()? {
            let task = self.0.lock().ok().and_then(|mut t| t.take());
            if let Some(task) = task {
                let fut = task.fut.lock().ok().and_then(|mut f| f.take());
                drop(fut);
            }
            if let Some(h) = self.1.lock().ok().and_then(|mut h| h.take()) {
                h.abort();
            }
        }
        Ok(())
    }
}

/// Runs `fut` for the running asyncio loop and returns an asyncio future
/// of its result, converted by `into_py` on the loop's thread. Cancelling
/// that future does not stop a command (it completes, unseen).
pub fn spawn<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    spawn_with(py, fut, false)
}

/// [`spawn`] for a wait that may never end (a follower, an outbox): a
/// cancelled future drops its task.
pub fn spawn_abortable<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    spawn_with(py, fut, true)
}

fn spawn_with<'py, F, T, E>(py: Python<'py>, fut: F, abortable: bool) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    let rt = runtime()?;
    let event_loop = GET_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    let py_fut = event_loop.call_method0(intern!(py, "create_future"))?;
    let channel = match event_loop.getattr_opt(intern!(py, "_narad_channel"))? {
        Some(ch) => ch,
        None => CHANNEL
            .import(py, "narad._bridge", "channel")?
            .call1((&event_loop,))?,
    };
    let channel: Py<LoopChannel> = channel.cast_into::<LoopChannel>()?.unbind();
    let boxed: BoxFut = Box::pin(async move {
        let out = fut.await;
        let done: Done = Box::new(move |py| match out {
            Ok(v) => v.into_py_any(py),
            Err(e) => Err(e.into().into_py()),
        });
        done
    });
    let task = Arc::new(LoopTask {
        fut: Mutex::new(Some(boxed)),
        py_fut: py_fut.clone().unbind(),
        channel,
        queued: AtomicBool::new(false),
    });
    if on_runtime() {
        return spawn_on_runtime(py, rt, task, abortable);
    }
    if let Some(done) = task.poll(py, rt) {
        resolve(py, &py_fut, done)?;
        return Ok(py_fut);
    }
    if abortable {
        let cb = DropOnCancel(Mutex::new(Some(task)), Mutex::new(None));
        py_fut.call_method1(intern!(py, "add_done_callback"), (cb,))?;
    }
    Ok(py_fut)
}

/// The `NARAD_BRIDGE=runtime` path: one poll on the caller's thread, then
/// a tokio task that queues the output for the loop.
fn spawn_on_runtime<'py>(
    py: Python<'py>,
    rt: &Runtime,
    task: Arc<LoopTask>,
    abortable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py_fut = task.py_fut.bind(py).clone();
    let Some(mut fut) = task.fut.lock().ok().and_then(|mut f| f.take()) else {
        return Ok(py_fut);
    };
    let first = {
        let _in_runtime = rt.enter();
        py.detach(|| fut.as_mut().poll(&mut Context::from_waker(Waker::noop())))
    };
    if let Poll::Ready(done) = first {
        resolve(py, &py_fut, done)?;
        return Ok(py_fut);
    }
    let pf = task.py_fut.clone_ref(py);
    let channel = task.channel.clone_ref(py);
    let handle = rt.spawn(async move {
        let done = fut.await;
        channel.get().push(Item::Ready(pf, done));
    });
    if abortable {
        let cb = DropOnCancel(Mutex::new(None), Mutex::new(Some(handle.abort_handle())));
        py_fut.call_method1(intern!(py, "add_done_callback"), (cb,))?;
    }
    Ok(py_fut)
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
/// result (from a task the loop drives: the GIL is taken on the loop's
/// own thread).
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
