//! The fast parse path for the hot authority types: one pass from bytes to
//! the typed record, with no intermediate `serde_json::Value` of the whole
//! record and no second deserialization from it.
//!
//! It accepts only what it is sure of and otherwise declines (`None`), and
//! the strict slow path (`json` + `validate` + typed model) then decides, so
//! every refusal and its message stay those of the slow path. It declines
//! on: a type outside the fast set or of an inactive profile; any member it
//! does not know for that type (unknown members are kept by the slow path);
//! any repeated member name (nested values are parsed strictly); `null`
//! for an optional member; escaped enum-like strings; anything near a
//! limit; and any rule not met ([`flat`] reads the members). When it
//! accepts, the result equals the slow path's
//! (`conformance/tests/fast_path.rs` checks this on every published trace
//! and on random records, the `parse_validate` fuzz target on any bytes).

mod flat;

use crate::fingerprint::{key_word, Item, Members};
use crate::json::StrictValue;
use crate::model::{
    AuthorityEnvelope, AuthorityEvent, AuthorityPayload as P, CustomFields, Executor,
    InterruptScope, Outcome, Privacy, ProgressStatus, ReasoningFields, ResumeMode, Role, Scope,
    Usage, Wire,
};
use crate::registry::{self, RecordClass, RecordKind};
use crate::timestamp::is_utc_timestamp;
use crate::validate::{is_extension_name, Validator, PROTOCOL_VERSION};
use crate::{Parsed, Record};
use bytes::Bytes;
use flat::Flat;
use serde::Deserialize;
use serde_json::Value;

/// Non-empty.
fn ne(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

/// Absent or non-empty.
fn opt_ne(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| !s.is_empty())
}

/// A message's `messageScope` and the record class it gives: `session`,
/// or `run` on a run-tree record; anything else is declined.
fn message_scope(scope: &str, run_tree: bool) -> Option<(Scope, RecordClass)> {
    match scope {
        "session" => Some((Scope::Session, RecordClass::SessionAuthority)),
        "run" if run_tree => Some((Scope::Run, RecordClass::RunTreeAuthority)),
        _ => None,
    }
}

/// `Some(())` when `ok`, so rules chain with `?`.
fn ensure(ok: bool) -> Option<()> {
    ok.then_some(())
}

/// Walks the members given in key order into `h`: first their count,
/// then each present one with its name's [`key_word`], computed at
/// compile time. Nothing is collected or sorted.
macro_rules! walk_members {
    ($($k:literal => $v:expr,)*) => {{
        const KEYS: &[&str] = &[$($k),*];
        const _: () = assert!(keys_ascend(KEYS), "members must be listed in key order");
        let mut h = Members::new(0 $(+ usize::from($v.is_some()))*);
        $(
            if let Some(v) = $v {
                h.member(const { key_word($k) }, v);
            }
        )*
        h.finish()
    }};
}

/// Whether `keys` are in strictly increasing byte order (a const fn, for
/// the assertion in [`walk_members`]).
const fn keys_ascend(keys: &[&str]) -> bool {
    let mut i = 1;
    while i < keys.len() {
        let (a, b) = (keys[i - 1].as_bytes(), keys[i].as_bytes());
        let mut j = 0;
        loop {
            if j == a.len() || j == b.len() {
                if a.len() >= b.len() {
                    return false;
                }
                break;
            }
            if a[j] != b[j] {
                if a[j] > b[j] {
                    return false;
                }
                break;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

/// The fingerprint of the object the members form (see `crate::fingerprint`).
fn fingerprint(f: &Flat<'_>) -> u64 {
    walk_members! {
        "actions" => f.actions.as_deref().map(Item::Strs),
        "args" => f.args.as_ref().map(|StrictValue(v)| Item::Json(v)),
        "category" => f.category.as_deref().map(Item::Str),
        "clientExecutorId" => f.client_executor_id.as_deref().map(Item::Str),
        "code" => f.code.as_deref().map(Item::Str),
        "content" => f.content.as_deref().map(Item::Str),
        "decision" => f.decision.as_deref().map(Item::Str),
        "delta" => f.delta.as_deref().map(Item::Str),
        "detail" => f.detail.as_deref().map(Item::Str),
        "eventId" => Some(Item::Str(&f.event_id)),
        "executor" => f.executor.map(Item::Str),
        "expiresAt" => f.expires_at.as_deref().map(Item::Str),
        "input" => f.input.as_ref().map(|StrictValue(v)| Item::Json(v)),
        "interruptId" => f.interrupt_id.as_deref().map(Item::Str),
        "kind" => f.kind.as_deref().map(Item::Str),
        "label" => f.label.as_deref().map(Item::Str),
        "message" => f.message.as_deref().map(Item::Str),
        "messageId" => f.message_id.as_deref().map(Item::Str),
        "messageScope" => f.message_scope.map(Item::Str),
        "name" => f.name.as_deref().map(Item::Str),
        "outcome" => f.outcome.map(Item::Str),
        "parentRunId" => f.parent_run_id.as_deref().map(Item::Str),
        "parentToolCallId" => f.parent_tool_call_id.as_deref().map(Item::Str),
        "privacy" => f.privacy.map(Item::Str),
        "progressId" => f.progress_id.as_deref().map(Item::Str),
        "protocolVersion" => Some(Item::Str(f.protocol_version)),
        "reason" => f.reason.as_deref().map(Item::Str),
        "reasoningId" => f.reasoning_id.as_deref().map(Item::Str),
        "response" => f.response.as_ref().map(|StrictValue(v)| Item::Json(v)),
        "resumeMode" => f.resume_mode.map(Item::Str),
        "retryAt" => f.retry_at.as_deref().map(Item::Str),
        "role" => f.role.map(Item::Str),
        "rootRunId" => f.root_run_id.as_deref().map(Item::Str),
        "runId" => f.run_id.as_deref().map(Item::Str),
        "scope" => f.scope.map(Item::Str),
        "sequence" => f.sequence.map(Item::Uint),
        "sessionId" => Some(Item::Str(&f.session_id)),
        "sessionSequence" => Some(Item::Uint(f.session_sequence)),
        "status" => f.status.map(Item::Str),
        "timestamp" => Some(Item::Str(&f.timestamp)),
        "title" => f.title.as_deref().map(Item::Str),
        "toolCallId" => f.tool_call_id.as_deref().map(Item::Str),
        "toolName" => f.tool_name.as_deref().map(Item::Str),
        "type" => Some(Item::Str(f.ty)),
        "usage" => f.usage.as_ref().map(|StrictValue(v)| Item::Json(v)),
        "value" => f.value.as_ref().map(|StrictValue(v)| Item::Json(v)),
        "waitId" => f.wait_id.as_deref().map(Item::Str),
        "workflowId" => f.workflow_id.as_deref().map(Item::Str),
        "workflowSequence" => f.workflow_sequence.map(Item::Uint),
    }
}

/// The types this path parses (the arms of [`Validator::parse_fast`]).
const FAST_TYPES: [&str; 17] = [
    "run.started",
    "run.paused",
    "run.resumed",
    "run.finished",
    "tool.call.started",
    "tool.call.finished",
    "interrupt.requested",
    "interrupt.resolved",
    "progress.recorded",
    "run.custom",
    "message.user.recorded",
    "message.text.started",
    "message.text.delta",
    "message.text.completed",
    "reasoning.started",
    "reasoning.delta",
    "reasoning.completed",
];

/// `false` when the record's `"type":` member names a type this path does
/// not parse, so such a record is declined before it is read: sorted
/// keys put `type` near the end, and reading a record that far before the
/// slow path took it cost a journal with half its records of other types
/// 9% more instructions (callgrind). Declining is always sound: the slow
/// path decides. When the record does not end with its `type` member, the first
/// `"type":` is taken; one met first inside a nested value, or an escaped
/// type, only means the record is parsed here and declined later if it is
/// not of a fast type.
fn may_be_fast(bytes: &[u8]) -> bool {
    const KEY: &[u8] = b"\"type\":";
    // Producers that sort keys (serde_json's default, and this engine's
    // records) put `type` last when no `usage`, `value`, `waitId` or
    // `workflow…` member follows it: read from the end, that costs a few
    // bytes where the search below reads the record up to it.
    if let Some(name) = last_member_string(bytes, KEY) {
        return FAST_TYPES.iter().any(|t| t.as_bytes() == name);
    }
    // A SIMD search, not a compare at every offset (which cost more than
    // the rest of the path), with its searcher built once.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(KEY));
    let Some(at) = FINDER.find(bytes) else {
        return false;
    };
    let rest = &bytes[at + KEY.len()..];
    let Some(start) = rest.iter().position(|b| !b.is_ascii_whitespace()) else {
        return false;
    };
    let Some(value) = rest[start..].strip_prefix(b"\"") else {
        return true;
    };
    match value.iter().position(|&b| b == b'"' || b == b'\\') {
        Some(end) if value[end] == b'"' => FAST_TYPES.iter().any(|t| t.as_bytes() == &value[..end]),
        _ => true,
    }
}

/// The value of the object's last member when it is the member `key`
/// (given with its quotes and colon) holding a string with no escape, as
/// `…"type":"run.started"}` ends; `None` for any other ending.
fn last_member_string<'a>(bytes: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let body = bytes.trim_ascii_end().strip_suffix(b"}")?;
    let body = body.trim_ascii_end().strip_suffix(b"\"")?;
    let open = memchr::memrchr(b'"', body)?;
    let (head, value) = (&body[..open], &body[open + 1..]);
    (head.ends_with(key) && !value.contains(&b'\\')).then_some(value)
}

impl Validator {
    /// The fast path: `Some` only for a record it is sure of (see the
    /// module docs); `None` hands the record to the slow path. Public for
    /// the differential test only.
    #[doc(hidden)]
    pub fn parse_fast(&self, bytes: &Bytes) -> Option<Parsed> {
        Some(self.fast_parts(bytes)?.into_parsed(bytes.clone()))
    }

    /// [`Validator::parse_fast`] taking the record's bytes: they become its
    /// wire bytes as they are (a clone of a `Bytes` made from a vector
    /// allocates), or come back when the path declines.
    pub(crate) fn parse_fast_owned(&self, bytes: Bytes) -> Result<Parsed, Bytes> {
        match self.fast_parts(&bytes) {
            Some(parts) => Ok(parts.into_parsed(bytes)),
            None => Err(bytes),
        }
    }

    /// The record the fast path reads from `bytes`, short of its wire bytes.
    fn fast_parts(&self, bytes: &Bytes) -> Option<FastParts> {
        let limits = self.config().limits;
        // No string (unescaped, or key) is longer than the record, so the
        // string bound holds; the record itself is depth 1.
        ensure(bytes.len() <= limits.max_string_bytes && limits.max_depth >= 1)?;
        // A nested value is parsed on its own (`Flat::read`), so deeper
        // than the whole record's parse would follow must not pass the
        // depth check below.
        ensure(limits.max_depth <= crate::json::MAX_PARSE_DEPTH)?;
        ensure(may_be_fast(bytes))?;
        // One UTF-8 check of the whole record; the reader then borrows its
        // strings from the `str` and checks none again. Invalid UTF-8 goes
        // to the slow path, which names the error.
        let text = std::str::from_utf8(bytes).ok()?;
        let mut f = Flat::read(text)?;
        let info = registry::lookup(f.ty)?;
        ensure(
            info.kind() == RecordKind::Authority && self.config().profiles.contains(info.profile),
        )?;
        ensure(f.protocol_version == PROTOCOL_VERSION)?;
        ensure(!f.event_id.is_empty() && is_utc_timestamp(&f.timestamp))?;
        ensure(!f.session_id.is_empty() && f.session_sequence >= 1)?;
        ensure(opt_ne(&f.workflow_id) && f.workflow_sequence.is_none_or(|s| s >= 1))?;
        ensure(f.workflow_id.is_some() == f.workflow_sequence.is_some())?;
        // Run-tree fields all present and well formed, or all absent.
        let run_tree = ne(&f.root_run_id) && ne(&f.run_id) && f.sequence.is_some_and(|s| s >= 1);
        let no_run_tree = f.root_run_id.is_none() && f.run_id.is_none() && f.sequence.is_none();
        ensure(run_tree || no_run_tree)?;
        // Nested values: the depth bound counts from the record.
        let inner = crate::Limits {
            max_depth: limits.max_depth - 1,
            ..limits
        };
        for v in [&f.usage, &f.args, &f.response, &f.input, &f.value]
            .into_iter()
            .flatten()
        {
            inner.check_value(&v.0).ok()?;
        }
        let fp = fingerprint(&f);
        let core = info.profile == crate::Profile::Core;
        if core {
            ensure(run_tree && opt_ne(&f.parent_run_id) && opt_ne(&f.parent_tool_call_id))?;
        } else {
            // Profile types leave these unchecked; the slow path decides.
            ensure(f.parent_run_id.is_none() && f.parent_tool_call_id.is_none())?;
        }
        let mut class = RecordClass::RunTreeAuthority;
        let ty = f.ty;
        let payload = match ty {
            "run.started" => {
                ensure(opt_ne(&f.client_executor_id))?;
                P::RunStarted {
                    client_executor_id: f.client_executor_id.take(),
                }
            }
            "run.paused" => {
                ensure(ne(&f.wait_id) && ne(&f.reason) && opt_ne(&f.interrupt_id))?;
                ensure(f.retry_at.as_deref().is_none_or(is_utc_timestamp))?;
                P::RunPaused {
                    wait_id: f.wait_id.take()?,
                    reason: f.reason.take()?,
                    resume_mode: match f.resume_mode.take()? {
                        "automatic" => ResumeMode::Automatic,
                        "command" => ResumeMode::Command,
                        _ => return None,
                    },
                    interrupt_id: f.interrupt_id.take(),
                    retry_at: f.retry_at.take(),
                    message: f.message.take(),
                }
            }
            "run.resumed" => {
                ensure(ne(&f.wait_id))?;
                P::RunResumed {
                    wait_id: f.wait_id.take()?,
                }
            }
            "run.finished" => P::RunFinished {
                artifact_ids: None,
                usage: match f.usage.take() {
                    None => None,
                    Some(StrictValue(u)) => Some(usage(u)?),
                },
            },
            "tool.call.started" => {
                ensure(ne(&f.tool_call_id) && ne(&f.tool_name))?;
                P::ToolCallStarted {
                    tool_call_id: f.tool_call_id.take()?,
                    tool_name: f.tool_name.take()?,
                    executor: match f.executor.take()? {
                        "backend" => Executor::Backend,
                        "client" => Executor::Client,
                        _ => return None,
                    },
                    args: f.args.take()?.0,
                }
            }
            "tool.call.finished" => {
                ensure(ne(&f.tool_call_id))?;
                P::ToolCallFinished {
                    tool_call_id: f.tool_call_id.take()?,
                    outcome: match f.outcome.take()? {
                        "success" => Outcome::Success,
                        "error" => Outcome::Error,
                        "cancelled" => Outcome::Cancelled,
                        _ => return None,
                    },
                    response: f.response.take()?.0,
                    code: f.code.take(),
                    message: f.message.take(),
                }
            }
            "interrupt.requested" => {
                let scope = run_scope(f.scope.take())?;
                ensure(ne(&f.interrupt_id) && ne(&f.wait_id) && ne(&f.kind))?;
                let actions = f.actions.take()?;
                ensure(!actions.is_empty() && actions.len() <= limits.max_array_len)?;
                let mut seen = std::collections::HashSet::with_capacity(actions.len());
                ensure(
                    actions
                        .iter()
                        .all(|a| !a.is_empty() && seen.insert(a.as_str())),
                )?;
                ensure(f.expires_at.as_deref().is_none_or(is_utc_timestamp))?;
                P::InterruptRequested {
                    interrupt_id: f.interrupt_id.take()?,
                    wait_id: f.wait_id.take()?,
                    kind: f.kind.take()?,
                    actions,
                    scope,
                    expires_at: f.expires_at.take(),
                    title: f.title.take(),
                    message: f.message.take(),
                    input: f.input.take().map(|v| v.0),
                }
            }
            "interrupt.resolved" => {
                let scope = run_scope(f.scope.take())?;
                ensure(ne(&f.interrupt_id) && ne(&f.wait_id) && ne(&f.decision))?;
                P::InterruptResolved {
                    interrupt_id: f.interrupt_id.take()?,
                    wait_id: f.wait_id.take()?,
                    decision: f.decision.take()?,
                    reason: f.reason.take(),
                    scope,
                    members: None,
                }
            }
            "progress.recorded" => {
                ensure(run_tree && ne(&f.progress_id) && ne(&f.category) && ne(&f.label))?;
                P::ProgressRecorded {
                    progress_id: f.progress_id.take()?,
                    category: f.category.take()?,
                    label: f.label.take()?,
                    detail: f.detail.take(),
                    status: match f.status.take()? {
                        "active" => ProgressStatus::Active,
                        "completed" => ProgressStatus::Completed,
                        "failed" => ProgressStatus::Failed,
                        "cancelled" => ProgressStatus::Cancelled,
                        _ => return None,
                    },
                    privacy: match f.privacy.take()? {
                        "public" => Privacy::Public,
                        "internal" => Privacy::Internal,
                        "sensitive" => Privacy::Sensitive,
                        _ => return None,
                    },
                }
            }
            "run.custom" => {
                ensure(run_tree && f.name.as_deref().is_some_and(is_extension_name))?;
                P::RunCustom(CustomFields {
                    name: f.name.take()?,
                    value: f.value.take()?.0,
                })
            }
            "message.text.started" => {
                ensure(ne(&f.message_id))?;
                let (message_scope, scope_class) =
                    message_scope(f.message_scope.take()?, run_tree)?;
                class = scope_class;
                P::MessageTextStarted {
                    message_id: f.message_id.take()?,
                    role: match f.role.take()? {
                        "assistant" => Role::Assistant,
                        "system" => Role::System,
                        _ => return None,
                    },
                    message_scope,
                }
            }
            "message.user.recorded" => {
                ensure(ne(&f.message_id))?;
                let (message_scope, scope_class) =
                    message_scope(f.message_scope.take()?, run_tree)?;
                class = scope_class;
                P::MessageUserRecorded {
                    message_id: f.message_id.take()?,
                    message_scope,
                    content: f.content.take()?,
                    attachment_ids: None,
                }
            }
            "message.text.delta" => {
                class = RecordClass::SessionAuthority;
                ensure(ne(&f.message_id))?;
                P::MessageTextDelta {
                    message_id: f.message_id.take()?,
                    delta: f.delta.take()?,
                }
            }
            "message.text.completed" => {
                class = RecordClass::SessionAuthority;
                ensure(ne(&f.message_id))?;
                P::MessageTextCompleted {
                    message_id: f.message_id.take()?,
                }
            }
            "reasoning.started" | "reasoning.delta" | "reasoning.completed" => {
                class = RecordClass::SessionAuthority;
                ensure(ne(&f.reasoning_id) && opt_ne(&f.message_id))?;
                let fields = ReasoningFields {
                    reasoning_id: f.reasoning_id.take()?,
                    message_id: f.message_id.take(),
                    delta: f.delta.take(),
                };
                match ty {
                    "reasoning.delta" => {
                        ensure(fields.delta.is_some())?;
                        P::ReasoningDelta(fields)
                    }
                    // A delta on the others is a member the slow path keeps.
                    _ if fields.delta.is_some() => return None,
                    "reasoning.started" => P::ReasoningStarted(fields),
                    _ => P::ReasoningCompleted(fields),
                }
            }
            _ => return None,
        };
        // Every member present was taken by the type; one left over is a
        // member this type does not name, which the slow path keeps.
        ensure(f.has_no_body())?;
        let envelope = AuthorityEnvelope {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            event_id: f.event_id,
            timestamp: f.timestamp,
            session_id: f.session_id,
            session_sequence: f.session_sequence,
            workflow_id: f.workflow_id,
            workflow_sequence: f.workflow_sequence,
            root_run_id: f.root_run_id,
            run_id: f.run_id,
            sequence: f.sequence,
            parent_run_id: f.parent_run_id,
            parent_tool_call_id: f.parent_tool_call_id,
            node_id: None,
        };
        Some(FastParts {
            envelope,
            payload,
            fp,
            class,
        })
    }
}

/// What [`Validator::fast_parts`] read: a record but for its wire bytes.
struct FastParts {
    envelope: AuthorityEnvelope,
    payload: P,
    fp: u64,
    class: RecordClass,
}

impl FastParts {
    fn into_parsed(self, bytes: Bytes) -> Parsed {
        Parsed::Record {
            record: Record::Authority(AuthorityEvent {
                envelope: self.envelope,
                payload: self.payload,
                wire: Wire::lazy(bytes, self.fp),
            }),
            class: self.class,
        }
    }
}

/// A run-scope interrupt: `scope` absent or `run`.
fn run_scope(scope: Option<&str>) -> Option<Option<InterruptScope>> {
    match scope {
        None => Some(None),
        Some("run") => Some(Some(InterruptScope::Run)),
        Some(_) => None,
    }
}

/// `usage`: an object whose token counters, when present, are integers ≥ 0.
fn usage(u: Value) -> Option<Usage> {
    let map = u.as_object()?;
    for k in ["promptTokens", "completionTokens", "totalTokens"] {
        ensure(map.get(k).is_none_or(|v| v.as_u64().is_some()))?;
    }
    Usage::deserialize(u).ok()
}

#[cfg(test)]
mod tests {
    use super::{last_member_string, may_be_fast};

    #[test]
    fn the_type_is_read_from_the_end_when_it_is_the_last_member() {
        let key = br#""type":"#;
        let tail = |s: &'static str| last_member_string(s.as_bytes(), key);
        assert_eq!(
            tail(r#"{"a":1,"type":"run.started"}"#),
            Some(&b"run.started"[..])
        );
        assert_eq!(
            tail(r#"{"a":1,"type":"run.started" } "#),
            Some(&b"run.started"[..])
        );
        // Any other ending is left to the search.
        assert_eq!(tail(r#"{"type":"run.started","z":1}"#), None);
        assert_eq!(tail(r#"{"type": "run.started"}"#), None);
        assert_eq!(tail(r#"{"type":"run\u002estarted"}"#), None);
        assert_eq!(tail(r#"{"x":"\"type\":\"run.started"}"#), None);
        assert_eq!(tail(r#"{"type":"run.started"]"#), None);
    }

    #[test]
    fn a_record_is_declined_early_only_for_a_type_outside_the_fast_set() {
        for (record, fast) in [
            (r#"{"a":1,"type":"run.started"}"#, true),
            (r#"{"a":1,"type":"run.cancelled"}"#, false),
            (r#"{"type":"run.started","usage":{}}"#, true),
            (r#"{"type":"run.cancelled","usage":{}}"#, false),
            (r#"{"type": "run.started"}"#, true),
            // Escaped or not a string: the parse decides.
            (r#"{"type":"run\u002estarted"}"#, true),
            (r#"{"type":7}"#, true),
            // Not last: the first `"type":` is taken, nested or not.
            (r#"{"type":"run.custom","value":{"type":"x"}}"#, true),
            (r#"{"args":{"type":"x"},"type":"run.started","z":1}"#, false),
            (r#"{"a":1}"#, false),
        ] {
            assert_eq!(may_be_fast(record.as_bytes()), fast, "{record}");
        }
    }
}
