//! Hydrate records (§9.3, §9.7): message and graph snapshots and graph deltas.

use super::fields::{nest, Fields};
use super::profile::delta_revisions;
use crate::error::{ValidationCode as C, ValidationError as E};

pub(super) fn check_hydrate(ty: &str, f: &Fields<'_>) -> Result<(), E> {
    f.req_ts("timestamp")?;
    for k in ["eventId", "sessionSequence", "workflowSequence", "sequence"] {
        f.forbid(k, "hydrate records carry no eventId or authority sequence")?;
    }
    f.req_str("sessionId")?;
    if ty == "messages.snapshot" {
        f.forbid("revision", "messages.snapshot carries no revision")?;
        f.req_str("snapshotId")?;
        f.req_uint("coversThroughSessionSequence", 0)?;
        f.req_array("messages")?;
        return Ok(());
    }
    f.req_str("graphSchemaVersion")?;
    match f.req_enum("scope", &["run", "workflow"])? {
        "run" => {
            f.req_str("rootRunId")?;
            source_cursor(f, "sourceRunCursor", "rootRunId")?;
            f.forbid(
                "workflowId",
                "a run-scope graph record carries no workflowId",
            )?;
        }
        _ => {
            f.req_str("workflowId")?;
            source_cursor(f, "sourceWorkflowCursor", "workflowId")?;
        }
    }
    if ty == "graph.snapshot" {
        f.req_uint("revision", 1)?;
        f.req_str("rootNodeId")?;
        f.req_array("nodes")?;
        f.req_array("edges")?;
    } else {
        delta_revisions(f)?;
        f.req_patch("patch")?;
    }
    Ok(())
}

fn source_cursor(f: &Fields<'_>, key: &str, id_key: &str) -> Result<(), E> {
    let c = f.req(key)?;
    let c = c
        .as_object()
        .ok_or_else(|| E::at(C::WrongType, key, format!("{key} must be an object")))?;
    let cf = Fields(c);
    cf.req_uint("sequence", 1).map_err(|e| nest(e, key))?;
    cf.opt_str(id_key).map_err(|e| nest(e, key))?;
    if let Some(extra) = c.keys().find(|k| *k != "sequence" && *k != id_key) {
        return Err(E::new(
            C::ForbiddenField,
            Some(format!("/{key}/{extra}")),
            format!("{key} allows only sequence and {id_key}"),
        ));
    }
    Ok(())
}
