//! Engine errors as Python exceptions: one class per family (defined in
//! `narad/_errors.py`), each with the stable `.code` and the spec `.section`.

use narad_engine::EngineError;
use pyo3::prelude::*;

/// The exception family of an error (a class name in `narad._errors`).
fn family(e: &EngineError) -> &'static str {
    match e {
        EngineError::Rejected { code, .. } if *code == "session_slot_busy" => "SessionBusyError",
        EngineError::Rejected { .. } => "ProtocolError",
        EngineError::NotAuthorized => "NotAuthorizedError",
        EngineError::UnknownSession { .. }
        | EngineError::UnknownRun { .. }
        | EngineError::UnknownToolCall { .. }
        | EngineError::UnknownInterrupt { .. } => "NotFoundError",
        EngineError::SessionExists { .. }
        | EngineError::RevisionConflict { .. }
        | EngineError::InterruptExpired
        | EngineError::AlreadyResolved { .. }
        | EngineError::IdempotencyConflict { .. }
        | EngineError::OpenWork { .. }
        | EngineError::SessionArchived
        | EngineError::NothingRunning
        | EngineError::Contended => "ConflictError",
        EngineError::ProfileInactive { .. }
        | EngineError::InvalidCommand(_)
        | EngineError::ZeroLimit => "InvalidCommandError",
        EngineError::Client { .. } => "ClientExecutionError",
        e if e.code() == "session_deleted" => "NotFoundError",
        _ => "StoreError",
    }
}

/// The spec section an error cites, where it has one.
fn section(e: &EngineError) -> Option<&'static str> {
    match e {
        EngineError::Rejected { section, .. } => Some(section),
        EngineError::Client { .. } => Some("11"),
        EngineError::RevisionConflict { .. } | EngineError::UnknownInterrupt { .. } => Some("2.2"),
        EngineError::InterruptExpired => Some("7.6"),
        _ => None,
    }
}

/// The sanitized message, without the code (which is `.code`).
fn message(e: &EngineError) -> String {
    match e {
        EngineError::Rejected { message, .. } | EngineError::Client { message, .. } => {
            message.clone()
        }
        EngineError::InvalidCommand(m) => m.clone(),
        other => other.to_string(),
    }
}

/// The Python exception of an engine error.
pub fn to_py(e: EngineError) -> PyErr {
    exception(family(&e), e.code(), section(&e), message(&e))
}

/// The Python exception of a store that could not be opened: a
/// `StoreError` with the open's own code (`locked`, `not_a_store`,
/// `invalid_url`, `not_found`, or the store's).
pub fn open_to_py(e: &narad_stores::OpenError) -> PyErr {
    exception("StoreError", e.code(), None, e.to_string())
}

fn exception(family: &str, code: &str, section: Option<&str>, message: String) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("narad._errors")
            .and_then(|m| m.getattr("_from_native"))
            .and_then(|f| f.call1((family, code, section, message)));
        match made {
            Ok(exc) => PyErr::from_value(exc),
            Err(err) => err,
        }
    })
}
