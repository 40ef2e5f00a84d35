//! The engine's typed [`SessionState`] as the plain tuples
//! `narad._state` turns into dataclasses (no JSON text in between).

use narad_core::checker::{OpenInterrupt, RunState};
use narad_engine::{SessionState, ToolCallState};
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

/// A typed state returned to Python: `(head, runs, tools, messages,
/// reasoning, workflows, slot, documents)`, each a list of field tuples in
/// the dataclasses' order.
pub struct State(pub SessionState);

impl<'py> IntoPyObject<'py> for State {
    type Target = PyTuple;
    type Output = Bound<'py, PyTuple>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        let s = self.0;
        let runs = PyList::empty(py);
        for (id, r) in &s.runs {
            runs.append((
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
            ))?;
        }
        let tools = PyList::empty(py);
        for (id, t) in &s.tools {
            let state = match t.state {
                ToolCallState::Open => "open",
                ToolCallState::Finished => "finished",
            };
            tools.append((id.as_str(), t.run.as_str(), state))?;
        }
        let messages = PyList::empty(py);
        for m in &s.transcript.messages {
            let shown = match &m.redacted {
                None => Some(m.content.as_str()),
                Some(r) => r.as_deref(),
            };
            messages.append((
                m.message_id.as_str(),
                m.role.as_str(),
                m.scope.as_str(),
                m.content.as_str(),
                m.completed,
                m.run_id.as_deref(),
                m.redacted.is_some(),
                shown,
            ))?;
        }
        let reasoning = PyList::empty(py);
        for r in &s.transcript.reasoning {
            reasoning.append((
                r.reasoning_id.as_str(),
                r.message_id.as_deref(),
                r.content.as_str(),
                r.completed,
            ))?;
        }
        let workflows = PyList::empty(py);
        for (id, w) in &s.workflows {
            workflows.append((
                id.as_str(),
                w.terminal,
                w.open_runs.iter().cloned().collect::<Vec<_>>(),
                w.active_top_run.as_deref(),
                w.open_pause.as_deref(),
                opt_interrupt(py, w.open_interrupt.as_ref())?,
            ))?;
        }
        let documents = PyDict::new(py);
        for (key, d) in &s.documents.documents {
            documents.set_item(key, (d.revision, conv::to_py(py, &d.value)?))?;
        }
        (
            s.head,
            runs,
            tools,
            messages,
            reasoning,
            workflows,
            crate::protocol::slot(s.slot.as_ref()),
            documents,
        )
            .into_pyobject(py)
    }
}
