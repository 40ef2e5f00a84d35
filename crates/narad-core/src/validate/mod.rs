//! Structural validation of single records (§5, §7–§11 and the schemas).
//!
//! The checks mirror the published JSON Schemas field for field; the few
//! rules the prose states and the schemas do not are listed, with their
//! reasons, in `conformance/NOTES.md`. Lifecycle and ordering rules that need
//! more than one record belong to the reducer, not here.

use crate::error::{ValidationCode as C, ValidationError as E};
use crate::limits::Limits;
use crate::registry::{self, Profile, ProfileSet, RecordClass, TypeInfo};
use crate::timestamp::is_utc_timestamp;
use serde_json::{Map, Value};

/// The only protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "narad/v1";

/// What a [`Validator`] accepts: limits and active profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ValidatorConfig {
    /// Bounds against hostile input.
    pub limits: Limits,
    /// Negotiated profiles; events of other profiles are [`Verdict::Ignorable`].
    pub profiles: ProfileSet,
}

/// The outcome of validating one record that is not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Structurally valid; `class` is the record's effective class.
    Valid {
        /// Registry entry of the type.
        info: &'static TypeInfo,
        /// Effective class (refined by `scope` where the type has one).
        class: RecordClass,
    },
    /// The record belongs to a profile that is not active: ignore it.
    Ignorable {
        /// The inactive profile.
        profile: Profile,
    },
}

/// Validates records against Narad v1's structural rules.
///
/// ```
/// use narad_core::{Validator, Verdict};
/// let v = Validator::default();
/// let event = serde_json::json!({
///     "type": "run.started", "protocolVersion": "narad/v1", "eventId": "e1",
///     "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s1", "sessionSequence": 1,
///     "rootRunId": "r1", "runId": "r1", "sequence": 1
/// });
/// assert!(matches!(v.check(&event), Ok(Verdict::Valid { .. })));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Validator {
    config: ValidatorConfig,
}

impl Validator {
    /// A validator with the given configuration.
    pub const fn new(config: ValidatorConfig) -> Self {
        Self { config }
    }

    /// The configuration.
    pub const fn config(&self) -> &ValidatorConfig {
        &self.config
    }

    /// Validates one parsed JSON value. Limits apply too.
    pub fn check(&self, value: &Value) -> Result<Verdict, E> {
        self.config.limits.check_value(value)?;
        let map = value
            .as_object()
            .ok_or_else(|| E::new(C::NotAnObject, None, "a record must be a JSON object"))?;
        self.check_object(map)
    }

    /// Validates one JSON object, limits excepted (see [`Limits::check_value`]).
    pub fn check_object(&self, map: &Map<String, Value>) -> Result<Verdict, E> {
        let f = Fields(map);
        let ty = f.req_text("type")?;
        if !is_dotted_lowercase(ty) {
            return Err(
                E::at(C::InvalidTypeName, "type", "type must be dotted.lowercase").with_type(ty),
            );
        }
        check_protocol_version(&f).map_err(|e| e.with_type(ty))?;
        let Some(info) = registry::lookup(ty) else {
            let profile = Profile::of_family(ty);
            if !self.config.profiles.contains(profile) {
                return Ok(Verdict::Ignorable { profile });
            }
            return Err(E::at(
                C::UnknownType,
                "type",
                format!("unknown type under active profile {profile}"),
            )
            .with_type(ty));
        };
        if !self.config.profiles.contains(info.profile) {
            return Ok(Verdict::Ignorable {
                profile: info.profile,
            });
        }
        let class = check_type(info, &f).map_err(|e| e.with_type(ty))?;
        Ok(Verdict::Valid { info, class })
    }
}

fn check_protocol_version(f: &Fields<'_>) -> Result<(), E> {
    match f.0.get("protocolVersion") {
        None => Err(E::at(
            C::MissingField,
            "protocolVersion",
            "protocolVersion is required",
        )),
        Some(Value::String(s)) if s == PROTOCOL_VERSION => Ok(()),
        Some(Value::String(_)) => Err(E::at(
            C::UnsupportedProtocolVersion,
            "protocolVersion",
            "unsupported protocolVersion; this implementation speaks narad/v1",
        )),
        Some(_) => Err(E::at(
            C::WrongType,
            "protocolVersion",
            "protocolVersion must be a string",
        )),
    }
}

/// `^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+$`
pub fn is_dotted_lowercase(ty: &str) -> bool {
    let mut segments = 0;
    for seg in ty.split('.') {
        let mut chars = seg.bytes();
        if !chars.next().is_some_and(|c| c.is_ascii_lowercase()) {
            return false;
        }
        if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
            return false;
        }
        segments += 1;
    }
    segments >= 2
}

fn check_type(info: &TypeInfo, f: &Fields<'_>) -> Result<RecordClass, E> {
    use RecordClass as K;
    let ty = info.name;
    match info.class {
        K::Hydrate => {
            check_hydrate(ty, f)?;
            return Ok(K::Hydrate);
        }
        K::Control => {
            check_control(ty, f)?;
            return Ok(K::Control);
        }
        _ => {}
    }
    f.req_str("eventId")?;
    f.req_ts("timestamp")?;
    match info.class {
        K::SessionWatch | K::RunWatch | K::WorkflowWatch | K::NodeWatch | K::WorkspaceWatch => {
            check_watch(ty, f)?;
            Ok(info.class)
        }
        _ if info.profile == Profile::Core => check_core_authority(ty, f),
        _ => check_profile_authority(ty, f),
    }
}

// ---- authority ------------------------------------------------------------

fn session_fields(f: &Fields<'_>) -> Result<(), E> {
    f.req_str("sessionId")?;
    f.req_uint("sessionSequence", 1)?;
    f.opt_str("workflowId")?;
    f.opt_uint("workflowSequence", 1)?;
    f.depends("workflowId", "workflowSequence")?;
    f.depends("workflowSequence", "workflowId")
}

fn run_tree_fields(f: &Fields<'_>) -> Result<(), E> {
    f.req_str("rootRunId")?;
    f.req_str("runId")?;
    f.req_uint("sequence", 1)?;
    Ok(())
}

fn workflow_fields(f: &Fields<'_>) -> Result<(), E> {
    f.req_present("workflowId")?;
    f.req_present("workflowSequence")
}

fn check_core_authority(ty: &str, f: &Fields<'_>) -> Result<RecordClass, E> {
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

/// Profile authority envelope: session fields plus optional run-tree fields
/// that depend on each other, plus optional `nodeId`.
fn profile_session_fields(f: &Fields<'_>) -> Result<(), E> {
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

fn check_profile_authority(ty: &str, f: &Fields<'_>) -> Result<RecordClass, E> {
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

/// `^[a-z0-9]+(\.[a-z0-9]+)+$`
pub(crate) fn is_extension_name(name: &str) -> bool {
    let mut segments = 0;
    for seg in name.split('.') {
        if seg.is_empty()
            || !seg
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return false;
        }
        segments += 1;
    }
    segments >= 2
}

/// §9.6: `revision` MUST equal `baseRevision + 1` (graph deltas too, §9.7).
fn delta_revisions(f: &Fields<'_>) -> Result<(), E> {
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

// ---- watch ----------------------------------------------------------------

fn check_watch(ty: &str, f: &Fields<'_>) -> Result<(), E> {
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

// ---- hydrate --------------------------------------------------------------

fn check_hydrate(ty: &str, f: &Fields<'_>) -> Result<(), E> {
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

// ---- control --------------------------------------------------------------

fn check_control(ty: &str, f: &Fields<'_>) -> Result<(), E> {
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

// ---- field access ---------------------------------------------------------

fn nest(mut e: E, parent: &str) -> E {
    e.field = Some(match e.field {
        Some(f) => format!("/{parent}{f}"),
        None => format!("/{parent}"),
    });
    e
}

/// True for a JSON Pointer (RFC 6901): empty, or `/`-prefixed segments in
/// which `~` is followed by `0` or `1`.
pub fn is_json_pointer(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    if !p.starts_with('/') {
        return false;
    }
    let b = p.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, c)| *c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
}

struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    fn req(&self, k: &str) -> Result<&'a Value, E> {
        self.0
            .get(k)
            .ok_or_else(|| E::at(C::MissingField, k, format!("{k} is required")))
    }

    fn req_present(&self, k: &str) -> Result<(), E> {
        self.req(k).map(drop)
    }

    fn text(k: &str, v: &'a Value) -> Result<&'a str, E> {
        v.as_str()
            .ok_or_else(|| E::at(C::WrongType, k, format!("{k} must be a string")))
    }

    fn non_empty(k: &str, s: &'a str) -> Result<&'a str, E> {
        if s.is_empty() {
            return Err(E::at(C::InvalidValue, k, format!("{k} must not be empty")));
        }
        Ok(s)
    }

    /// Required string, possibly empty.
    fn req_text(&self, k: &str) -> Result<&'a str, E> {
        Self::text(k, self.req(k)?)
    }

    /// Required non-empty string.
    fn req_str(&self, k: &str) -> Result<&'a str, E> {
        Self::non_empty(k, self.req_text(k)?)
    }

    fn opt_text(&self, k: &str) -> Result<Option<&'a str>, E> {
        self.0.get(k).map(|v| Self::text(k, v)).transpose()
    }

    fn opt_str(&self, k: &str) -> Result<Option<&'a str>, E> {
        self.opt_text(k)?.map(|s| Self::non_empty(k, s)).transpose()
    }

    fn uint(k: &str, v: &Value, min: u64) -> Result<u64, E> {
        let Value::Number(n) = v else {
            return Err(E::at(C::WrongType, k, format!("{k} must be an integer")));
        };
        match (n.as_u64(), n.is_i64()) {
            (Some(x), _) if x >= min => Ok(x),
            (Some(_), _) | (None, true) => Err(E::at(
                C::InvalidValue,
                k,
                format!("{k} must be at least {min}"),
            )),
            (None, false) => Err(E::at(C::WrongType, k, format!("{k} must be an integer"))),
        }
    }

    fn req_uint(&self, k: &str, min: u64) -> Result<u64, E> {
        Self::uint(k, self.req(k)?, min)
    }

    fn opt_uint(&self, k: &str, min: u64) -> Result<Option<u64>, E> {
        self.0.get(k).map(|v| Self::uint(k, v, min)).transpose()
    }

    fn one_of(k: &str, v: &'a Value, allowed: &[&str]) -> Result<&'a str, E> {
        match v.as_str() {
            Some(s) if allowed.contains(&s) => Ok(s),
            _ => Err(E::at(
                C::InvalidValue,
                k,
                format!("{k} must be one of {}", allowed.join(", ")),
            )),
        }
    }

    fn req_enum(&self, k: &str, allowed: &[&str]) -> Result<&'a str, E> {
        Self::one_of(k, self.req(k)?, allowed)
    }

    fn opt_enum(&self, k: &str, allowed: &[&str]) -> Result<Option<&'a str>, E> {
        self.0
            .get(k)
            .map(|v| Self::one_of(k, v, allowed))
            .transpose()
    }

    fn ts(k: &str, v: &'a Value) -> Result<(), E> {
        let s = Self::text(k, v)?;
        if !is_utc_timestamp(s) {
            return Err(E::at(
                C::InvalidTimestamp,
                k,
                format!("{k} must be an ISO-8601 UTC date-time"),
            ));
        }
        Ok(())
    }

    fn req_ts(&self, k: &str) -> Result<(), E> {
        Self::ts(k, self.req(k)?)
    }

    fn opt_ts(&self, k: &str) -> Result<(), E> {
        self.0.get(k).map_or(Ok(()), |v| Self::ts(k, v))
    }

    fn forbid(&self, k: &str, why: &str) -> Result<(), E> {
        if self.0.contains_key(k) {
            return Err(E::at(C::ForbiddenField, k, why.to_owned()));
        }
        Ok(())
    }

    fn depends(&self, k: &str, needs: &str) -> Result<(), E> {
        if self.0.contains_key(k) && !self.0.contains_key(needs) {
            return Err(E::at(
                C::DependentFieldMissing,
                needs,
                format!("{k} requires {needs}"),
            ));
        }
        Ok(())
    }

    fn req_array(&self, k: &str) -> Result<&'a Vec<Value>, E> {
        self.req(k)?
            .as_array()
            .ok_or_else(|| E::at(C::WrongType, k, format!("{k} must be an array")))
    }

    fn str_array(k: &str, v: &'a Value, min: usize, unique: bool) -> Result<(), E> {
        let items = v
            .as_array()
            .ok_or_else(|| E::at(C::WrongType, k, format!("{k} must be an array")))?;
        if items.len() < min {
            return Err(E::at(
                C::InvalidValue,
                k,
                format!("{k} must hold at least {min} item(s)"),
            ));
        }
        // A set, not a scan of the earlier items: 10,000 items stay linear.
        let mut seen =
            std::collections::HashSet::with_capacity(if unique { items.len() } else { 0 });
        for (i, item) in items.iter().enumerate() {
            let Some(text) = item.as_str().filter(|s| !s.is_empty()) else {
                let at = format!("{k}/{i}");
                return Err(match item {
                    Value::String(_) => {
                        E::at(C::InvalidValue, &at, format!("{at} must not be empty"))
                    }
                    _ => E::at(C::WrongType, &at, format!("{at} must be a string")),
                });
            };
            if unique && !seen.insert(text) {
                return Err(E::at(
                    C::DuplicateItems,
                    &format!("{k}/{i}"),
                    format!("{k} must not repeat an item"),
                ));
            }
        }
        Ok(())
    }

    fn req_str_array(&self, k: &str, min: usize, unique: bool) -> Result<(), E> {
        Self::str_array(k, self.req(k)?, min, unique)
    }

    fn opt_str_array(&self, k: &str, min: usize, unique: bool) -> Result<(), E> {
        self.0
            .get(k)
            .map_or(Ok(()), |v| Self::str_array(k, v, min, unique))
    }

    /// RFC 6902 patch: an array of operations, each with a known `op`, a
    /// JSON Pointer `path`, `from` for move/copy and `value` for add/replace/test.
    fn req_patch(&self, k: &str) -> Result<(), E> {
        let ops = self.req_array(k)?;
        for (i, op) in ops.iter().enumerate() {
            let at = format!("{k}/{i}");
            let bad = |msg: &str| E::at(C::InvalidPatch, &at, msg.to_owned());
            let o = op
                .as_object()
                .ok_or_else(|| bad("a patch operation must be an object"))?;
            let name = match o.get("op").and_then(Value::as_str) {
                Some(n @ ("add" | "remove" | "replace" | "move" | "copy" | "test")) => n,
                _ => return Err(bad("op must be add, remove, replace, move, copy or test")),
            };
            for key in ["path", "from"] {
                match o.get(key) {
                    Some(Value::String(p)) if is_json_pointer(p) => {}
                    None if key == "from" => {}
                    _ => return Err(bad(&format!("{key} must be a JSON Pointer"))),
                }
            }
            if matches!(name, "move" | "copy") && !o.contains_key("from") {
                return Err(bad("move and copy require from"));
            }
            if matches!(name, "add" | "replace" | "test") && !o.contains_key("value") {
                return Err(bad("add, replace and test require value"));
            }
        }
        Ok(())
    }
}
