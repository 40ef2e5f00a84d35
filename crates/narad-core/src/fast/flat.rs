//! The members a fast record may carry, read by hand from its text in one
//! pass: each member name is matched once, a string without escapes is
//! copied (or borrowed) straight from the text, and only nested values
//! (`args`, `usage`, …) and escaped strings go through serde_json.
//!
//! A serde-derived reader of the same struct spent most of the fast path's
//! time in its generic member machinery (one visitor over every optional
//! field); this one reads exactly what serde_json would, and declines
//! (`None`) wherever it is not sure of that: a member name with an escape,
//! a name it does not know, a repeated name, `null` for a string or
//! number, an escaped string where the record only borrows, a number that
//! is not a plain unsigned integer, and any syntax error. The slow path
//! then decides, so a decline never changes a verdict.

use crate::json::StrictValue;

/// Every member any fast type may carry.
#[derive(Default)]
pub(super) struct Flat<'a> {
    pub ty: &'a str,
    pub protocol_version: &'a str,
    pub event_id: String,
    pub timestamp: String,
    pub session_id: String,
    pub session_sequence: u64,
    pub workflow_id: Option<String>,
    pub workflow_sequence: Option<u64>,
    pub root_run_id: Option<String>,
    pub run_id: Option<String>,
    pub sequence: Option<u64>,
    pub parent_run_id: Option<String>,
    pub parent_tool_call_id: Option<String>,
    // The payload members of the fast types.
    pub client_executor_id: Option<String>,
    pub usage: Option<StrictValue>,
    pub tool_call_id: Option<String>,
    pub tool_name: Option<String>,
    pub executor: Option<&'a str>,
    pub args: Option<StrictValue>,
    pub outcome: Option<&'a str>,
    pub response: Option<StrictValue>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub interrupt_id: Option<String>,
    pub wait_id: Option<String>,
    pub kind: Option<String>,
    pub actions: Option<Vec<String>>,
    pub scope: Option<&'a str>,
    pub expires_at: Option<String>,
    pub title: Option<String>,
    pub input: Option<StrictValue>,
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub progress_id: Option<String>,
    pub category: Option<String>,
    pub label: Option<String>,
    pub detail: Option<String>,
    pub status: Option<&'a str>,
    pub privacy: Option<&'a str>,
    pub name: Option<String>,
    pub value: Option<StrictValue>,
    pub message_id: Option<String>,
    pub delta: Option<String>,
    pub role: Option<&'a str>,
    pub message_scope: Option<&'a str>,
    pub reasoning_id: Option<String>,
    pub content: Option<String>,
    pub resume_mode: Option<&'a str>,
    pub retry_at: Option<String>,
}

/// Sets an absent member; a repeated one declines.
macro_rules! once {
    ($slot:expr, $value:expr) => {{
        if $slot.is_some() {
            return None;
        }
        $slot = Some($value);
    }};
}

impl<'a> Flat<'a> {
    /// The members of the one JSON object `text` holds (with nothing but
    /// whitespace around it), or `None` to decline (see the module docs).
    /// The six envelope members every record carries must be present.
    pub(super) fn read(text: &'a str) -> Option<Self> {
        let mut c = Cursor { text, at: 0 };
        let mut f = Flat::default();
        let (mut ty, mut version, mut event_id, mut timestamp) = (None, None, None, None);
        let (mut session_id, mut session_sequence) = (None, None);
        c.ws();
        c.eat(b'{')?;
        c.ws();
        // An empty object lacks the envelope members.
        if c.peek()? == b'}' {
            return None;
        }
        loop {
            let key = c.borrowed()?;
            c.ws();
            c.eat(b':')?;
            c.ws();
            match key {
                "type" => once!(ty, c.borrowed()?),
                "protocolVersion" => once!(version, c.borrowed()?),
                "eventId" => once!(event_id, c.string()?),
                "timestamp" => once!(timestamp, c.string()?),
                "sessionId" => once!(session_id, c.string()?),
                "sessionSequence" => once!(session_sequence, c.uint()?),
                "workflowId" => once!(f.workflow_id, c.string()?),
                "workflowSequence" => once!(f.workflow_sequence, c.uint()?),
                "rootRunId" => once!(f.root_run_id, c.string()?),
                "runId" => once!(f.run_id, c.string()?),
                "sequence" => once!(f.sequence, c.uint()?),
                "parentRunId" => once!(f.parent_run_id, c.string()?),
                "parentToolCallId" => once!(f.parent_tool_call_id, c.string()?),
                "clientExecutorId" => once!(f.client_executor_id, c.string()?),
                "usage" => once!(f.usage, c.value()?),
                "toolCallId" => once!(f.tool_call_id, c.string()?),
                "toolName" => once!(f.tool_name, c.string()?),
                "executor" => once!(f.executor, c.borrowed()?),
                "args" => once!(f.args, c.value()?),
                "outcome" => once!(f.outcome, c.borrowed()?),
                "response" => once!(f.response, c.value()?),
                "code" => once!(f.code, c.string()?),
                "message" => once!(f.message, c.string()?),
                "interruptId" => once!(f.interrupt_id, c.string()?),
                "waitId" => once!(f.wait_id, c.string()?),
                "kind" => once!(f.kind, c.string()?),
                "actions" => once!(f.actions, c.strings()?),
                "scope" => once!(f.scope, c.borrowed()?),
                "expiresAt" => once!(f.expires_at, c.string()?),
                "title" => once!(f.title, c.string()?),
                "input" => once!(f.input, c.value()?),
                "decision" => once!(f.decision, c.string()?),
                "reason" => once!(f.reason, c.string()?),
                "progressId" => once!(f.progress_id, c.string()?),
                "category" => once!(f.category, c.string()?),
                "label" => once!(f.label, c.string()?),
                "detail" => once!(f.detail, c.string()?),
                "status" => once!(f.status, c.borrowed()?),
                "privacy" => once!(f.privacy, c.borrowed()?),
                "name" => once!(f.name, c.string()?),
                "value" => once!(f.value, c.value()?),
                "messageId" => once!(f.message_id, c.string()?),
                "delta" => once!(f.delta, c.string()?),
                "role" => once!(f.role, c.borrowed()?),
                "messageScope" => once!(f.message_scope, c.borrowed()?),
                "reasoningId" => once!(f.reasoning_id, c.string()?),
                "content" => once!(f.content, c.string()?),
                "resumeMode" => once!(f.resume_mode, c.borrowed()?),
                "retryAt" => once!(f.retry_at, c.string()?),
                _ => return None,
            }
            c.ws();
            match c.next()? {
                b',' => c.ws(),
                b'}' => break,
                _ => return None,
            }
        }
        c.ws();
        if c.at != text.len() {
            return None;
        }
        f.ty = ty?;
        f.protocol_version = version?;
        f.event_id = event_id?;
        f.timestamp = timestamp?;
        f.session_id = session_id?;
        f.session_sequence = session_sequence?;
        Some(f)
    }

    /// Whether no payload member is present.
    pub(super) fn has_no_body(&self) -> bool {
        self.client_executor_id.is_none()
            && self.content.is_none()
            && self.usage.is_none()
            && self.tool_call_id.is_none()
            && self.tool_name.is_none()
            && self.executor.is_none()
            && self.args.is_none()
            && self.outcome.is_none()
            && self.response.is_none()
            && self.code.is_none()
            && self.message.is_none()
            && self.interrupt_id.is_none()
            && self.wait_id.is_none()
            && self.kind.is_none()
            && self.actions.is_none()
            && self.scope.is_none()
            && self.expires_at.is_none()
            && self.title.is_none()
            && self.input.is_none()
            && self.decision.is_none()
            && self.reason.is_none()
            && self.progress_id.is_none()
            && self.category.is_none()
            && self.label.is_none()
            && self.detail.is_none()
            && self.status.is_none()
            && self.privacy.is_none()
            && self.name.is_none()
            && self.value.is_none()
            && self.message_id.is_none()
            && self.delta.is_none()
            && self.role.is_none()
            && self.message_scope.is_none()
            && self.reasoning_id.is_none()
            && self.resume_mode.is_none()
            && self.retry_at.is_none()
    }
}

/// The bytes that end a run of plain string content: a quote, a
/// backslash, and the control characters a JSON string must escape.
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A position in the record's text.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's whitespace, exactly (not form feed or other ASCII space).
    fn ws(&mut self) {
        let b = self.text.as_bytes();
        while matches!(b.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The string token at the cursor, quotes included, and whether it
    /// holds an escape. Declines a raw control character, which JSON
    /// strings must escape.
    fn token(&mut self) -> Option<(&'a str, bool)> {
        let b = self.text.as_bytes();
        let start = self.at;
        (b.get(start) == Some(&b'"')).then_some(())?;
        let mut at = start + 1;
        let mut escaped = false;
        loop {
            // One table lookup a byte: most strings here are a few bytes,
            // where a SIMD search costs more to set up than it saves.
            while !SPECIAL[usize::from(*b.get(at)?)] {
                at += 1;
            }
            match b[at] {
                b'"' => break,
                // Skip the byte it escapes (a `\"` is not the end);
                // serde_json checks the escape itself.
                b'\\' => {
                    escaped = true;
                    at += 2;
                }
                _ => return None,
            }
        }
        self.at = at + 1;
        // Both ends are ASCII quotes, so these are char boundaries.
        Some((self.text.get(start..=at)?, escaped))
    }

    /// A string with no escape, borrowed from the text.
    fn borrowed(&mut self) -> Option<&'a str> {
        match self.token()? {
            (t, false) => t.get(1..t.len() - 1),
            (_, true) => None,
        }
    }

    /// A string, unescaped by serde_json when it holds an escape.
    fn string(&mut self) -> Option<String> {
        match self.token()? {
            (t, false) => t.get(1..t.len() - 1).map(str::to_owned),
            (t, true) => serde_json::from_str(t).ok(),
        }
    }

    /// A plain unsigned integer that fits a `u64`, as serde_json reads one
    /// into a `u64`: no sign, fraction, exponent or leading zero.
    fn uint(&mut self) -> Option<u64> {
        let b = self.text.as_bytes();
        let start = self.at;
        let end = start
            + b.get(start..)?
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
        let digits = self.text.get(start..end)?;
        if digits.len() > 1 && digits.starts_with('0') {
            return None;
        }
        if matches!(b.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        // Digits only, so `parse` refuses nothing but an empty run and
        // overflow.
        let n = digits.parse().ok()?;
        self.at = end;
        Some(n)
    }

    /// An array of strings.
    fn strings(&mut self) -> Option<Vec<String>> {
        self.eat(b'[')?;
        self.ws();
        let mut out = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(out);
        }
        loop {
            out.push(self.string()?);
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Some(out),
                _ => return None,
            }
        }
    }

    /// Any JSON value, parsed strictly by serde_json from the cursor on.
    fn value(&mut self) -> Option<StrictValue> {
        let rest = self.text.get(self.at..)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<StrictValue>();
        let v = values.next()?.ok()?;
        self.at += values.byte_offset();
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::Flat;

    const BASE: &str = r#""eventId":"e","protocolVersion":"narad/v1","sessionId":"s","sessionSequence":1,"timestamp":"t","type":"run.started""#;

    fn read(members: &str) -> Option<Flat<'_>> {
        Flat::read(members)
    }

    #[test]
    fn a_plain_record_is_read() {
        let text = format!("{{{BASE}}}");
        let f = read(&text).unwrap();
        assert_eq!(
            (f.ty, f.event_id.as_str(), f.session_sequence),
            ("run.started", "e", 1)
        );
        let text = format!(" \n{{ \"delta\" : \"a\\\"b\\u00e9\" ,\t{BASE} }}\r\n");
        assert_eq!(read(&text).unwrap().delta.as_deref(), Some("a\"bé"));
        let text = format!(r#"{{"actions":["a","b\n"],"args":{{"x":[1,null]}},{BASE}}}"#);
        let f = read(&text).unwrap();
        assert_eq!(f.actions.unwrap(), ["a", "b\n"]);
        assert_eq!(f.args.unwrap().0, serde_json::json!({"x": [1, null]}));
    }

    /// Every member the reader knows is read into its field: a name
    /// spelled otherwise in its arm would be declined.
    #[test]
    fn every_known_member_is_read() {
        let text = concat!(
            "{",
            r#""type":"run.started","#,
            r#""protocolVersion":"narad/v1","#,
            r#""eventId":"x","#,
            r#""timestamp":"x","#,
            r#""sessionId":"x","#,
            r#""sessionSequence":1,"#,
            r#""workflowId":"x","#,
            r#""workflowSequence":1,"#,
            r#""rootRunId":"x","#,
            r#""runId":"x","#,
            r#""sequence":1,"#,
            r#""parentRunId":"x","#,
            r#""parentToolCallId":"x","#,
            r#""clientExecutorId":"x","#,
            r#""usage":{},"#,
            r#""toolCallId":"x","#,
            r#""toolName":"x","#,
            r#""executor":"x","#,
            r#""args":{},"#,
            r#""outcome":"x","#,
            r#""response":{},"#,
            r#""code":"x","#,
            r#""message":"x","#,
            r#""interruptId":"x","#,
            r#""waitId":"x","#,
            r#""kind":"x","#,
            r#""actions":["a"],"#,
            r#""scope":"x","#,
            r#""expiresAt":"x","#,
            r#""title":"x","#,
            r#""input":{},"#,
            r#""decision":"x","#,
            r#""reason":"x","#,
            r#""progressId":"x","#,
            r#""category":"x","#,
            r#""label":"x","#,
            r#""detail":"x","#,
            r#""status":"x","#,
            r#""privacy":"x","#,
            r#""name":"x","#,
            r#""value":{},"#,
            r#""messageId":"x","#,
            r#""delta":"x","#,
            r#""role":"x","#,
            r#""messageScope":"x","#,
            r#""reasoningId":"x","#,
            r#""content":"x","#,
            r#""resumeMode":"x","#,
            r#""retryAt":"x""#,
            "}"
        );
        let f = read(text).unwrap();
        assert_eq!(
            (f.protocol_version, f.session_sequence, f.event_id.as_str()),
            ("narad/v1", 1, "x")
        );
        let present = [
            f.workflow_id.is_some(),
            f.workflow_sequence.is_some(),
            f.root_run_id.is_some(),
            f.run_id.is_some(),
            f.sequence.is_some(),
            f.parent_run_id.is_some(),
            f.parent_tool_call_id.is_some(),
            f.client_executor_id.is_some(),
            f.usage.is_some(),
            f.tool_call_id.is_some(),
            f.tool_name.is_some(),
            f.executor.is_some(),
            f.args.is_some(),
            f.outcome.is_some(),
            f.response.is_some(),
            f.code.is_some(),
            f.message.is_some(),
            f.interrupt_id.is_some(),
            f.wait_id.is_some(),
            f.kind.is_some(),
            f.actions.is_some(),
            f.scope.is_some(),
            f.expires_at.is_some(),
            f.title.is_some(),
            f.input.is_some(),
            f.decision.is_some(),
            f.reason.is_some(),
            f.progress_id.is_some(),
            f.category.is_some(),
            f.label.is_some(),
            f.detail.is_some(),
            f.status.is_some(),
            f.privacy.is_some(),
            f.name.is_some(),
            f.value.is_some(),
            f.message_id.is_some(),
            f.delta.is_some(),
            f.role.is_some(),
            f.message_scope.is_some(),
            f.reasoning_id.is_some(),
            f.content.is_some(),
            f.resume_mode.is_some(),
            f.retry_at.is_some(),
        ];
        assert!(present.iter().all(|p| *p), "{present:?}");
    }

    #[test]
    fn anything_unsure_is_declined() {
        for extra in [
            r#""unknown":1"#,
            r#""eventId":"again""#,
            r#""delta":null"#,
            r#""sequence":null"#,
            r#""sequence":-1"#,
            r#""sequence":1.0"#,
            r#""sequence":1e2"#,
            r#""sequence":01"#,
            r#""sequence":18446744073709551616"#,
            r#""executor":"back\u0065nd""#,
            r#""\u0064elta":"x""#,
            "\"delta\":\"a\tb\"",
            r#""delta":"\x""#,
            r#""delta":"\ud800""#,
            r#""actions":["a",]"#,
            r#""args":{"a":1,"a":2}"#,
            r#""args":"#,
        ] {
            let text = format!("{{{extra},{BASE}}}");
            assert!(read(&text).is_none(), "{text}");
        }
        for text in [
            format!("{{{BASE}}} x"),
            format!("{{{BASE},}}"),
            format!("\u{c}{{{BASE}}}"),
            format!("[{BASE}]"),
            format!("{{{BASE}"),
            "{}".to_owned(),
            r#"{"type":"run.started"}"#.to_owned(),
        ] {
            assert!(read(&text).is_none(), "{text}");
        }
        // A number ends at a delimiter; the largest u64 is read.
        let text = format!(r#"{{"sequence":18446744073709551615,{BASE}}}"#);
        assert_eq!(read(&text).unwrap().sequence, Some(u64::MAX));
    }
}
