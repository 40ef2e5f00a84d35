//! Core authority records (§7): run lifecycle, interrupts and tool calls.

use super::envelope::{run_tree_fields, session_fields, workflow_fields};
use super::fields::{nest, Fields};
use crate::error::{ValidationCode as C, ValidationError as E};
use crate::registry::RecordClass;

pub(super) fn check_core_authority(ty: &str, f: &Fields<'_>) -> Result<RecordClass, E> {
    session_fields(f)?;
    let workflow_scope = matches!(ty, "interrupt.requested" | "interrupt.resolved")
        && f.opt_enum("scope", &["run", "workflow"])? == Some("workflow");
    let class = if workflow_scope {
        // §7.6: workflow-scope interrupts are workflow authority and MUST NOT
        // carry run-tree fields.
        workflow_fields(f)?;
        for k in ["rootRunId", "runId", "sequence"] {
            f.forbid(k, "a workflow-scope interrupt carries no run-tree fields")?;
        }
        RecordClass::WorkflowAuthority
    } else {
        run_tree_fields(f)?;
        f.opt_str("parentRunId")?;
        f.opt_str("parentToolCallId")?;
        RecordClass::RunTreeAuthority
    };
    match ty {
        "run.started" => f.opt_str("clientExecutorId").map(drop),
        "run.paused" => {
            f.req_str("waitId")?;
            f.req_str("reason")?;
            f.req_enum("resumeMode", &["automatic", "command"])?;
            f.opt_str("interruptId")?;
            f.opt_ts("retryAt")?;
            f.opt_text("message").map(drop)
        }
        "run.resumed" => f.req_str("waitId").map(drop),
        "run.stop.requested" => f.req_str("targetRunId").map(drop),
        "run.finished" => {
            f.opt_str_array("artifactIds", 0, true)?;
            usage(f)
        }
        "run.error" => {
            f.req_str("code")?;
            f.req_text("message")?;
            usage(f)
        }
        "run.cancelled" => {
            f.opt_text("code")?;
            f.opt_text("message")?;
            usage(f)
        }
        "interrupt.requested" => {
            f.req_str("interruptId")?;
            f.req_str("waitId")?;
            f.req_str("kind")?;
            f.req_str_array("actions", 1, true)?;
            f.opt_ts("expiresAt")?;
            f.opt_text("title")?;
            f.opt_text("message").map(drop)
        }
        "interrupt.resolved" => {
            f.req_str("interruptId")?;
            f.req_str("waitId")?;
            f.req_str("decision")?;
            f.opt_text("reason")?;
            members(f)
        }
        "tool.call.started" => {
            f.req_str("toolCallId")?;
            f.req_str("toolName")?;
            f.req_enum("executor", &["backend", "client"])?;
            f.req_present("args")
        }
        "tool.call.finished" => {
            f.req_str("toolCallId")?;
            f.req_enum("outcome", &["success", "error", "cancelled"])?;
            f.req_present("response")?;
            f.opt_text("code")?;
            f.opt_text("message").map(drop)
        }
        _ => Err(E::at(C::UnknownType, "type", "not a core authority type")),
    }?;
    Ok(class)
}

fn usage(f: &Fields<'_>) -> Result<(), E> {
    let Some(u) = f.0.get("usage") else {
        return Ok(());
    };
    let u = u
        .as_object()
        .ok_or_else(|| E::at(C::WrongType, "usage", "usage must be an object"))?;
    let uf = Fields(u);
    for k in ["promptTokens", "completionTokens", "totalTokens"] {
        uf.opt_uint(k, 0).map_err(|e| nest(e, "usage"))?;
    }
    Ok(())
}

fn members(f: &Fields<'_>) -> Result<(), E> {
    let Some(m) = f.0.get("members") else {
        return Ok(());
    };
    let items = m
        .as_array()
        .ok_or_else(|| E::at(C::WrongType, "members", "members must be an array"))?;
    for (i, item) in items.iter().enumerate() {
        let obj = item.as_object().ok_or_else(|| {
            E::at(
                C::WrongType,
                &format!("members/{i}"),
                "a member must be an object",
            )
        })?;
        let mf = Fields(obj);
        let at = format!("members/{i}");
        mf.req_str("requestId").map_err(|e| nest(e, &at))?;
        mf.req_str("decision").map_err(|e| nest(e, &at))?;
        for k in ["toolCallId", "toolName", "toolType"] {
            mf.opt_str(k).map_err(|e| nest(e, &at))?;
        }
    }
    Ok(())
}
