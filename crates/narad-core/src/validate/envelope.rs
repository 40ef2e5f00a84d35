//! Authority envelope field groups (§4, §5.1) and the envelope of an inactive profile's event (§2.1).

use super::fields::Fields;
use crate::error::ValidationError as E;
use serde_json::{Map, Value};

pub(super) fn session_fields(f: &Fields<'_>) -> Result<(), E> {
    f.req_str("sessionId")?;
    f.req_uint("sessionSequence", 1)?;
    f.opt_str("workflowId")?;
    f.opt_uint("workflowSequence", 1)?;
    f.depends("workflowId", "workflowSequence")?;
    f.depends("workflowSequence", "workflowId")
}

pub(super) fn run_tree_fields(f: &Fields<'_>) -> Result<(), E> {
    f.req_str("rootRunId")?;
    f.req_str("runId")?;
    f.req_uint("sequence", 1)?;
    Ok(())
}

pub(super) fn workflow_fields(f: &Fields<'_>) -> Result<(), E> {
    f.req_present("workflowId")?;
    f.req_present("workflowSequence")
}

/// Profile authority envelope: session fields plus optional run-tree fields
/// that depend on each other, plus optional `nodeId`.
pub(super) fn profile_session_fields(f: &Fields<'_>) -> Result<(), E> {
    session_fields(f)?;
    f.opt_str("rootRunId")?;
    f.opt_str("runId")?;
    f.opt_uint("sequence", 1)?;
    f.opt_str("nodeId")?;
    f.depends("runId", "rootRunId")?;
    f.depends("runId", "sequence")?;
    f.depends("rootRunId", "runId")?;
    f.depends("rootRunId", "sequence")?;
    f.depends("sequence", "rootRunId")?;
    f.depends("sequence", "runId")
}

/// The envelope of an authority event of an inactive profile (§2.1): its
/// semantics are ignored, but its identity and every ordering cursor it
/// carries still count, so they must be well formed.
pub(crate) fn check_ignored_envelope(map: &Map<String, Value>) -> Result<(), E> {
    let f = Fields(map);
    f.req_str("eventId")?;
    f.req_ts("timestamp")?;
    profile_session_fields(&f)?;
    f.opt_str("parentRunId")?;
    f.opt_str("parentToolCallId").map(drop)
}
