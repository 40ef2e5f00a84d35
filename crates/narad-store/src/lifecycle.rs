//! Deleting a session, as the store contract defines it.
//!
//! A delete is an ordinary [`Batch`] of the session with no events that
//! writes the session's own tombstone ([`SideSpace::Tombstone`], key = the
//! session id, [`Expect::Absent`]). [`crate::plan_batch`] recognizes it
//! ([`is_purge`]) and every backend then removes the session's whole
//! journal — events, event-id index, run-tree and workflow indexes, head —
//! in the same transaction as the batch's side writes, which delete the
//! session's records in the other spaces (the engine names them: only it
//! knows which interrupt, token, timer and queue keys are the session's).
//! The batch is guarded by the session head like any other, so a delete
//! never races an append unseen.
//!
//! From then on every batch of the session is refused with
//! [`StoreError::SessionDeleted`](crate::StoreError::SessionDeleted)
//! (code `session_deleted`), a redelivery of an event it once held
//! included: the id is never silently reused.
//!
//! ```
//! use bytes::Bytes;
//! use narad_store::{lifecycle, SideSpace};
//! let b = lifecycle::delete_batch(
//!     "s-1",
//!     7,
//!     [(SideSpace::Snapshot, "s-1".to_owned())],
//!     Bytes::from_static(b"{\"v\":1}"),
//! );
//! assert!(lifecycle::is_purge(&b));
//! assert_eq!(b.side.len(), 2);
//! ```

use bytes::Bytes;

use crate::{Batch, Expect, SideSpace, SideWrite};

/// The read [`crate::plan_batch`] makes of a session's tombstone.
pub(crate) fn tombstone_probe(session_id: &str) -> SideWrite {
    SideWrite {
        space: SideSpace::Tombstone,
        key: session_id.to_owned(),
        expect: Expect::Any,
        value: None,
    }
}

/// Whether `batch` deletes its session: it writes the session's own
/// tombstone.
pub fn is_purge(batch: &Batch) -> bool {
    !batch.session_id.is_empty()
        && batch.side.iter().any(|w| {
            w.space == SideSpace::Tombstone && w.key == batch.session_id && w.value.is_some()
        })
}

/// The batch deleting `session_id` at `expected_head`: the tombstone
/// (`tombstone` is the caller's record, opaque here) and the unconditional
/// deletion of each of `records`.
pub fn delete_batch(
    session_id: &str,
    expected_head: u64,
    records: impl IntoIterator<Item = (SideSpace, String)>,
    tombstone: Bytes,
) -> Batch {
    let mut side: Vec<SideWrite> = records
        .into_iter()
        .filter(|(space, _)| *space != SideSpace::Tombstone)
        .map(|(space, key)| SideWrite {
            space,
            key,
            expect: Expect::Any,
            value: None,
        })
        .collect();
    side.sort_by(|a, b| (a.space, &a.key).cmp(&(b.space, &b.key)));
    side.dedup_by(|a, b| a.space == b.space && a.key == b.key);
    side.push(SideWrite {
        space: SideSpace::Tombstone,
        key: session_id.to_owned(),
        expect: Expect::Absent,
        value: Some(tombstone),
    });
    Batch {
        session_id: session_id.to_owned(),
        expected_head,
        side,
        ..Batch::default()
    }
}
