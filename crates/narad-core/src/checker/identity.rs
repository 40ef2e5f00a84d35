//! Event identity (§4.1): a redelivery of the same fact is a no-op, the
//! same eventId with other data is refused. Content is compared by a
//! fingerprint of the parsed value, so a re-encoded redelivery matches.

use super::*;

/// `Some(Duplicate)` for an identical redelivery, an error for the same id
/// with different data, `None` for an id not seen yet. Records nothing: the
/// caller records the id once the event is accepted.
pub(super) fn dedup(seen: &Seen, event_id: &str, fp: u64) -> R<Option<Applied>> {
    match seen.get(event_id) {
        Some(prev) if prev == seen::fold(fp) => Ok(Some(Applied::Duplicate)),
        Some(_) => fail(
            "duplicate_event_conflict",
            "4.1",
            format!("eventId {event_id} was delivered before with different data"),
        ),
        None => Ok(None),
    }
}

/// The content fingerprint (see [`crate::fingerprint`]).
pub(super) fn fingerprint(wire: &crate::Wire) -> u64 {
    wire.fingerprint()
}
