//! The conversation profile (§9.2–§9.4): the transcript built from user
//! messages, streamed text applied once, reasoning joined by id, redaction
//! as display-only replacement, snapshot replacement, and the default
//! visibility rule.

use super::id_index::{Hashes, IdIndex};
use super::messages::Messages;
use super::{fail, Label, R};
use crate::model::{AuthorityEnvelope, AuthorityPayload, Role, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// One transcript message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Message identity.
    pub message_id: String,
    /// `user`, `assistant` or `system`.
    pub role: Label,
    /// `session`, `workflow` or `run` (`session` for snapshot messages).
    pub scope: Label,
    /// Owning run for run-scoped messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Owning root run journal for run-scoped messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_run_id: Option<String>,
    /// Text as recorded or streamed.
    pub content: String,
    /// Streaming finished (user and snapshot messages are complete).
    pub completed: bool,
    /// Display replacement after `message.redacted` (`Some(None)`: hidden).
    /// The operational content above is never altered (§9.4).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub redacted: Option<Option<String>>,
    /// Admitted attachments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachment_ids: Vec<String>,
}

/// A present field is `Some`, even when it is `null` (`Some(None)`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// One reasoning stream, kept even when the final text lands on a later
/// assistant message id (§9.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reasoning {
    /// Reasoning identity.
    pub reasoning_id: String,
    /// Correlated message, if named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Joined text.
    pub content: String,
    /// Stream finished.
    pub completed: bool,
}

/// The transcript of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Messages in authority order.
    pub messages: Messages,
    /// Reasoning streams in authority order.
    pub reasoning: Vec<Reasoning>,
    #[serde(skip)]
    reasoning_index: IdIndex,
}

/// The reasoning id at each position of `r`.
fn reasoning_ids<'a>(r: &'a [Reasoning]) -> impl Fn(usize) -> Option<&'a str> + Copy + 'a {
    move |p| r.get(p).map(|r| r.reasoning_id.as_str())
}

/// A list of the transcript with its id index, as a restore builds them
/// (indexes are not serialized).
pub(super) struct IndexedList<T>(Vec<T>, IdIndex);

impl<T> IndexedList<T> {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IndexedList<Reasoning> {
    /// The reasoning streams a decoder read, with their id hashes in
    /// order; `None` if an id repeats, which no checker writes.
    pub(super) fn reasoning((r, hashes): (Vec<Reasoning>, Hashes)) -> Option<Self> {
        let index = IdIndex::from_hashes(hashes, reasoning_ids(&r))?;
        Some(Self(r, index))
    }
}

impl Transcript {
    /// The transcript of restored messages and reasoning streams.
    pub(super) fn restored(messages: Messages, reasoning: IndexedList<Reasoning>) -> Self {
        Self {
            messages,
            reasoning: reasoning.0,
            reasoning_index: reasoning.1,
        }
    }

    /// Whether there are no messages and no reasoning streams.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.reasoning.is_empty()
    }
}

fn scope_name(s: Scope) -> &'static str {
    match s {
        Scope::Session => "session",
        Scope::Workflow => "workflow",
        Scope::Run => "run",
    }
}

impl Transcript {
    /// The message `message_id`, found through the id index (not a scan
    /// of the transcript).
    ///
    /// ```
    /// use narad_core::checker::Checker;
    ///
    /// let mut c = Checker::default();
    /// c.push_bytes(br#"{"protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"type":"message.user.recorded","messageId":"u1","messageScope":"session","content":"Hi"}"#).unwrap();
    /// let t = c.transcript("s").unwrap();
    /// assert_eq!(t.get("u1").map(|m| m.content.clone()), Some("Hi".into()));
    /// assert!(t.get("u2").is_none());
    /// ```
    pub fn get(&self, message_id: &str) -> Option<Cow<'_, Message>> {
        self.messages.at(self.messages.find(message_id)?)
    }

    /// The message `id`, to change.
    fn found(&mut self, id: &str) -> R<&mut Message> {
        match self.messages.find(id).and_then(|i| self.messages.at_mut(i)) {
            Some(m) => Ok(m),
            None => fail(
                "message_unknown",
                "9.2",
                format!("message {id} was not started"),
            ),
        }
    }

    fn new_message(&mut self, m: Message) -> R {
        match self.messages.push(m) {
            Ok(()) => Ok(()),
            Err(m) => fail(
                "message_duplicate",
                "9.2",
                format!("message {} already exists", m.message_id),
            ),
        }
    }

    /// Applies a conversation authority event. Checks precede every change.
    pub(super) fn apply(&mut self, env: &AuthorityEnvelope, payload: &AuthorityPayload) -> R {
        use AuthorityPayload as P;
        let scoped = |scope: Scope,
                      id: &str,
                      role: &str,
                      content: String,
                      completed: bool,
                      attachments: Vec<String>| Message {
            message_id: id.to_owned(),
            role: Label::new(role),
            scope: Label::new(scope_name(scope)),
            run_id: env.run_id.clone().filter(|_| scope == Scope::Run),
            root_run_id: env.root_run_id.clone().filter(|_| scope == Scope::Run),
            content,
            completed,
            redacted: None,
            attachment_ids: attachments,
        };
        match payload {
            P::MessageUserRecorded {
                message_id,
                message_scope,
                content,
                attachment_ids,
            } => self.new_message(scoped(
                *message_scope,
                message_id,
                "user",
                content.clone(),
                true,
                attachment_ids.clone().unwrap_or_default(),
            )),
            P::MessageTextStarted {
                message_id,
                role,
                message_scope,
            } => {
                let role = if *role == Role::Assistant {
                    "assistant"
                } else {
                    "system"
                };
                self.new_message(scoped(
                    *message_scope,
                    message_id,
                    role,
                    String::new(),
                    false,
                    Vec::new(),
                ))
            }
            P::MessageTextDelta { message_id, delta } => {
                let m = self.found(message_id)?;
                if m.completed {
                    return fail(
                        "message_completed",
                        "9.2",
                        format!("message {message_id} already completed"),
                    );
                }
                m.content.push_str(delta);
                Ok(())
            }
            P::MessageTextCompleted { message_id } => {
                let m = self.found(message_id)?;
                if m.completed {
                    return fail(
                        "message_completed",
                        "9.2",
                        format!("message {message_id} already completed"),
                    );
                }
                m.completed = true;
                Ok(())
            }
            P::MessageRedacted {
                message_id,
                display_replacement,
                ..
            } => {
                self.found(message_id)?.redacted = Some(display_replacement.clone());
                Ok(())
            }
            P::ReasoningStarted(r) => {
                let at = self.reasoning.len();
                if !self
                    .reasoning_index
                    .insert(&r.reasoning_id, at, reasoning_ids(&self.reasoning))
                {
                    return fail(
                        "reasoning_duplicate",
                        "9.2",
                        format!("reasoning {} already started", r.reasoning_id),
                    );
                }
                self.reasoning.push(Reasoning {
                    reasoning_id: r.reasoning_id.clone(),
                    message_id: r.message_id.clone(),
                    content: String::new(),
                    completed: false,
                });
                Ok(())
            }
            P::ReasoningDelta(r) | P::ReasoningCompleted(r) => {
                let ids = reasoning_ids(&self.reasoning);
                let Some(i) = self.reasoning_index.get(&r.reasoning_id, ids) else {
                    return fail(
                        "reasoning_unknown",
                        "9.2",
                        format!("reasoning {} was not started", r.reasoning_id),
                    );
                };
                let entry = &mut self.reasoning[i];
                if entry.completed {
                    return fail(
                        "reasoning_completed",
                        "9.2",
                        format!("reasoning {} already completed", r.reasoning_id),
                    );
                }
                match (payload, &r.delta) {
                    (P::ReasoningDelta(_), Some(d)) => entry.content.push_str(d),
                    _ => entry.completed = true,
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// §9.3: replace the transcript covered by a snapshot. Messages the
    /// snapshot lists become complete session messages; reasoning is kept.
    pub(super) fn replace_with_snapshot(&mut self, messages: &[Value]) {
        self.messages.clear();
        for m in messages {
            let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
            let Some(id) = text("messageId") else {
                continue;
            };
            // Of a repeated id, the first is kept.
            let _ = self.messages.push(Message {
                message_id: id,
                role: text("role").map_or_else(|| "assistant".into(), Label::from),
                scope: text("messageScope").map_or_else(|| "session".into(), Label::from),
                run_id: text("runId"),
                root_run_id: text("rootRunId"),
                content: text("content").unwrap_or_default(),
                completed: true,
                redacted: None,
                attachment_ids: Vec::new(),
            });
        }
    }

    /// §9.2 default visibility: session (and workflow) messages and those of
    /// the given top-level run; nested-run messages only when opened.
    pub fn primary<'a>(
        &'a self,
        top_level_run: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Message> + 'a {
        self.messages
            .iter()
            .filter(move |m| match (&m.run_id, &m.root_run_id) {
                (Some(run), Some(root)) => run == root && Some(run.as_str()) == top_level_run,
                _ => true,
            })
    }
}
