//! The asyncio ↔ tokio bridge. While few calls are in flight, an engine
//! call is polled once on the caller's thread (GIL released, inside the
//! engine's tokio runtime; the stores do their IO on their own threads, so
//! a poll never waits on IO): a call that does not wait is done with no
//! thread hop. (With many in flight, calls start on the workers, so the
//! engine's work runs in parallel rather than on the loop's thread.) A call
//! that waits is woken by the store's completion; that wake-up queues one
//! poll on the asyncio loop ([`LoopChannel`], a pipe the loop watches with
//! `loop.add_reader`, one byte per batch), which usually finishes the
//! command and sets its result there: one thread hop per command, as a Rust
//! caller pays (and, while few calls are in flight, the loop spins for it
//! rather than sleeps: [`crate::spin`]). A command that waits twice (`end_run` reads the session's
//! queue, then appends) gets a second poll on the loop the same way
//! ([`LOOP_POLLS`]). A call still waiting after those polls moves onto a
//! tokio worker at its next wake-up and runs to its end there like a Rust
//! caller's; only its output is queued for the loop.
//!
//! Measured alternatives: letting the loop drive the future to its end
//! costs one loop wake-up per internal await of a command (several per
//! write), which made it 2-3x slower than a Rust caller; spawning on the
//! runtime right after the first poll costs a worker wake-up per call;
//! moving the call onto a worker at its first wake-up (`NARAD_LOOP_POLLS=0`)
//! costs two hops per command (store → worker → loop); with one loop poll
//! (`NARAD_LOOP_POLLS=1`), a command that waits twice pays three (store →
//! loop, store → worker → loop), which cost the one-session SQLite bench
//! about 0.07 of its Python/Rust ratio.
//!
//! Why not a stock bridge: a tokio worker that waits for the GIL stalls
//! every other session on that worker, and one that takes it while the
//! interpreter finalizes aborts the process ("PyGILState_Release … must be
//! current"). Here engine threads never take the GIL (outputs become Python
//! objects on the loop's thread). A cancelled asyncio future drops (or
//! aborts) its call's task, as dropping the call's future does in Rust.

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
use crate::knob::{env_usize, Knob};
use crate::spin::{self, Spin};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CHANNEL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CALL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The binding's tokio runtime (multi-threaded, started on first use).
pub fn runtime() -> PyResult<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // NARAD_WORKER_THREADS sizes the engine's runtime (default: one per core).
    if let Some(n) = env_usize("NARAD_WORKER_THREADS").filter(|n| *n > 0) {
        builder.worker_threads(n);
    }
    let rt = builder
        .enable_all()
        .thread_name("narad-engine")
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("tokio runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// Turns a finished call's output into a Python value (on the loop's thread).
pub type Done = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;

type BoxFut = Pin<Box<dyn Future<Output = Done> + Send>>;

static INLINE_LIMIT: Knob = Knob::new("NARAD_INLINE_LIMIT", 2);
/// Commands started and not yet finished (waits that may never end, such
/// as followers, are not counted).
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// The first poll runs on the caller's thread only while at most this many
/// commands (the new one included) are in flight (`NARAD_INLINE_LIMIT`, default 2). With one
/// session it saves a worker wake-up per command; with many, the engine's
/// work of every command would pile up on the loop's one thread, so calls
/// start on the tokio workers instead, in parallel. `0` never polls inline.
fn inline_limit() -> usize {
    INLINE_LIMIT.get()
}

/// How calls moved through the bridge (for `_native._bridge_stats`, which
/// the benchmark's breakdown reads): polls on the caller's thread that
/// finished or waited, polls on the loop after a wake-up that finished or
/// waited, calls moved onto a worker, outputs queued by a worker; then
/// nanoseconds summed over wake-ups: from the inline poll's `Pending` to the
/// first wake-up (the store's latency), from a loop-bound wake-up to its
/// poll (the hop), in those polls, and in the inline polls (the engine's
/// work on the caller's thread); then the loop's spin slices (see
/// [`crate::spin`]) and those that caught a completion.
static STATS: [AtomicUsize; 12] = [const { AtomicUsize::new(0) }; 12];
const INLINE_READY: usize = 0;
const INLINE_PENDING: usize = 1;
const LOOP_READY: usize = 2;
const LOOP_PENDING: usize = 3;
const SPAWNED: usize = 4;
const WORKER_DONE: usize = 5;
const NS_PENDING_TO_WAKE: usize = 6;
const NS_WAKE_TO_POLL: usize = 7;
const NS_LOOP_POLL: usize = 8;
const NS_INLINE_POLL: usize = 9;
const SPIN_SLICES: usize = 10;
const SPIN_CAUGHT: usize = 11;
static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();

fn now_ns() -> usize {
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as usize
}

/// Adds the time since `mark` to `STATS[i]` (unless no mark was set yet),
/// moves the mark to now and returns that time.
fn add_since(i: usize, mark: &AtomicUsize) -> Option<usize> {
    let now = now_ns();
    let then = mark.swap(now, Ordering::Relaxed);
    (then != 0).then(|| {
        let took = now.saturating_sub(then);
        STATS[i].fetch_add(took, Ordering::Relaxed);
        took
    })
}

fn count(i: usize) {
    STATS[i].fetch_add(1, Ordering::Relaxed);
}

/// The names [`_bridge_stats`] gives [`STATS`], in its order.
const STAT_NAMES: [&str; 12] = [
    "inline_ready",
    "inline_pending",
    "loop_ready",
    "loop_pending",
    "spawned",
    "worker_done",
    "ns_pending_to_wake",
    "ns_wake_to_poll",
    "ns_loop_poll",
    "ns_inline_poll",
    "spin_slices",
    "spin_caught",
];

/// The bridge's counters by name (see [`STATS`]), so a reader never
/// hard-codes their order.
#[pyfunction]
pub fn _bridge_stats() -> std::collections::BTreeMap<&'static str, usize> {
    STAT_NAMES
        .iter()
        .zip(&STATS)
        .map(|(n, c)| (*n, c.load(Ordering::Relaxed)))
        .collect()
}

/// Sets how long the loop spins for a wait, in microseconds (`None`: the
/// default; `0`: never), for A/B measurement and tests in one process;
/// returns the previous setting. See [`crate::spin`].
#[pyfunction]
#[pyo3(signature = (us=None))]
pub fn _set_spin_us(us: Option<usize>) -> usize {
    spin::set_limit_us(us)
}

/// The embedded stores' writer polling limit in microseconds (see
/// [`crate::spin`]), as the module's import set it.
#[pyfunction]
pub fn _writer_spin_us() -> u128 {
    narad_store::writer_spin().as_micros()
}

/// How many wake-ups of an inline-polled call are polled on the loop
/// before the call moves onto a worker. Two covers every command of an
/// agent turn (at most two waits each); a longer one (a hydrate that pages
/// through a journal) does the rest of its work on a worker, not on the
/// loop's thread. Zero moves a call onto a worker at its first wake-up.
const LOOP_POLLS: usize = 2;

/// [`LOOP_POLLS`], or `NARAD_LOOP_POLLS`, or what `_set_loop_polls` set
/// (for measuring).
static LOOP_POLLS_SETTING: Knob = Knob::new("NARAD_LOOP_POLLS", LOOP_POLLS);

fn loop_polls() -> usize {
    LOOP_POLLS_SETTING.get()
}

/// Sets how many wake-ups are polled on the loop (`None`: the default,
/// [`LOOP_POLLS`]), for A/B measurement and tests in one process; returns
/// the previous setting.
#[pyfunction]
#[pyo3(signature = (polls=None))]
pub fn _set_loop_polls(polls: Option<usize>) -> usize {
    LOOP_POLLS_SETTING.swap(polls.unwrap_or(LOOP_POLLS))
}

/// Counts a command in [`BUSY`] until its task is dropped.
struct Busy;

impl Busy {
    fn new() -> Self {
        BUSY.fetch_add(1, Ordering::AcqRel);
        Self
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Who polls a task after its first poll.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver {
    /// A tokio worker, from the first wake-up on.
    Runtime,
    /// The asyncio loop's thread (GIL released while polling): for calls
    /// that enter Python themselves (the client executor's tool call), so
    /// the GIL is only ever taken on the loop's own thread.
    Loop,
}

/// One engine call.
struct Task {
    fut: Mutex<Option<BoxFut>>,
    py_fut: Py<PyAny>,
    channel: Py<LoopChannel>,
    driver: Driver,
    /// Runtime: moved onto a worker. Loop: queued for a poll.
    scheduled: AtomicBool,
    /// Runtime driver, polled inline: how many more wake-ups queue a poll
    /// on the loop's thread instead of moving the call onto a worker (see
    /// [`Task::wake_by_ref`]).
    loop_polls_left: AtomicUsize,
    mark: AtomicUsize,
    abort: Mutex<Option<tokio::task::AbortHandle>>,
    /// Set when the asyncio future was cancelled.
    cancelled: AtomicBool,
    _busy: Option<Busy>,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        // A wake-up of an inline-polled call (usually the store's
        // completion, after which the command finishes) wakes the loop,
        // which polls it and sets the result there: one thread hop, as a
        // Rust caller pays, instead of worker then loop. A call still
        // pending after LOOP_POLLS such polls goes to a worker on its next
        // wake-up, so the loop never drives a long call's every await.
        let waited = add_since(NS_PENDING_TO_WAKE, &self.mark);
        if let (Some(ns), Driver::Runtime) = (waited, self.driver) {
            self.channel.get().spin.observe(ns);
        }
        if self.driver == Driver::Loop
            || self
                .loop_polls_left
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        {
            self.channel.get().push(Item::Poll(Arc::clone(self)));
            return;
        }
        self.to_runtime();
    }
}

impl Task {
    /// Moves the call onto a tokio worker, which drives it to its end and
    /// queues its output for the loop.
    fn to_runtime(self: &Arc<Self>) {
        let Some(rt) = RUNTIME.get() else { return };
        count(SPAWNED);
        let task = Arc::clone(self);
        let handle = rt.spawn(async move {
            // Waits for the inline poll to return if it is still running.
            let fut = task.fut.lock().ok().and_then(|mut f| f.take());
            if let Some(fut) = fut {
                let done = fut.await;
                count(WORKER_DONE);
                task.channel.get().push(Item::Done(Arc::clone(&task), done));
            }
        });
        if let Ok(mut a) = self.abort.lock() {
            *a = Some(handle.abort_handle());
        }
        // A cancel that ran before the handle was stored could not abort it.
        if self.cancelled.load(Ordering::Acquire) {
            handle.abort();
        }
    }

    /// Polls on the caller's thread (GIL released, inside the runtime);
    /// `Some` when done.
    fn poll_here(self: &Arc<Self>, py: Python<'_>, rt: &Runtime) -> Option<Done> {
        self.scheduled.store(false, Ordering::Release);
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
    Poll(Arc<Task>),
    Done(Arc<Task>, Done),
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

/// The completions of one asyncio loop. Engine threads never take the
/// GIL: they queue the output (or, for a loop-driven task, the task) and
/// write one byte to a pipe the loop watches when the queue turns
/// non-empty; the loop then handles every queued item in one pass. Once
/// the loop closes ([`LoopChannel::close`]), a call waiting for a poll on
/// it goes to a tokio worker instead, so it still runs to its end (and
/// releases what it holds, such as its session's turn). While a command it
/// polled waits, the loop may spin on `ready` instead of sleeping
/// ([`crate::spin`]).
#[pyclass(frozen, module = "narad._native")]
pub struct LoopChannel {
    queue: Mutex<Vec<Item>>,
    /// Set when an item is queued, cleared when the queue is taken.
    ready: AtomicBool,
    spin: Spin,
    /// The loop's `call_soon`, which queues the spin callback (`None`: the
    /// loop never spins).
    call_soon: Option<Py<PyAny>>,
    /// Set (under `queue`'s lock) when the loop closed.
    closed: AtomicBool,
    writer: Mutex<std::io::PipeWriter>,
    reader: Mutex<std::io::PipeReader>,
    fd: i64,
}

/// An item whose loop closed: a command waiting for its poll runs on a
/// worker; an output nobody can receive, or a call that needs the loop,
/// is dropped.
fn off_loop(item: Item) {
    if let Item::Poll(task) = item {
        if task.driver == Driver::Runtime {
            task.to_runtime();
        }
    }
}

impl LoopChannel {
    fn push(&self, item: Item) {
        let was_empty = match self.queue.lock() {
            Ok(mut q) if !self.closed.load(Ordering::Acquire) => {
                let was_empty = q.is_empty();
                q.push(item);
                self.ready.store(true, Ordering::Release);
                was_empty
            }
            Ok(q) => {
                drop(q);
                off_loop(item);
                return;
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
    /// A channel for the loop whose `call_soon` is given (without it, the
    /// loop never spins).
    #[new]
    #[pyo3(signature = (call_soon=None))]
    fn new(call_soon: Option<Py<PyAny>>) -> PyResult<Self> {
        let (reader, writer) =
            std::io::pipe().map_err(|e| PyRuntimeError::new_err(format!("pipe: {e}")))?;
        let fd = i64::from(reader.as_raw_fd());
        Ok(Self {
            queue: Mutex::new(Vec::new()),
            ready: AtomicBool::new(false),
            spin: Spin::default(),
            call_soon,
            closed: AtomicBool::new(false),
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
            fd,
        })
    }

    /// The loop is closing (called by `narad._bridge` from `loop.close`):
    /// from now on, and for what is queued, a command waiting for a poll
    /// goes to a worker.
    fn close(&self) {
        let items = match self.queue.lock() {
            Ok(mut q) => {
                self.closed.store(true, Ordering::Release);
                std::mem::take(&mut *q)
            }
            Err(_) => return,
        };
        items.into_iter().for_each(off_loop);
    }

    /// The pipe's read end, for `loop.add_reader`.
    #[getter]
    fn fd(&self) -> i64 {
        self.fd
    }

    /// Resolves every finished call and polls every queued loop-driven one
    /// (the loop's reader callback).
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        if let Ok(mut r) = self.reader.lock() {
            // Non-blocking (set by `narad._bridge`). One byte is written
            // per empty-to-queued turn; a spinner that took the queue
            // before its byte arrived leaves one more for a later pass.
            let mut bytes = [0u8; 64];
            let _ = r.read(&mut bytes);
        }
        let items = match self.queue.lock() {
            Ok(mut q) => {
                self.ready.store(false, Ordering::Release);
                std::mem::take(&mut *q)
            }
            Err(_) => return Ok(()),
        };
        let rt = runtime()?;
        for item in items {
            match item {
                Item::Done(task, done) => resolve(py, task.py_fut.bind(py), done)?,
                Item::Poll(task) => {
                    add_since(NS_WAKE_TO_POLL, &task.mark);
                    let polled = task.poll_here(py, rt);
                    add_since(NS_LOOP_POLL, &task.mark);
                    match polled {
                        Some(done) => {
                            count(LOOP_READY);
                            resolve(py, task.py_fut.bind(py), done)?;
                        }
                        None => count(LOOP_PENDING),
                    }
                }
            }
        }
        Ok(())
    }

    /// The spin callback (queued by the extension with `loop.call_soon`):
    /// waits one slice for a completion with the GIL released, handles
    /// what came, and queues itself again while a command still waits.
    fn spin(slf: &Bound<'_, Self>, py: Python<'_>) -> PyResult<()> {
        let me = slf.get();
        let limit = spin::limit_ns();
        count(SPIN_SLICES);
        if py.detach(|| me.spin.wait_slice(&me.ready, limit, now_ns)) {
            count(SPIN_CAUGHT);
            me.drain(py)?;
        }
        let busy = BUSY.load(Ordering::Acquire);
        if me.spin.keep_going(now_ns(), busy, inline_limit(), limit) && !Self::queue_spin(slf, py) {
            me.spin.stopped();
        }
        Ok(())
    }
}

impl LoopChannel {
    /// Queues [`LoopChannel::spin`] on the loop; `false` if that failed
    /// (the loop is closing), in which case the loop simply sleeps.
    fn queue_spin(slf: &Bound<'_, Self>, py: Python<'_>) -> bool {
        let Some(call_soon) = &slf.get().call_soon else {
            return false;
        };
        slf.getattr(intern!(py, "spin"))
            .and_then(|cb| call_soon.bind(py).call1((cb,)))
            .is_ok()
    }

    /// A command polled inline on this loop began to wait: spin for it if
    /// the policy says so ([`Spin::begin`]).
    fn waiting(slf: &Bound<'_, Self>, py: Python<'_>) {
        let me = slf.get();
        if me.spin.begin(now_ns(), spin::limit_ns()) && !Self::queue_spin(slf, py) {
            me.spin.stopped();
        }
    }
}

/// Drops (or aborts) the task of a call whose asyncio future was
/// cancelled (`narad._bridge._Call.cancel` calls it). Weak: the task holds
/// its future, which holds this.
#[pyclass(frozen)]
struct DropOnCancel(std::sync::Weak<Task>);

#[pymethods]
impl DropOnCancel {
    fn __call__(&self) {
        let Some(task) = self.0.upgrade() else { return };
        task.cancelled.store(true, Ordering::Release);
        let dropped = task.fut.lock().ok().and_then(|mut f| f.take());
        drop(dropped);
        if let Some(h) = task.abort.lock().ok().and_then(|mut h| h.take()) {
            h.abort();
        }
    }
}

/// Runs `fut` for the running asyncio loop and returns an asyncio future
/// of its result, converted to Python on the loop's thread. Cancelling
/// that future (of any call but [`spawn_on_loop`]'s) drops `fut` where it stands, as dropping a command's
/// future does in Rust: a command that had not reached the store appends
/// nothing, one whose batch had is appended or refused unseen, and either
/// way it is settled before the session's next command runs. (Letting a
/// cancelled command run on let it land after a later one, since the
/// later one did not wait for it.)
pub fn spawn<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    spawn_with(py, fut, Driver::Runtime, false, Start::Inline)
}

/// [`spawn`] for a call whose work grows with the session (a whole
/// state's copy): it starts on a tokio worker rather than with an inline
/// poll on the loop's thread, which that work would stall. One more thread
/// hop than [`spawn`].
pub fn spawn_on_worker<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    spawn_with(py, fut, Driver::Runtime, false, Start::Worker)
}

/// [`spawn`] for a wait that may never end (a follower, an outbox): not
/// counted among the calls in flight that decide where a call starts.
pub fn spawn_endless<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    spawn_with(py, fut, Driver::Runtime, true, Start::Inline)
}

/// [`spawn`] for a call that enters Python itself: the loop's thread
/// polls it to its end, so the GIL is never taken on an engine thread.
/// Cancelling its future does not stop it: the client executor's call
/// runs its tool to the end and records the real finish in its ledger,
/// which a redelivery then answers (the tool still runs at most once).
pub fn spawn_on_loop<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    spawn_with(py, fut, Driver::Loop, false, Start::Inline)
}

/// Where a call's first poll runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// On the caller's thread while few calls are in flight.
    Inline,
    /// On a tokio worker.
    Worker,
}

fn spawn_with<'py, F, T, E>(
    py: Python<'py>,
    fut: F,
    driver: Driver,
    endless: bool,
    start: Start,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Fail> + Send + 'static,
{
    let rt = runtime()?;
    let event_loop = GET_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item(intern!(py, "loop"), &event_loop)?;
    let py_fut = CALL
        .import(py, "narad._bridge", "_Call")?
        .call((), Some(&kwargs))?;
    let channel = match event_loop.getattr_opt(intern!(py, "_narad_channel"))? {
        Some(ch) => ch,
        None => CHANNEL
            .import(py, "narad._bridge", "channel")?
            .call1((&event_loop,))?,
    };
    let channel: Py<LoopChannel> = channel.cast_into::<LoopChannel>()?.unbind();
    // Boxed first: a command's future is kilobytes, and moving it into the
    // wrapper below and then the wrapper into its box copied it twice.
    let fut = Box::pin(fut);
    let boxed: BoxFut = Box::pin(async move {
        let out = fut.await;
        let done: Done = Box::new(move |py| match out {
            Ok(v) => v.into_py_any(py),
            Err(e) => Err(e.into().into_py()),
        });
        done
    });
    let task = Arc::new(Task {
        fut: Mutex::new(Some(boxed)),
        py_fut: py_fut.clone().unbind(),
        channel,
        driver,
        scheduled: AtomicBool::new(false),
        loop_polls_left: AtomicUsize::new(if driver == Driver::Runtime {
            loop_polls()
        } else {
            0
        }),
        mark: AtomicUsize::new(0),
        abort: Mutex::new(None),
        cancelled: AtomicBool::new(false),
        _busy: (!endless).then(Busy::new),
    });
    let crowded = BUSY.load(Ordering::Acquire) > inline_limit();
    if driver == Driver::Runtime && (crowded || start == Start::Worker) {
        task.loop_polls_left.store(0, Ordering::Release);
        task.wake_by_ref();
    } else if let Some(done) = {
        let t0 = now_ns();
        let polled = task.poll_here(py, rt);
        STATS[NS_INLINE_POLL].fetch_add(now_ns().saturating_sub(t0), Ordering::Relaxed);
        polled
    } {
        count(INLINE_READY);
        resolve(py, &py_fut, done)?;
        return Ok(py_fut);
    } else {
        count(INLINE_PENDING);
        task.mark.store(now_ns(), Ordering::Relaxed);
        if driver == Driver::Runtime {
            LoopChannel::waiting(task.channel.bind(py), py);
        }
    }
    if driver == Driver::Runtime {
        py_fut.setattr(
            intern!(py, "_narad_drop"),
            DropOnCancel(Arc::downgrade(&task)),
        )?;
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
/// result. Call it only from a [`spawn_on_loop`] task, so the GIL is
/// taken on the loop's own thread.
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
