//! Event identity (§4.1): a redelivery of the same fact is a no-op, the
//! same eventId with other data is refused. Content is compared by a
//! fingerprint of the parsed value, so a re-encoded redelivery matches.
//!
//! A host whose store keeps every event's id may let the checker forget
//! them (a snapshot without them, or in place) and give back the stored
//! events a record's id may name before it is pushed.

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

impl Checker {
    /// [`Checker::snapshot`] without the sessions' dedup sets, for a host
    /// whose store keeps every event's id and finds events by it (§4.1;
    /// every Narad store does: `narad_store::Store::find_events`). The
    /// dedup set grows by an
    /// entry an event, so without it a snapshot follows open work rather
    /// than history. A checker that leaves closed history to the store
    /// ([`Checker::leave_closed_to_store`]) also leaves out the closed
    /// runs and tool calls it handed over.
    ///
    /// A checker restored from it does not know the eventIds of the
    /// events the snapshot covers. Before it pushes a record whose id may
    /// be one of them ([`Checker::may_have_forgotten`]), the host gives it
    /// the stored event of that id, if any ([`Checker::recall`]); it then
    /// decides as a checker that never forgot. Workspace watch streams keep
    /// their dedup sets.
    ///
    /// ```
    /// use narad_core::{checker::Checker, Validator};
    ///
    /// let line = br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;
    /// let mut c = Checker::default();
    /// c.push_bytes(line).unwrap();
    /// let mut restored = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
    /// // The redelivery of `e1` needs its stored event first.
    /// assert!(restored.may_have_forgotten("s", "e1"));
    /// assert!(restored.recall("s", line));
    /// assert!(!restored.may_have_forgotten("s", "e1"));
    /// assert_eq!(restored.push_bytes(line), Ok(narad_core::checker::Applied::Duplicate));
    /// ```
    pub fn snapshot_for_store(&self) -> Vec<u8> {
        snapshot::write(self, snapshot::EventIds::Omitted)
    }

    /// Drops every session's dedup set, as a restore from
    /// [`Checker::snapshot_for_store`] would: for a host whose store keeps
    /// each event's id. The ids are recalled as after such a restore
    /// ([`Checker::may_have_forgotten`], [`Checker::recall`]), so a
    /// long-lived checker's dedup set holds only the events pushed since.
    ///
    /// ```
    /// use narad_core::checker::{Applied, Checker};
    ///
    /// let line = br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;
    /// let mut c = Checker::default();
    /// c.push_bytes(line).unwrap();
    /// c.forget_event_ids();
    /// assert!(c.may_have_forgotten("s", "e1"));
    /// assert!(c.recall("s", line));
    /// assert_eq!(c.push_bytes(line), Ok(Applied::Duplicate));
    /// ```
    pub fn forget_event_ids(&mut self) {
        for s in self.sessions.values_mut() {
            s.seen = Seen::default();
            s.ids_before = s.head;
        }
    }

    /// Whether `event_id` may be the id of an event of `session_id` that
    /// this checker was restored without ([`Checker::snapshot_for_store`]):
    /// its host looks it up in the store and [`Checker::recall`]s it before
    /// pushing a record with that id. `false` when the checker holds every
    /// eventId of the session, or already holds this one.
    pub fn may_have_forgotten(&self, session_id: &str, event_id: &str) -> bool {
        self.sessions
            .get(session_id)
            .is_some_and(|s| s.ids_before > 0 && s.seen.get(event_id).is_none())
    }

    /// Gives back a stored event of `session_id` (its exact bytes, as the
    /// store holds them) that this checker was restored without: its
    /// eventId and content fingerprint join the dedup set, so a redelivery
    /// of it is a duplicate and the same id with other data is refused, as
    /// in a checker that never forgot. Nothing else changes. `false`, and
    /// nothing learned, for bytes that are not an authority event of that
    /// session at a position the snapshot covered.
    pub fn recall(&mut self, session_id: &str, stored: &[u8]) -> bool {
        let (env, fp) = match self.validator.parse(stored) {
            Ok(Parsed::Record {
                record: Record::Authority(ev),
                ..
            }) => (ev.envelope, fingerprint(&ev.wire)),
            Ok(Parsed::Ignorable {
                authority: Some(ev),
                ..
            }) => (ev.envelope, fingerprint(&ev.wire)),
            _ => return false,
        };
        let Some(s) = self.sessions.get_mut(session_id) else {
            return false;
        };
        if env.session_id != session_id || env.session_sequence > s.ids_before {
            return false;
        }
        s.seen.insert(&env.event_id, fp);
        true
    }
}
