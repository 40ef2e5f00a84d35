//! What a Python host injects into the engine: a fixed clock, an id
//! source and a declarative authorizer.
//!
//! The authorizer is declarative on purpose. The engine asks it
//! synchronously, on its own threads, before every command and read; a
//! Python callable there would have to take the GIL on an engine thread
//! (stalling the other sessions of that thread behind the interpreter, and
//! aborting the process if it runs while the interpreter finalizes). Rules
//! are data, evaluated in Rust, so that never happens.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use narad_engine::{Action, Authorizer, Clock, ManualClock, Principal};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A clock that moves only when told (tests, replays).
#[pyclass(frozen, module = "narad._native")]
pub struct NativeClock {
    pub clock: Arc<ManualClock>,
}

#[pymethods]
impl NativeClock {
    #[new]
    fn new(unix_seconds: f64) -> PyResult<Self> {
        let start = Duration::try_from_secs_f64(unix_seconds)
            .map_err(|_| PyValueError::new_err("the clock starts at a POSIX time"))?;
        let clock = ManualClock::at_unix(0);
        clock.advance(start);
        Ok(Self {
            clock: Arc::new(clock),
        })
    }

    /// Moves the clock forward by `seconds`.
    fn advance(&self, seconds: f64) -> PyResult<()> {
        let d = Duration::try_from_secs_f64(seconds)
            .map_err(|_| PyValueError::new_err("advance by a non-negative number of seconds"))?;
        self.clock.advance(d);
        Ok(())
    }

    /// Now, in seconds since the Unix epoch.
    fn now(&self) -> f64 {
        self.clock
            .now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// One allow rule: who, what, and on which sessions, event types and
/// workspaces (an empty list matches any).
#[derive(Debug, Clone)]
struct Rule {
    principals: Vec<String>,
    actions: Vec<String>,
    sessions: Vec<String>,
    event_types: Vec<String>,
    workspaces: Vec<String>,
}

fn any_or(list: &[String], value: &str) -> bool {
    list.is_empty() || list.iter().any(|x| x == "*" || x == value)
}

fn prefix_any(list: &[String], value: &str) -> bool {
    list.is_empty()
        || list.iter().any(|x| match x.strip_suffix('*') {
            Some(p) => value.starts_with(p),
            None => x == value,
        })
}

impl Rule {
    fn allows(&self, p: &Principal, a: Action<'_>) -> bool {
        if !any_or(&self.principals, &p.0) {
            return false;
        }
        let (name, session, event_type, workspace) = match a {
            Action::CreateSession => ("create_session", None, None, None),
            Action::Write {
                session_id,
                event_type,
            } => ("write", Some(session_id), Some(event_type), None),
            Action::ClientLease { control, .. } => ("client_lease", None, Some(control), None),
            Action::Read { session_id } => ("read", Some(session_id), None, None),
            Action::ReadWorkspace { workspace_id } => {
                ("read_workspace", None, None, Some(workspace_id))
            }
        };
        any_or(&self.actions, name)
            && session.is_none_or(|s| any_or(&self.sessions, s))
            && event_type.is_none_or(|t| prefix_any(&self.event_types, t))
            && workspace.is_none_or(|w| any_or(&self.workspaces, w))
    }
}

/// Allow rules evaluated in Rust; what no rule allows is refused
/// (`not_authorized`).
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
    debug: Vec<String>,
}

impl Authorizer for Rules {
    fn allows(&self, principal: &Principal, action: Action<'_>) -> bool {
        self.rules.iter().any(|r| r.allows(principal, action))
    }

    fn may_debug(&self, principal: &Principal) -> bool {
        self.debug.iter().any(|d| d == "*" || *d == principal.0)
    }
}

/// The rules as the Python side passes them: a list of
/// `(principals, actions, sessions, event_types, workspaces)` and the
/// principals that may debug.
#[pyclass(frozen, module = "narad._native")]
pub struct NativeRules {
    pub rules: Arc<Rules>,
}

type RuleTuple = (
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
);

const ACTIONS: [&str; 5] = [
    "create_session",
    "write",
    "client_lease",
    "read",
    "read_workspace",
];

#[pymethods]
impl NativeRules {
    #[new]
    fn new(rules: Vec<RuleTuple>, debug: Vec<String>) -> PyResult<Self> {
        let mut out = Vec::with_capacity(rules.len());
        for (principals, actions, sessions, event_types, workspaces) in rules {
            if let Some(bad) = actions.iter().find(|a| !ACTIONS.contains(&a.as_str())) {
                return Err(PyValueError::new_err(format!(
                    "unknown action {bad:?}; one of {ACTIONS:?}"
                )));
            }
            out.push(Rule {
                principals,
                actions,
                sessions,
                event_types,
                workspaces,
            });
        }
        Ok(Self {
            rules: Arc::new(Rules { rules: out, debug }),
        })
    }
}

/// A POSIX time in seconds as a `SystemTime`: a NaN, a negative time or
/// one past what a `SystemTime` holds is refused.
pub fn posix(secs: f64) -> Result<SystemTime, narad_engine::EngineError> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| UNIX_EPOCH.checked_add(d))
        .ok_or_else(|| {
            narad_engine::EngineError::InvalidCommand("a time must be a POSIX time".into())
        })
}

/// A `SystemTime` as POSIX seconds.
pub fn secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
