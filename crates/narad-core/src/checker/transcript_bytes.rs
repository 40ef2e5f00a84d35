//! A transcript's messages, and its reasoning streams, as two binary
//! snapshot parts, so that a restore decodes a long conversation without
//! parsing it as JSON (and can decode the two on two threads).
//!
//! ```text
//! messages part = count: varint | message*
//! reasoning part = count: varint | reasoning*
//! message = flags: u8 | messageId | role | scope | [runId] | [rootRunId]
//!           | content | [redacted text] | [count: varint | attachmentId*]
//! reasoning = flags: u8 | reasoningId | [messageId] | content
//! string = length: varint | UTF-8 bytes
//! ```
//!
//! A bracketed field is present when its flag is set. A flag this build
//! does not know, a string that is not UTF-8, a count the bytes cannot
//! hold, or bytes after the last entry refuse the part (`None`).

use super::arena::{put_str, put_varint, take_str, varint};
use super::conversation::{Message, Reasoning};
use super::id_index::Hashes;
use super::Label;

const COMPLETED: u8 = 1;
const RUN_ID: u8 = 2;
const ROOT_RUN_ID: u8 = 4;
const REDACTED: u8 = 8;
/// `redacted` is `Some(Some(text))`; with [`REDACTED`] alone it is hidden.
const REDACTED_TEXT: u8 = 16;
const ATTACHMENTS: u8 = 32;
const KNOWN: u8 = COMPLETED | RUN_ID | ROOT_RUN_ID | REDACTED | REDACTED_TEXT | ATTACHMENTS;

/// A reasoning stream's flags: [`COMPLETED`] and this one.
const MESSAGE_ID: u8 = 2;
const KNOWN_REASONING: u8 = COMPLETED | MESSAGE_ID;

/// The smallest message: flags and four empty strings.
const MIN_MESSAGE: usize = 5;
/// The smallest reasoning stream: flags and two empty strings.
const MIN_REASONING: usize = 3;

/// Appends the reasoning part of `reasoning`.
pub(super) fn write_reasoning(reasoning: &[Reasoning], out: &mut Vec<u8>) {
    put_varint(out, reasoning.len() as u64);
    for r in reasoning {
        let mut flags = 0;
        if r.completed {
            flags |= COMPLETED;
        }
        if r.message_id.is_some() {
            flags |= MESSAGE_ID;
        }
        out.push(flags);
        put_str(out, &r.reasoning_id);
        if let Some(m) = &r.message_id {
            put_str(out, m);
        }
        put_str(out, &r.content);
    }
}

/// The reasoning streams [`write_reasoning`] wrote; `None` for any other
/// bytes.
pub(super) fn read_reasoning(b: &[u8]) -> Option<(Vec<Reasoning>, Hashes)> {
    let mut at = 0;
    let count = varint(b, &mut at)?;
    if count > b.len().saturating_sub(at) / MIN_REASONING {
        return None;
    }
    let mut reasoning = Vec::with_capacity(count);
    let mut hashes = Hashes::with_capacity(count);
    for _ in 0..count {
        let flags = *b.get(at)?;
        at += 1;
        if flags & !KNOWN_REASONING != 0 {
            return None;
        }
        let reasoning_id = take_str(b, &mut at)?;
        hashes.push(reasoning_id)?;
        let reasoning_id = reasoning_id.to_owned();
        let message_id = match flags & MESSAGE_ID != 0 {
            true => Some(take_str(b, &mut at)?.to_owned()),
            false => None,
        };
        let content = take_str(b, &mut at)?.to_owned();
        reasoning.push(Reasoning {
            reasoning_id,
            message_id,
            content,
            completed: flags & COMPLETED != 0,
        });
    }
    (at == b.len()).then_some((reasoning, hashes))
}

/// Appends the messages part of `messages`.
pub(super) fn write_messages(messages: &[Message], out: &mut Vec<u8>) {
    put_varint(out, messages.len() as u64);
    for m in messages {
        let mut flags = 0;
        for (on, bit) in [
            (m.completed, COMPLETED),
            (m.run_id.is_some(), RUN_ID),
            (m.root_run_id.is_some(), ROOT_RUN_ID),
            (m.redacted.is_some(), REDACTED),
            (matches!(m.redacted, Some(Some(_))), REDACTED_TEXT),
            (!m.attachment_ids.is_empty(), ATTACHMENTS),
        ] {
            if on {
                flags |= bit;
            }
        }
        out.push(flags);
        put_str(out, &m.message_id);
        put_str(out, &m.role);
        put_str(out, &m.scope);
        for s in [&m.run_id, &m.root_run_id].into_iter().flatten() {
            put_str(out, s);
        }
        put_str(out, &m.content);
        if let Some(Some(text)) = &m.redacted {
            put_str(out, text);
        }
        if !m.attachment_ids.is_empty() {
            put_varint(out, m.attachment_ids.len() as u64);
            for a in &m.attachment_ids {
                put_str(out, a);
            }
        }
    }
}

/// The messages [`write_messages`] wrote; `None` for any other bytes.
pub(super) fn read_messages(b: &[u8]) -> Option<(Vec<Message>, Hashes)> {
    let mut at = 0;
    let at = &mut at;
    let count = varint(b, at)?;
    if count > b.len().saturating_sub(*at) / MIN_MESSAGE {
        return None;
    }
    let mut messages = Vec::with_capacity(count);
    let mut hashes = Hashes::with_capacity(count);
    let string = |at: &mut usize| take_str(b, at).map(str::to_owned);
    for _ in 0..count {
        let flags = *b.get(*at)?;
        *at += 1;
        if flags & !KNOWN != 0 || (flags & REDACTED_TEXT != 0 && flags & REDACTED == 0) {
            return None;
        }
        let message_id = take_str(b, at)?;
        hashes.push(message_id)?;
        let message_id = message_id.to_owned();
        // Known words are held without a copy (`Label`).
        let role = take_str(b, at).map(Label::new)?;
        let scope = take_str(b, at).map(Label::new)?;
        let run_id = (flags & RUN_ID != 0).then(|| string(at)).flatten();
        let root_run_id = (flags & ROOT_RUN_ID != 0).then(|| string(at)).flatten();
        if run_id.is_none() == (flags & RUN_ID != 0)
            || root_run_id.is_none() == (flags & ROOT_RUN_ID != 0)
        {
            return None;
        }
        let content = string(at)?;
        let redacted = match (flags & REDACTED != 0, flags & REDACTED_TEXT != 0) {
            (false, _) => None,
            (true, false) => Some(None),
            (true, true) => Some(Some(string(at)?)),
        };
        let mut attachment_ids = Vec::new();
        if flags & ATTACHMENTS != 0 {
            let n = varint(b, at)?;
            if n == 0 || n > b.len().saturating_sub(*at) {
                return None;
            }
            attachment_ids.reserve(n);
            for _ in 0..n {
                attachment_ids.push(string(at)?);
            }
        }
        messages.push(Message {
            message_id,
            role,
            scope,
            run_id,
            root_run_id,
            content,
            completed: flags & COMPLETED != 0,
            redacted,
            attachment_ids,
        });
    }
    (*at == b.len()).then_some((messages, hashes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages() -> Vec<Message> {
        let m = |id: &str| Message {
            message_id: id.into(),
            role: "user".into(),
            scope: "session".into(),
            run_id: None,
            root_run_id: None,
            content: format!("text of {id}"),
            completed: true,
            redacted: None,
            attachment_ids: Vec::new(),
        };
        let mut all = vec![m("u1"), m("a2"), m("a3"), m("u4"), m("")];
        all[1].role = "assistant".into();
        all[1].scope = "run".into();
        all[1].run_id = Some("child".into());
        all[1].root_run_id = Some("root".into());
        all[1].completed = false;
        all[1].content = "näive ☃ \"quoted\"\n".into();
        all[2].redacted = Some(None);
        all[3].redacted = Some(Some("[removed]".into()));
        all[3].attachment_ids = vec!["att-1".into(), "att-2".into()];
        all[4].content.clear();
        all
    }

    fn reasoning() -> Vec<Reasoning> {
        let r = |id: &str, message: Option<&str>, completed| Reasoning {
            reasoning_id: id.into(),
            message_id: message.map(Into::into),
            content: format!("thinking about {id} ☃"),
            completed,
        };
        vec![
            r("r1", Some("a2"), true),
            r("r2", None, false),
            r("", Some(""), true),
        ]
    }

    #[test]
    fn messages_and_reasoning_round_trip_exactly() {
        for n in 0..=5 {
            let mut out = Vec::new();
            write_messages(&messages()[..n], &mut out);
            assert_eq!(
                read_messages(&out).map(|r| r.0),
                Some(messages()[..n].to_vec())
            );
        }
        for n in 0..=reasoning().len() {
            let mut out = Vec::new();
            write_reasoning(&reasoning()[..n], &mut out);
            assert_eq!(
                read_reasoning(&out).map(|r| r.0),
                Some(reasoning()[..n].to_vec())
            );
        }
    }

    /// Storage contents: every cut, every flipped bit and a trailing byte
    /// either refuse the part or decode without a panic.
    #[test]
    fn cut_or_flipped_bytes_never_panic() {
        let mut messages_part = Vec::new();
        write_messages(&messages(), &mut messages_part);
        let mut reasoning_part = Vec::new();
        write_reasoning(&reasoning(), &mut reasoning_part);
        fn each_damage<T>(out: &[u8], read: impl Fn(&[u8]) -> Option<T>) {
            assert!(read(out).is_some());
            for cut in 0..out.len() {
                assert!(read(&out[..cut]).is_none(), "cut at {cut}");
            }
            let mut longer = out.to_vec();
            longer.push(0);
            assert!(read(&longer).is_none());
            for i in 0..out.len() {
                for bit in 0..8 {
                    let mut bad = out.to_vec();
                    bad[i] ^= 1 << bit;
                    let _ = read(&bad);
                }
            }
            // A count the bytes cannot hold allocates nothing.
            assert!(read(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_none());
        }
        each_damage(&messages_part, read_messages);
        each_damage(&reasoning_part, read_reasoning);
        // A flag this build does not know: the first entry's flags follow
        // a one-byte count.
        let mut unknown = messages_part.clone();
        unknown[1] |= 64;
        assert!(read_messages(&unknown).is_none());
        let mut unknown = reasoning_part.clone();
        unknown[1] |= 4;
        assert!(read_reasoning(&unknown).is_none());
    }
}
