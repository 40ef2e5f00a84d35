//! The session corpora of the benches: narad-core's `reduce` bench and
//! narad-engine's `hydrate` bench include this file (by path), so both
//! measure the same sessions.

use serde_json::{json, Value};

/// A session shape.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Corpus {
    /// The reduce bench's steady-state session: back-to-back top-level
    /// runs of 8 events (started, tool call, progress, three run.custom
    /// token counters, tool finish, finished).
    Steady,
    /// A chat: per turn a user message, then a run with streamed
    /// reasoning, a tool call, streamed assistant text, and on every
    /// fourth turn an approval interrupt (requested, paused, resolved,
    /// resumed).
    Conversation,
}

impl Corpus {
    pub fn name(self) -> &'static str {
        match self {
            Corpus::Steady => "steady",
            Corpus::Conversation => "conversation",
        }
    }
}

/// The envelope of event `seq` of session `sid`; with `run`, of that root
/// run at run-tree `sequence`.
fn envelope(sid: &str, seq: u64, run: Option<(&str, u64)>) -> Value {
    let mut m = json!({
        "protocolVersion": "narad/v1", "eventId": format!("evt-{seq}"),
        "timestamp": "2026-08-05T00:00:01.250Z", "sessionId": sid,
        "sessionSequence": seq,
    });
    if let (Some((root, sequence)), Value::Object(o)) = (run, &mut m) {
        o.insert("rootRunId".into(), json!(root));
        o.insert("runId".into(), json!(root));
        o.insert("sequence".into(), json!(sequence));
    }
    m
}

/// The bodies of turn `turn`, each with whether it belongs to the run.
fn turn(corpus: Corpus, turn: u64) -> Vec<(bool, Value)> {
    let tool = format!("tool-{turn}");
    match corpus {
        Corpus::Steady => vec![
            json!({"type": "run.started"}),
            json!({"type": "tool.call.started", "toolCallId": tool, "toolName": "search", "executor": "backend", "args": {"query": "narad", "limit": 10}}),
            json!({"type": "progress.recorded", "progressId": "phase", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
            json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 17}}),
            json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 18}}),
            json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 19}}),
            json!({"type": "tool.call.finished", "toolCallId": tool, "outcome": "success", "response": {"hits": [{"title": "Narad", "score": 0.9}]}}),
            json!({"type": "run.finished", "usage": {"promptTokens": 120, "completionTokens": 40, "totalTokens": 160}}),
        ]
        .into_iter()
        .map(|b| (true, b))
        .collect(),
        Corpus::Conversation => {
            let (user, assistant) = (format!("user-{turn}"), format!("assistant-{turn}"));
            let reasoning = format!("reasoning:{assistant}");
            let mut v = vec![
                (false, json!({"type": "message.user.recorded", "messageId": user, "messageScope": "session", "content": "Find the three most cited papers on journal checkers and summarize them."})),
                (true, json!({"type": "run.started"})),
                (true, json!({"type": "reasoning.started", "reasoningId": reasoning, "messageId": assistant})),
            ];
            for d in ["The user wants papers; ", "search first, ", "then rank by citations ", "and summarize."] {
                v.push((true, json!({"type": "reasoning.delta", "reasoningId": reasoning, "messageId": assistant, "delta": d})));
            }
            v.push((true, json!({"type": "reasoning.completed", "reasoningId": reasoning, "messageId": assistant})));
            v.push((true, json!({"type": "tool.call.started", "toolCallId": tool, "toolName": "search", "executor": "backend", "args": {"query": "journal checker", "limit": 3}})));
            v.push((true, json!({"type": "tool.call.finished", "toolCallId": tool, "outcome": "success", "response": {"hits": [{"title": "Narad", "score": 0.9}, {"title": "Logs", "score": 0.7}]}})));
            if turn % 4 == 0 {
                let (interrupt, wait) = (format!("approve-{turn}"), format!("wait-{turn}"));
                v.push((true, json!({"type": "interrupt.requested", "interruptId": interrupt, "waitId": wait, "kind": "acme.approval", "actions": ["approve", "deny"], "title": "Send the summary?"})));
                v.push((true, json!({"type": "run.paused", "waitId": wait, "reason": "acme.approval", "resumeMode": "command", "interruptId": interrupt})));
                v.push((true, json!({"type": "interrupt.resolved", "interruptId": interrupt, "waitId": wait, "decision": "approve"})));
                v.push((true, json!({"type": "run.resumed", "waitId": wait})));
            }
            v.push((true, json!({"type": "message.text.started", "messageId": assistant, "role": "assistant", "messageScope": "run"})));
            for d in ["Here are ", "the three ", "most cited ", "papers: ", "first, ", "second, ", "and third; ", "each checks journals."] {
                v.push((true, json!({"type": "message.text.delta", "messageId": assistant, "delta": d})));
            }
            v.push((true, json!({"type": "message.text.completed", "messageId": assistant})));
            v.push((true, json!({"type": "run.finished", "usage": {"promptTokens": 420, "completionTokens": 96, "totalTokens": 516}})));
            v
        }
    }
}

/// The records of `corpus` for session `sid`, the first at
/// `sessionSequence` `first`, without end (take what is wanted). Turn `t`
/// runs root run `run-t`.
pub fn records(corpus: Corpus, sid: &str, first: u64) -> impl Iterator<Item = Value> + '_ {
    (1u64..)
        .flat_map(move |t| turn(corpus, t).into_iter().map(move |(r, b)| (t, r, b)))
        .scan(
            (first, 0u64, 0u64),
            move |(seq, last, sequence), (t, in_run, body)| {
                if t != *last {
                    (*last, *sequence) = (t, 0);
                }
                let root = format!("run-{t}");
                let run = in_run.then(|| {
                    *sequence += 1;
                    (root.as_str(), *sequence)
                });
                let mut m = envelope(sid, *seq, run);
                if let (Value::Object(m), Value::Object(b)) = (&mut m, body) {
                    m.extend(b);
                }
                *seq += 1;
                Some(m)
            },
        )
}
