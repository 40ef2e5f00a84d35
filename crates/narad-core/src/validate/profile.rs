//! Profile authority records (§6, §9): workflows, messages, state, views, progress, extensions.

use super::envelope::{profile_session_fields, workflow_fields};
use super::fields::Fields;
use super::syntax::is_extension_name;
use crate::error::{ValidationCode as C, ValidationError as E};
use crate::registry::RecordClass;
use serde_json::Value;

/// Messages, state and UI documents: the scope selects the ordering fields
/// that must be present.
fn scoped(f: &Fields<'_>, key: &str) -> Result<RecordClass, E> {
    match f.req_enum(key, &["session", "workflow", "run"])? {
        "workflow" => {
            workflow_fields(f)?;
            Ok(RecordClass::WorkflowAuthority)
        }
        "run" => {
            for k in ["rootRunId", "runId", "sequence"] {
                f.req_present(k)?;
            }
            Ok(RecordClass::RunTreeAuthority)
        }
        _ => Ok(RecordClass::SessionAuthority),
    }
}

pub(super) fn check_profile_authority(ty: &str, f: &Fields<'_>) -> Result<RecordClass, E> {
    profile_session_fields(f)?;
    let session = RecordClass::SessionAuthority;
    let workflow = || workflow_fields(f).map(|()| RecordClass::WorkflowAuthority);
    let run_tree = || {
        for k in ["rootRunId", "runId", "sequence"] {
            f.req_present(k)?;
        }
        Ok::<_, E>(RecordClass::RunTreeAuthority)
    };
    match ty {
        "workflow.started" | "workflow.finished" | "workflow.error" | "workflow.cancelled" => {
            let class = workflow()?;
            f.opt_str("defaultClientExecutorId")?;
            f.opt_text("code")?;
            f.opt_text("message")?;
            Ok(class)
        }
        "workflow.paused" => {
            let class = workflow()?;
            f.req_str("waitId")?;
            f.req_str("interruptId")?;
            f.opt_str("reason")?;
            f.opt_enum("resumeMode", &["automatic", "command"])?;
            f.opt_text("message")?;
            Ok(class)
        }
        "workflow.resumed" => {
            let class = workflow()?;
            f.req_str("waitId")?;
            Ok(class)
        }
        "workflow.step.started" => {
            let class = workflow()?;
            f.req_present("nodeId")?;
            Ok(class)
        }
        "workflow.edge.taken" => {
            let class = workflow()?;
            f.req_str("from")?;
            f.req_str("to")?;
            f.opt_uint("caseIndex", 0)?;
            f.opt_text("pointer")?;
            f.opt_str("op")?;
            Ok(class)
        }
        "message.user.recorded" => {
            let class = scoped(f, "messageScope")?;
            f.req_str("messageId")?;
            f.req_text("content")?;
            f.opt_str_array("attachmentIds", 0, false)?;
            Ok(class)
        }
        "message.text.started" => {
            let class = scoped(f, "messageScope")?;
            f.req_str("messageId")?;
            f.req_enum("role", &["assistant", "system"])?;
            Ok(class)
        }
        "message.text.delta" => {
            f.req_str("messageId")?;
            f.req_text("delta")?;
            Ok(session)
        }
        "message.text.completed" => f.req_str("messageId").map(|_| session),
        "message.redacted" => {
            f.req_str("messageId")?;
            f.req_str("reason")?;
            match f.0.get("displayReplacement") {
                None => Err(E::at(
                    C::MissingField,
                    "displayReplacement",
                    "displayReplacement is required (it may be null)",
                )),
                Some(Value::String(_) | Value::Null) => Ok(session),
                Some(_) => Err(E::at(
                    C::WrongType,
                    "displayReplacement",
                    "displayReplacement must be a string or null",
                )),
            }
        }
        "reasoning.started" | "reasoning.delta" | "reasoning.completed" => {
            f.req_str("reasoningId")?;
            f.opt_str("messageId")?;
            if ty == "reasoning.delta" {
                f.req_text("delta")?;
            }
            Ok(session)
        }
        "attachment.added" | "attachment.ready" | "attachment.failed" | "attachment.removed" => {
            f.req_str("attachmentId")?;
            f.opt_text("code")?;
            f.opt_text("message")?;
            Ok(session)
        }
        "artifact.added" | "artifact.ready" | "artifact.failed" => {
            f.req_str("artifactId")?;
            f.opt_text("code")?;
            f.opt_text("message")?;
            Ok(session)
        }
        "state.snapshot" | "ui.state.snapshot" => {
            let class = scoped(f, "scope")?;
            f.req_uint("revision", 1)?;
            f.req_present("state")?;
            Ok(class)
        }
        "state.delta" | "ui.state.delta" => {
            let class = scoped(f, "scope")?;
            delta_revisions(f)?;
            f.req_patch("patch")?;
            Ok(class)
        }
        "state.compacted" => {
            let class = scoped(f, "scope")?;
            f.req_uint("coversThroughSessionSequence", 0)?;
            f.req_uint("snapshotRevision", 1)?;
            Ok(class)
        }
        "view.opened" | "view.updated" | "view.closed" => {
            f.req_str("viewId")?;
            let op = f.opt_enum("operation", &["replace", "patch"])?;
            if f.0.contains_key("patch") {
                f.req_patch("patch")?;
            }
            if ty == "view.updated" && op.is_none() {
                return Err(E::at(
                    C::MissingField,
                    "operation",
                    "view.updated requires operation",
                ));
            }
            Ok(session)
        }
        "progress.recorded" => {
            let class = run_tree()?;
            f.req_str("progressId")?;
            f.req_str("category")?;
            f.req_str("label")?;
            f.opt_text("detail")?;
            f.req_enum("status", &["active", "completed", "failed", "cancelled"])?;
            f.req_enum("privacy", &["public", "internal", "sensitive"])?;
            Ok(class)
        }
        "session.custom" | "workflow.custom" | "run.custom" | "node.custom" | "session.raw"
        | "workflow.raw" | "run.raw" | "node.raw" => {
            if ty.ends_with(".custom") {
                let name = f.req_text("name")?;
                if !is_extension_name(name) {
                    return Err(E::at(
                        C::InvalidValue,
                        "name",
                        "extension name must be namespaced dotted lowercase",
                    ));
                }
                f.req_present("value")?;
            } else {
                f.req_str("contentType")?;
                f.req_text("payload")?;
            }
            match ty.split('.').next() {
                Some("workflow") => workflow(),
                Some("run") => run_tree(),
                Some("node") => {
                    let class = workflow()?;
                    f.req_present("nodeId")?;
                    Ok(class)
                }
                _ => Ok(session),
            }
        }
        "trace.span.started"
        | "trace.span.completed"
        | "trace.event"
        | "debug.log"
        | "debug.snapshot" => Ok(session),
        _ => Err(E::at(
            C::UnknownType,
            "type",
            "not a profile authority type",
        )),
    }
}

/// §9.6: `revision` MUST equal `baseRevision + 1` (graph deltas too, §9.7).
pub(super) fn delta_revisions(f: &Fields<'_>) -> Result<(), E> {
    let base = f.req_uint("baseRevision", 0)?;
    let rev = f.req_uint("revision", 1)?;
    if base.checked_add(1) != Some(rev) {
        return Err(E::at(
            C::RevisionMismatch,
            "revision",
            "revision must equal baseRevision + 1",
        ));
    }
    Ok(())
}
