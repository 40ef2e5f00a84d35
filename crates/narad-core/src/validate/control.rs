//! Control messages (§11): heartbeats, client attachment and client tool execution.

use super::fields::Fields;
use crate::error::ValidationError as E;

pub(super) fn check_control(ty: &str, f: &Fields<'_>) -> Result<(), E> {
    for k in [
        "eventId",
        "sessionSequence",
        "workflowSequence",
        "sequence",
        "revision",
    ] {
        f.forbid(k, "control messages carry no eventId, sequence or revision")?;
    }
    if ty == "server.heartbeat" {
        return f.opt_ts("serverTime");
    }
    f.req_str("clientExecutorId")?;
    f.req_str("leaseId")?;
    match ty {
        "client.attached" => {
            f.req_uint("heartbeatIntervalMs", 1)?;
            f.req_ts("leaseExpiresAt")
        }
        "client.tool.execute" => {
            f.req_str("executionToken")?;
            f.req_ts("executionTokenExpiresAt")?;
            f.req_str("toolCallId")?;
            f.req_str("toolName")?;
            f.req_present("args")
        }
        "client.tool.finish" => {
            f.req_str("executionToken")?;
            f.req_str("toolCallId")?;
            f.req_enum("outcome", &["success", "error", "cancelled"])?;
            f.req_present("response")
        }
        _ => Ok(()),
    }
}
