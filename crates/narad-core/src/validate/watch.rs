//! Watch records (§8): revisions of a session, run, workflow, node or workspace, and their cursor.

use super::fields::Fields;
use crate::error::{ValidationCode as C, ValidationError as E};

pub(super) fn check_watch(ty: &str, f: &Fields<'_>) -> Result<(), E> {
    f.req_uint("revision", 1)?;
    match ty {
        "session.revision" => f.req_str("sessionId").map(drop),
        "run.revision" => {
            f.req_str("sessionId")?;
            f.req_str("rootRunId")?;
            f.req_str("runId").map(drop)
        }
        "workflow.revision" | "node.revision" => {
            f.req_str("sessionId")?;
            f.req_str("workflowId")?;
            f.opt_str("nodeId")?;
            if ty == "node.revision" {
                f.req_present("nodeId")?;
            }
            Ok(())
        }
        _ => {
            f.req_str("workspaceId")?;
            f.opt_str("sessionId")?;
            if ty != "workspace.revision" {
                f.req_present("sessionId")?;
            }
            Ok(())
        }
    }?;
    cursor(f)
}

fn cursor(f: &Fields<'_>) -> Result<(), E> {
    let Some(c) = f.0.get("cursor") else {
        return Ok(());
    };
    let bad = |msg: &str| E::at(C::InvalidCursor, "cursor", msg.to_owned());
    let c = c
        .as_object()
        .ok_or_else(|| bad("cursor must be an object"))?;
    let cf = Fields(c);
    let kind = cf
        .req_enum("kind", &["session", "workflow", "run"])
        .map_err(|_| bad("cursor kind must be session, workflow or run"))?;
    let ok = match kind {
        "session" => cf.req_uint("sessionSequence", 1).is_ok() && cf.opt_str("sessionId").is_ok(),
        "workflow" => {
            cf.req_str("workflowId").is_ok() && cf.req_uint("workflowSequence", 1).is_ok()
        }
        _ => cf.req_str("rootRunId").is_ok() && cf.req_uint("sequence", 1).is_ok(),
    };
    if ok {
        Ok(())
    } else {
        Err(bad(
            "cursor must carry the id and positive sequence of its kind",
        ))
    }
}
