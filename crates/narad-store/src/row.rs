//! Decoding a stored row, checked against the key it was found under.
//!
//! Every backend keeps an event's exact bytes under a key: `(session,
//! sessionSequence)`, and for the run-tree and workflow indexes also the
//! scope position. A read must never trust the bytes over the key: a
//! damaged store (a row copied over another, a row of one session under
//! another's key) would otherwise hand a reader a cursor that goes
//! backwards, and a paging loop built on it never ends. So every read
//! decodes through [`decode_event`] or [`decode_scoped_event`], which
//! refuse bytes that disagree with their key with a typed
//! [`StoreError::Corrupt`], and every paging loop moves its cursor through
//! [`advance`], which refuses a cursor that does not grow.
//!
//! Both decoders are safe on arbitrary bytes: they never panic, and their
//! work is bounded by the record limits of [`narad_core::Limits`] (bytes
//! past `max_record_bytes` are refused before they are parsed).
//!
//! ```
//! use bytes::Bytes;
//! use narad_store::{row, Damage, StoreError};
//! let line = br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;
//! let ev = row::decode_event("s", 1, Bytes::from_static(line)).unwrap();
//! assert_eq!(ev.position.session_sequence, 1);
//! // The same bytes under another key are damage, not an event.
//! let err = row::decode_event("s", 4096, Bytes::from_static(line)).unwrap_err();
//! assert!(matches!(err, StoreError::Corrupt { damage: Damage::WrongPosition, position: Some(4096), .. }));
//! assert_eq!(row::decode_event("t", 1, Bytes::from_static(line)).unwrap_err().code(), "corrupt");
//! ```

use bytes::Bytes;
use narad_core::{Parsed, Record, Validator};

use crate::{Scope, StoreError, StoredEvent};

/// What kind of damage a [`StoreError::Corrupt`] reports. The machine
/// names ([`Damage::code`]) are stable; `narad verify` counts by them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Damage {
    /// The row holds an event of another session.
    ForeignSession,
    /// The row holds an event of another position (session or scope).
    WrongPosition,
    /// The row's bytes are not a valid authority event.
    Unreadable,
    /// An index entry names an event row that is not there.
    MissingEvent,
    /// A paging cursor did not advance past the previous page.
    CursorStalled,
    /// A column holds a value of another type than the layout's.
    WrongType,
    /// The head record counts events that are not stored.
    MissingRows,
    /// Events are stored past the head record.
    RowsPastHead,
    /// The stored positions are not contiguous from 1.
    Gap,
    /// The backend's own structures are damaged (its integrity check
    /// failed, or its reader failed on them).
    File,
    /// The eventId index names an event that carries another eventId.
    WrongEventId,
}

impl Damage {
    /// Stable machine name of the damage kind.
    pub const fn code(self) -> &'static str {
        match self {
            Self::ForeignSession => "foreign_session",
            Self::WrongPosition => "wrong_position",
            Self::Unreadable => "unreadable",
            Self::MissingEvent => "missing_event",
            Self::CursorStalled => "cursor_stalled",
            Self::WrongType => "wrong_type",
            Self::MissingRows => "missing_rows",
            Self::RowsPastHead => "rows_past_head",
            Self::Gap => "gap",
            Self::File => "file",
            Self::WrongEventId => "wrong_event_id",
        }
    }

    const fn describe(self) -> &'static str {
        match self {
            Self::ForeignSession => "the row holds an event of another session",
            Self::WrongPosition => "the row holds an event of another position",
            Self::Unreadable => "the row is not a valid authority event",
            Self::MissingEvent => "an index entry names an event that is not stored",
            Self::CursorStalled => "a read cursor did not advance",
            Self::WrongType => "a column holds a value of the wrong type",
            Self::MissingRows => "the head record counts events that are not stored",
            Self::RowsPastHead => "events are stored past the head record",
            Self::Gap => "stored positions are not contiguous",
            Self::File => "the store's own structures are damaged",
            Self::WrongEventId => "the eventId index names an event of another id",
        }
    }
}

/// The text of a [`StoreError::Corrupt`]: where, then what.
pub(crate) fn damage_message(
    path: Option<&str>,
    session: Option<&str>,
    position: Option<u64>,
    damage: Damage,
) -> String {
    let mut out = String::from("damaged store");
    if let Some(p) = path {
        out.push_str(&format!(" {p}"));
    }
    if let Some(s) = session {
        out.push_str(&format!(", session `{s}`"));
    }
    if let Some(n) = position {
        out.push_str(&format!(", position {n}"));
    }
    out.push_str(": ");
    out.push_str(damage.describe());
    out
}

fn corrupt(damage: Damage, session_id: &str, position: u64) -> StoreError {
    StoreError::corrupt(damage, Some(session_id), Some(position))
}

/// Decodes the bytes stored under `(session_id, session_sequence)`.
///
/// The bytes must parse as an authority event (within the default record
/// limits) whose `sessionId` and `sessionSequence` are the key's; anything
/// else is [`StoreError::Corrupt`] naming the session and position
/// ([`Damage::Unreadable`], [`Damage::ForeignSession`] or
/// [`Damage::WrongPosition`]). Never panics; work is bounded by the limits.
pub fn decode_event(
    session_id: &str,
    session_sequence: u64,
    bytes: Bytes,
) -> Result<StoredEvent, StoreError> {
    let ev = match Validator::default().parse_bytes(bytes) {
        Ok(Parsed::Record {
            record: Record::Authority(ev),
            ..
        }) => ev,
        _ => return Err(corrupt(Damage::Unreadable, session_id, session_sequence)),
    };
    if ev.envelope.session_id != session_id {
        return Err(corrupt(
            Damage::ForeignSession,
            session_id,
            session_sequence,
        ));
    }
    if ev.envelope.session_sequence != session_sequence {
        return Err(corrupt(Damage::WrongPosition, session_id, session_sequence));
    }
    Ok(StoredEvent::from(&ev))
}

/// Decodes the bytes the eventId index found for `event_id` at
/// `session_sequence`: as [`decode_event`], and the event must carry that
/// eventId ([`Damage::WrongEventId`] otherwise).
pub fn decode_found_event(
    session_id: &str,
    event_id: &str,
    session_sequence: u64,
    bytes: Bytes,
) -> Result<StoredEvent, StoreError> {
    let ev = decode_event(session_id, session_sequence, bytes)?;
    if ev.event_id != event_id {
        return Err(corrupt(Damage::WrongEventId, session_id, session_sequence));
    }
    Ok(ev)
}

/// The events a [`crate::Store::find_events`] found one id at a time, as
/// it returns them: in session order, each once (an id asked twice finds
/// its event twice).
pub fn in_session_order(mut found: Vec<StoredEvent>) -> Vec<StoredEvent> {
    found.sort_by_key(|e| e.position.session_sequence);
    found.dedup_by_key(|e| e.position.session_sequence);
    found
}

/// Decodes the bytes a run-tree or workflow index read found: as
/// [`decode_event`], and the event must also sit at `position` of the
/// scope `scope_id` (run-tree `sequence` under `rootRunId`, or
/// `workflowSequence` under `workflowId`).
pub fn decode_scoped_event(
    session_id: &str,
    session_sequence: u64,
    scope: Scope,
    scope_id: &str,
    position: u64,
    bytes: Bytes,
) -> Result<StoredEvent, StoreError> {
    let ev = decode_event(session_id, session_sequence, bytes)?;
    let at = match scope {
        Scope::Run => ev.position.run.as_ref(),
        Scope::Workflow => ev.position.workflow.as_ref(),
    };
    match at {
        Some((id, n)) if id == scope_id && *n == position => Ok(ev),
        _ => Err(corrupt(Damage::WrongPosition, session_id, session_sequence)),
    }
}

/// The next cursor of a paging loop over `session_id`: `to` when it is past
/// `from`, else [`StoreError::Corrupt`] ([`Damage::CursorStalled`]) — a
/// loop that re-reads from a cursor that did not grow would never end.
///
/// ```
/// use narad_store::row::advance;
/// assert_eq!(advance("s", 4, 9).unwrap(), 9);
/// assert_eq!(advance("s", 4096, 1).unwrap_err().code(), "corrupt");
/// ```
pub fn advance(session_id: &str, from: u64, to: u64) -> Result<u64, StoreError> {
    if to > from {
        Ok(to)
    } else {
        Err(corrupt(Damage::CursorStalled, session_id, to))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn arbitrary_and_oversized_bytes_are_unreadable_not_a_panic() {
        for junk in [
            &b""[..],
            b"\xff\xfe",
            b"[]",
            b"{\"sessionId\":1}",
            b"{{{{{{{{{{{{{{{{{{{{",
        ] {
            let e = decode_event("s", 1, Bytes::copy_from_slice(junk)).unwrap_err();
            assert!(matches!(
                e,
                StoreError::Corrupt {
                    damage: Damage::Unreadable,
                    ..
                }
            ));
        }
        let big = Bytes::from(vec![b' '; 600_000]);
        assert_eq!(decode_event("s", 1, big).unwrap_err().code(), "corrupt");
    }

    #[test]
    fn the_message_names_path_session_and_position() {
        let e = StoreError::corrupt(Damage::WrongPosition, Some("s"), Some(4096))
            .at_path(std::path::Path::new("/x/y.sqlite"));
        let text = e.to_string();
        assert!(text.contains("/x/y.sqlite") && text.contains("`s`") && text.contains("4096"));
        assert!(!text.contains("corrupt"), "{text}");
    }
}
