//! What the typed state shows that the checker does not keep, folded from
//! the session's stored journal: a tool call's name, args summary and
//! result, an open interrupt's kind, title, message and expiry, and usage
//! totals. The checker stays as small as its memory bounds require; these
//! come from the exact events that recorded them (`tool.call.started`,
//! `tool.call.finished`, `interrupt.requested`, the run terminals).

use std::collections::BTreeMap;

use narad_core::model::Outcome;
use serde::Deserialize;
use serde_json::Value;

use crate::typed::state::{InterruptInfo, SessionState, ToolResult, UsageTotals};
use crate::typed::usage::Usage;

/// The longest args summary, in bytes (then cut at a char boundary, `…`).
pub const ARGS_SUMMARY_MAX: usize = 120;

/// The fields of one stored event the fold reads (any other is skipped).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fact {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    outcome: Option<Outcome>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    interrupt_id: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    reasoning_id: Option<String>,
}

#[derive(Default, Clone, Debug)]
struct ToolFacts {
    name: Option<String>,
    args_summary: Option<String>,
    result: Option<ToolResult>,
}

#[derive(Default, Clone, Debug)]
struct RequestFacts {
    kind: String,
    title: Option<String>,
    message: Option<String>,
    expires_at: Option<String>,
}

/// The fold over one session's journal.
#[derive(Default, Clone, Debug)]
pub(crate) struct Details {
    tools: BTreeMap<String, ToolFacts>,
    requests: BTreeMap<String, RequestFacts>,
    usage: UsageTotals,
    /// Transcript messages begun so far (the index the next one takes).
    messages_seen: usize,
    /// Per reasoning stream, the messages begun before it: where a stream
    /// whose message never appeared belongs in the transcript.
    reasoning_after: BTreeMap<String, usize>,
}

impl Details {
    /// Folds one stored event of `session_id` (events of other sessions,
    /// and bytes that do not parse, are skipped: the store holds checked
    /// events only).
    pub(crate) fn push(&mut self, session_id: &str, bytes: &[u8]) {
        // Most events (text deltas) are of no folded type: read only their
        // `type`, without building any of their fields.
        #[derive(Deserialize)]
        struct Typed<'a> {
            #[serde(rename = "type", borrow)]
            ty: std::borrow::Cow<'a, str>,
        }
        let folded = serde_json::from_slice::<Typed<'_>>(bytes).is_ok_and(|t| {
            matches!(
                &*t.ty,
                "tool.call.started"
                    | "tool.call.finished"
                    | "interrupt.requested"
                    | "interrupt.resolved"
                    | "run.finished"
                    | "run.error"
                    | "run.cancelled"
                    | "message.user.recorded"
                    | "message.text.started"
                    | "reasoning.started"
            )
        });
        if !folded {
            return;
        }
        let Ok(f) = serde_json::from_slice::<Fact>(bytes) else {
            return;
        };
        if f.session_id != session_id {
            return;
        }
        match f.ty.as_str() {
            "tool.call.started" => {
                if let Some(id) = f.tool_call_id {
                    let t = self.tools.entry(id).or_default();
                    t.name = f.tool_name;
                    t.args_summary = f.args.as_ref().map(summarize);
                }
            }
            "tool.call.finished" => {
                if let (Some(id), Some(outcome)) = (f.tool_call_id, f.outcome) {
                    self.tools.entry(id).or_default().result = Some(ToolResult {
                        outcome,
                        code: f.code,
                        message: f.message,
                    });
                }
            }
            "interrupt.requested" => {
                if let Some(id) = f.interrupt_id {
                    self.requests.insert(
                        id,
                        RequestFacts {
                            kind: f.kind.unwrap_or_default(),
                            title: f.title,
                            message: f.message,
                            expires_at: f.expires_at,
                        },
                    );
                }
            }
            "interrupt.resolved" => {
                if let Some(id) = f.interrupt_id {
                    self.requests.remove(&id);
                }
            }
            "run.finished" | "run.error" | "run.cancelled" => {
                if let (Some(run), Some(u)) = (f.run_id, f.usage) {
                    self.usage.add(&run, &u);
                }
            }
            // Each begins one transcript message (the checker refuses a
            // repeated id), in the order the transcript holds them.
            "message.user.recorded" | "message.text.started" => self.messages_seen += 1,
            "reasoning.started" => {
                if let Some(id) = f.reasoning_id {
                    self.reasoning_after.insert(id, self.messages_seen);
                }
            }
            _ => {}
        }
    }

    /// Writes what was folded into `state` (tool calls and open
    /// interrupts it holds; the usage totals).
    pub(crate) fn fill(&self, state: &mut SessionState) {
        for (id, call) in &mut state.tools {
            if let Some(t) = self.tools.get(id) {
                call.name.clone_from(&t.name);
                call.args_summary.clone_from(&t.args_summary);
                call.result.clone_from(&t.result);
            }
        }
        for (id, open) in &mut state.interrupts {
            if let Some(r) = self.requests.get(id) {
                fill_request(open, r.clone());
            }
        }
        state.usage.clone_from(&self.usage);
        state.reasoning_after.clone_from(&self.reasoning_after);
    }
}

fn fill_request(open: &mut InterruptInfo, r: RequestFacts) {
    open.kind = Some(r.kind);
    open.title = r.title;
    open.message = r.message;
    open.expires_at = r.expires_at;
}

/// Compact JSON of `args`, cut to [`ARGS_SUMMARY_MAX`] bytes at a char
/// boundary and marked with `…` when cut.
pub(crate) fn summarize(args: &Value) -> String {
    let mut s = args.to_string();
    if s.len() > ARGS_SUMMARY_MAX {
        let mut end = ARGS_SUMMARY_MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_summary_is_cut_at_a_char_boundary() {
        assert_eq!(summarize(&json!({"q": "rust"})), r#"{"q":"rust"}"#);
        let long = summarize(&json!({"q": "é".repeat(200)}));
        assert!(long.ends_with('…'));
        assert!(long.len() <= ARGS_SUMMARY_MAX + '…'.len_utf8());
    }

    #[test]
    fn usage_totals_add_counters_per_run_and_session() {
        let mut d = Details::default();
        let ev = |run: &str, usage: Value| {
            json!({"type": "run.finished", "sessionId": "s", "runId": run, "usage": usage})
                .to_string()
        };
        d.push(
            "s",
            ev("r1", json!({"promptTokens": 3, "elapsedMs": 10})).as_bytes(),
        );
        d.push(
            "s",
            ev("r2", json!({"promptTokens": 4, "totalTokens": 9})).as_bytes(),
        );
        d.push("other", ev("r3", json!({"promptTokens": 100})).as_bytes());
        assert_eq!(d.usage.session.prompt_tokens, Some(7));
        assert_eq!(d.usage.session.total_tokens, Some(9));
        assert_eq!(d.usage.session.elapsed_ms, Some(10));
        assert_eq!(d.usage.runs["r2"].prompt_tokens, Some(4));
        assert!(!d.usage.runs.contains_key("r3"));
    }
}
