//! A transcript's reasoning streams as a binary snapshot part, so that a
//! restore decodes them without parsing JSON (its messages are a part of
//! their own: [`super::packed_messages`]).
//!
//! ```text
//! reasoning part = count: varint | reasoning*
//! reasoning = flags: u8 | reasoningId | [messageId] | content
//! string = length: varint | UTF-8 bytes
//! ```
//!
//! A bracketed field is present when its flag is set. A flag this build
//! does not know, a string that is not UTF-8, a count the bytes cannot
//! hold, or bytes after the last entry refuse the part (`None`).

use super::arena::{put_str, put_varint, take_str, varint};
use super::conversation::Reasoning;
use super::id_index::Hashes;

const COMPLETED: u8 = 1;
/// A reasoning stream's flags: [`COMPLETED`] and this one.
const MESSAGE_ID: u8 = 2;
const KNOWN_REASONING: u8 = COMPLETED | MESSAGE_ID;

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn reasoning_round_trips_exactly() {
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
        let mut out = Vec::new();
        write_reasoning(&reasoning(), &mut out);
        assert!(read_reasoning(&out).is_some());
        for cut in 0..out.len() {
            assert!(read_reasoning(&out[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = out.clone();
        longer.push(0);
        assert!(read_reasoning(&longer).is_none());
        for i in 0..out.len() {
            for bit in 0..8 {
                let mut bad = out.clone();
                bad[i] ^= 1 << bit;
                let _ = read_reasoning(&bad);
            }
        }
        // A count the bytes cannot hold allocates nothing.
        assert!(read_reasoning(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_none());
        // A flag this build does not know: the first entry's flags follow
        // a one-byte count.
        let mut unknown = out.clone();
        unknown[1] |= 4;
        assert!(read_reasoning(&unknown).is_none());
    }
}
