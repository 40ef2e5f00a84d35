//! The engine's typed [`SessionState`] as the plain tuples
//! `narad._state` turns into dataclasses (no JSON text in between), read
//! in bounded slices.

use narad_core::checker::{
    Documents, Message, OpenInterrupt, Reasoning, Run, RunState, Slot, Workflow,
};
use narad_engine::{SessionState, ToolCall, ToolCallState, TranscriptMessage};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::conv;

fn run_state(s: RunState) -> &'static str {
    match s {
        RunState::Running => "running",
        RunState::Paused => "paused",
        RunState::Finished => "finished",
        RunState::Error => "error",
        RunState::Cancelled => "cancelled",
    }
}

fn interrupt<'py>(py: Python<'py>, i: &OpenInterrupt) -> PyResult<Bound<'py, PyTuple>> {
    (i.id.as_str(), i.wait_id.as_str(), i.actions.clone()).into_pyobject(py)
}

fn opt_interrupt<'py>(py: Python<'py>, i: Option<&OpenInterrupt>) -> PyResult<Bound<'py, PyAny>> {
    match i {
        None => Ok(py.None().into_bound(py)),
        Some(i) => interrupt(py, i).map(Bound::into_any),
    }
}

/// Most items a slice of [`NativeState`] holds.
const SLICE_ITEMS: usize = 512;

/// A slice of [`NativeState`] ends once the text it copied reaches this.
const SLICE_BYTES: usize = 256 << 10;

/// A typed state handed to Python, read in slices: `narad._state` turns
/// each slice of field tuples into dataclasses and lets the event loop run
/// between slices, so a long session's state never stalls the loop for
/// more than a slice (at most [`SLICE_ITEMS`] items, or about
/// [`SLICE_BYTES`] of text).
#[pyclass(frozen)]
pub struct NativeState {
    head: u64,
    slot: Option<Slot>,
    runs: Vec<(String, Run)>,
    tools: Vec<(String, ToolCall)>,
    messages: Vec<Message>,
    reasoning: Vec<Reasoning>,
    workflows: Vec<(String, Workflow)>,
    documents: Documents,
}

/// The engine's state, its maps as lists (so a slice starts at an index);
/// done where the engine's call ran, not on the loop's thread.
impl From<SessionState> for NativeState {
    fn from(s: SessionState) -> Self {
        Self {
            head: s.head,
            slot: s.slot,
            runs: s.runs.into_iter().collect(),
            tools: s.tools.into_iter().collect(),
            messages: s.transcript.messages,
            reasoning: s.transcript.reasoning,
            workflows: s.workflows.into_iter().collect(),
            documents: s.documents,
        }
    }
}

impl Drop for NativeState {
    fn drop(&mut self) {
        // Freeing a long session's lists takes milliseconds (a 100k-message
        // transcript about 8): that is done on the runtime's blocking pool,
        // not on the loop's thread, which drops this object.
        if self.messages.len() + self.reasoning.len() + self.runs.len() + self.tools.len()
            <= SLICE_ITEMS
        {
            return;
        }
        free_off_loop((
            std::mem::take(&mut self.runs),
            std::mem::take(&mut self.tools),
            std::mem::take(&mut self.messages),
            std::mem::take(&mut self.reasoning),
        ));
    }
}

/// Frees `lists` on the runtime's blocking pool, not on the loop's thread
/// that drops their Python object.
fn free_off_loop<T: Send + 'static>(lists: T) {
    if let Ok(rt) = crate::bridge::runtime() {
        rt.spawn_blocking(move || drop(lists));
    }
}

/// A slice's tuples, and where the next slice starts (`None` after the last).
type Slice<'py> = PyResult<(Bound<'py, PyList>, Option<usize>)>;

/// The slice of `items` from `at`: its tuples, and where the next slice
/// starts (`None` after the last). `text` is the bytes an item copies.
fn slice<'py, T>(
    py: Python<'py>,
    items: &[T],
    at: usize,
    text: impl Fn(&T) -> usize,
    tuple: impl Fn(&T) -> PyResult<Bound<'py, PyAny>>,
) -> Slice<'py> {
    let out = PyList::empty(py);
    let mut bytes = 0;
    let mut i = at;
    while let Some(item) = items.get(i) {
        if i - at == SLICE_ITEMS || bytes >= SLICE_BYTES {
            return Ok((out, Some(i)));
        }
        bytes += text(item);
        out.append(tuple(item)?)?;
        i += 1;
    }
    Ok((out, None))
}

#[pymethods]
impl NativeState {
    /// The session's `sessionSequence`.
    #[getter]
    fn head(&self) -> u64 {
        self.head
    }

    /// The session slot as `(kind, id)`, or `None`.
    #[getter]
    fn slot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::protocol::slot(self.slot.as_ref()).into_pyobject(py)
    }

    /// `{key: (revision, value)}`.
    fn documents<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let documents = PyDict::new(py);
        for (key, d) in &self.documents.documents {
            documents.set_item(key, (d.revision, conv::to_py(py, &d.value)?))?;
        }
        Ok(documents)
    }

    /// Runs from `at`, as `(id, root, parent, workflow, client executor,
    /// state, stop requested, open pause, open interrupt, open children,
    /// open tool calls)`.
    fn runs<'py>(&self, py: Python<'py>, at: usize) -> Slice<'py> {
        slice(
            py,
            &self.runs,
            at,
            |_| 0,
            |(id, r)| {
                (
                    id.as_str(),
                    r.root.as_str(),
                    r.parent.as_deref(),
                    r.workflow.as_deref(),
                    r.client_executor.as_deref(),
                    run_state(r.state),
                    r.stop_requested,
                    r.open_pause.as_deref(),
                    opt_interrupt(py, r.open_interrupt.as_ref())?,
                    r.open_children.iter().cloned().collect::<Vec<_>>(),
                    r.open_tools.iter().cloned().collect::<Vec<_>>(),
                )
                    .into_pyobject(py)
                    .map(Bound::into_any)
            },
        )
    }

    /// Tool calls from `at`, as `(id, run, state)`.
    fn tools<'py>(&self, py: Python<'py>, at: usize) -> Slice<'py> {
        slice(
            py,
            &self.tools,
            at,
            |_| 0,
            |(id, t)| {
                let state = match t.state {
                    ToolCallState::Open => "open",
                    ToolCallState::Finished => "finished",
                };
                (id.as_str(), t.run.as_str(), state)
                    .into_pyobject(py)
                    .map(Bound::into_any)
            },
        )
    }

    /// Transcript messages from `at`, as `(id, role, scope, content,
    /// completed, run, redacted, shown)`.
    fn messages<'py>(&self, py: Python<'py>, at: usize) -> Slice<'py> {
        let text = |m: &Message| m.content.len();
        slice(py, &self.messages, at, text, |m| {
            let shown = match &m.redacted {
                None => Some(m.content.as_str()),
                Some(r) => r.as_deref(),
            };
            (
                m.message_id.as_str(),
                m.role.as_str(),
                m.scope.as_str(),
                m.content.as_str(),
                m.completed,
                m.run_id.as_deref(),
                m.redacted.is_some(),
                shown,
            )
                .into_pyobject(py)
                .map(Bound::into_any)
        })
    }

    /// Reasoning streams from `at`, as `(id, message, content, completed)`.
    fn reasoning<'py>(&self, py: Python<'py>, at: usize) -> Slice<'py> {
        let text = |r: &Reasoning| r.content.len();
        slice(py, &self.reasoning, at, text, |r| {
            (
                r.reasoning_id.as_str(),
                r.message_id.as_deref(),
                r.content.as_str(),
                r.completed,
            )
                .into_pyobject(py)
                .map(Bound::into_any)
        })
    }

    /// Workflows from `at`, as `(id, terminal, open runs, active top run,
    /// open pause, open interrupt)`.
    fn workflows<'py>(&self, py: Python<'py>, at: usize) -> Slice<'py> {
        slice(
            py,
            &self.workflows,
            at,
            |_| 0,
            |(id, w)| {
                (
                    id.as_str(),
                    w.terminal,
                    w.open_runs.iter().cloned().collect::<Vec<_>>(),
                    w.active_top_run.as_deref(),
                    w.open_pause.as_deref(),
                    opt_interrupt(py, w.open_interrupt.as_ref())?,
                )
                    .into_pyobject(py)
                    .map(Bound::into_any)
            },
        )
    }
}

/// The primary transcript view of a session (the engine's
/// `SessionState::transcript_view`), read in slices as [`NativeState`].
#[pyclass(frozen)]
pub struct NativeTranscript(Vec<TranscriptMessage>);

impl From<Vec<TranscriptMessage>> for NativeTranscript {
    fn from(v: Vec<TranscriptMessage>) -> Self {
        Self(v)
    }
}

impl Drop for NativeTranscript {
    fn drop(&mut self) {
        if self.0.len() > SLICE_ITEMS {
            free_off_loop(std::mem::take(&mut self.0));
        }
    }
}

#[pymethods]
impl NativeTranscript {
    /// Entries from `at`, as `(message id, role, text, completed, run,
    /// reasoning)`.
    fn messages<'py>(&self, py: Python<'py>, at: usize) -> Slice<'py> {
        let text = |m: &TranscriptMessage| {
            m.text.len() + m.reasoning.iter().map(String::len).sum::<usize>()
        };
        slice(py, &self.0, at, text, |m| {
            (
                m.message_id.as_str(),
                m.role.as_str(),
                m.text.as_str(),
                m.completed,
                m.run_id.as_deref(),
                m.reasoning.clone(),
            )
                .into_pyobject(py)
                .map(Bound::into_any)
        })
    }
}
