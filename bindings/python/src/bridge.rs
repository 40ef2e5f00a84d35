//! The asyncio ↔ tokio bridge. A command runs on the binding's tokio
//! runtime; its result is handed to the asyncio loop with
//! `call_soon_threadsafe`, so the event loop never blocks.
//!
//! Why not a stock bridge: a tokio worker that takes the GIL while the
//! interpreter finalizes aborts the process ("PyGILState_Release … must be
//! current"). Here every bridged task is counted until it has left Python,
//! a cancelled asyncio future aborts its task, and `drain` (registered with
//! `atexit`, which runs before finalization) waits for the count to reach
//! zero.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The binding's tokio runtime (multi-threaded, started on first use).
pub fn runtime() -> PyResult<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
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

/// Runs `fut` on the runtime and returns an asyncio future of its result.
pub fn spawn<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let rt = runtime()?;
    let event_loop = GET_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    let py_fut = event_loop.call_method0("create_future")?;
    let resolve = RESOLVE.import(py, "narad._bridge", "resolve")?;
    let (lp, pf, res) = (
        event_loop.unbind(),
        py_fut.clone().unbind(),
        resolve.clone().unbind(),
    );
    let counted = InFlight::new();
    let handle = rt.spawn(async move {
        let _counted = counted;
        let out = fut.await;
        Python::attach(move |py| {
            let (ok, value) = match out.and_then(|v| v.into_py_any(py)) {
                Ok(v) => (true, v),
                Err(e) => (false, e.into_value(py).into_any()),
            };
            // A closed loop (the program is ending) refuses: nobody waits.
            let _ = lp.bind(py).call_method1(
                "call_soon_threadsafe",
                (res.bind(py), pf.bind(py), ok, value),
            );
            drop((lp, pf, res));
        });
    });
    let abort = AbortOnCancel(Mutex::new(Some(handle.abort_handle())));
    py_fut.call_method1("add_done_callback", (abort,))?;
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
