//! The layout of [`Checker::snapshot`]: closed history as the packed bytes
//! the checker already holds, not rendered again, so a long session's
//! snapshot is small and restores without unpacking a record.
//!
//! ```text
//! magic "narad.ck" | format: u32 LE | part: JSON of the open state
//! then per session, in the JSON's session order:
//!   part: dedup set | part: closed runs arena | part: closed tool calls arena
//!   | part: transcript messages | part: transcript reasoning
//!   (format 13 only:) | part: id hashes of the messages in the store
//! part = length: u64 LE | bytes
//! ```
//!
//! The JSON holds what is not yet closed: per session the flat state with
//! only open runs, tool calls and run-tree heads, and the transcript with
//! no messages or reasoning ([`Session::open_state`]), and the derived graphs of open
//! roots; then the workspaces' dedup sets, the client ledger and the
//! record counter. The dedup set is 12 bytes an entry in hash order
//! ([`Seen::write_bytes`]), or empty in a snapshot for a store
//! ([`Checker::snapshot_for_store`], format 11), whose sessions say in
//! `idsBefore` the position through which their ids were left to the
//! store (format 12 also leaves closed runs and tool calls there:
//! [`super::closed_store`], with `closedBefore` and arenas that hold only
//! what was not handed over yet); an arena is its live records as laid out in
//! memory ([`super::closed`]); the messages are one part kept as it is
//! ([`super::packed_messages`]) and the reasoning streams one binary
//! record ([`super::reasoning_bytes`]). Restoring parses the JSON, checks every
//! arena record, the packed graph it holds and the messages part, decodes
//! the reasoning (a corrupt or hostile part refuses the whole snapshot:
//! `None`, and the host replays) and installs the arenas and messages as
//! they are.

use super::closed::Closed;
use super::conversation::IndexedList;
use super::derived::{Derived, Graphs};
use super::messages::Messages;
use super::packed_messages::Packed;
use super::reasoning_bytes;
use super::seen::Seen;
use super::session::Session;
use super::transcript_store::{Handover, Stored, StoredMeta};
use super::{Checker, ClientLedger, Transcript};
use crate::small_map::SmallMap;
use crate::validate::Validator;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Version of the [`Checker::snapshot`] layout. Version 10: the binary
/// envelope above, closed history as packed arenas, dedup sets as 12-byte
/// entries, the transcript's messages as a part restored in place, with
/// their id index ([`super::packed_messages`]), and its reasoning streams
/// as a binary part. Version 8 held the messages as rows decoded on
/// restore; version 7 held the reasoning in the JSON; version 6 held the
/// messages in the JSON; version 5 was one JSON document with every run
/// and graph rendered. Other versions are not restored: the host replays
/// the journal instead.
pub(super) const SNAPSHOT_FORMAT: u32 = 10;

/// Version 11: version 10 in which a session's open state may say
/// `idsBefore`, the position at and before which its dedup set holds no
/// eventId ([`Checker::snapshot_for_store`] writes them all so, with empty
/// dedup sets). A build that knows only version 10 refuses it rather than
/// restore those sets as complete. (Version 9 was the same over version 8.)
const FORGETFUL_FORMAT: u32 = 11;

/// Version 12: version 11 written by a checker that leaves closed history
/// to its host's store ([`super::closed_store`]). It says so
/// (`closedToStore`), and a session may say `closedBefore`, the position
/// at and before which its arenas hold only the closed records not yet
/// handed to the store, and `closedRuns`, whether a run had closed by
/// then. A build that knows only version 11 refuses it rather than restore
/// those arenas as complete.
const CLOSED_FORMAT: u32 = 12;

/// Version 13: version 12 in which a session may say `transcriptStored`:
/// its first messages are in the host's store
/// ([`super::transcript_store`]), its messages part holds only those
/// since, and a sixth part per session holds the sorted hashes of the
/// stored ones' ids (empty for a session that says nothing of it).
const TRANSCRIPT_FORMAT: u32 = 13;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

const MAGIC: &[u8; 8] = b"narad.ck";

/// Appends a part: its length, then what `write` appends.
fn put_part(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 8]);
    write(out);
    let n = (out.len() - at - 8) as u64;
    if let Some(len) = out.get_mut(at..at + 8) {
        len.copy_from_slice(&n.to_le_bytes());
    }
}

/// Reads parts in turn.
struct Parts<'a>(&'a [u8]);

impl<'a> Parts<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn part(&mut self) -> Option<&'a [u8]> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
        self.take(usize::try_from(n).ok()?)
    }
}

/// Whether a snapshot carries the sessions' dedup sets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum EventIds {
    /// Every eventId the checker holds.
    Kept,
    /// None: the host's store holds them ([`Checker::snapshot_for_store`]).
    Omitted,
}

/// The snapshot of `c` in the layout above.
pub(super) fn write(c: &Checker, ids: EventIds) -> Vec<u8> {
    #[derive(Serialize)]
    struct OpenRef<'a, S> {
        state: S,
        derived: Graphs<'a>,
        #[serde(rename = "idsBefore", skip_serializing_if = "is_zero")]
        ids_before: u64,
        #[serde(rename = "closedBefore", skip_serializing_if = "is_zero")]
        closed_before: u64,
        #[serde(rename = "closedRuns", skip_serializing_if = "is_false")]
        closed_runs: bool,
        #[serde(rename = "transcriptStored", skip_serializing_if = "Option::is_none")]
        transcript_stored: Option<StoredMeta>,
    }
    #[derive(Serialize)]
    struct SnapRef<'a, S> {
        sessions: BTreeMap<&'a str, OpenRef<'a, S>>,
        workspaces: &'a BTreeMap<String, (Seen, u64)>,
        client: &'a ClientLedger,
        index: usize,
        #[serde(rename = "closedToStore", skip_serializing_if = "is_false")]
        closed_to_store: bool,
    }
    // Closed history handed to the store is left out of a snapshot for it.
    let leave = |s: &Session| ids == EventIds::Omitted && c.closed_to_store && s.head > 0;
    // Messages handed to the store are described, not written: in a
    // snapshot for it, and in any snapshot of a checker that holds none.
    fn stored_of(s: &Session, leave: bool, h: Handover) -> Option<&Stored> {
        let m = &s.x().transcript.messages;
        m.stored_form(h).filter(|_| m.away() > 0 || leave)
    }
    let stored = |s| stored_of(s, leave(s), c.handover);
    let snap = SnapRef {
        sessions: c
            .sessions
            .iter()
            .map(|(k, s)| {
                let derived = s.w().derived.iter();
                let derived = derived.map(|(k, d)| (k.as_str(), Cow::Borrowed(d)));
                let open = OpenRef {
                    state: s.open_state(),
                    derived: Graphs(derived.collect()),
                    ids_before: match ids {
                        EventIds::Kept => s.ids_before,
                        EventIds::Omitted => s.head,
                    },
                    closed_before: match leave(s) {
                        true => s.head,
                        false => s.closed_before(),
                    },
                    closed_runs: s.closed_runs_before()
                        || (leave(s) && s.closed().is_some_and(|c| !c.runs.is_empty())),
                    transcript_stored: stored(s).map(Stored::meta),
                };
                (&**k, open)
            })
            .collect(),
        workspaces: &c.workspaces,
        client: &c.client,
        index: c.index,
        closed_to_store: c.closed_to_store,
    };
    let forgetful = ids == EventIds::Omitted || c.sessions.values().any(|s| s.ids_before > 0);
    let leaving = c.closed_to_store || c.sessions.values().any(|s| s.closed_before() > 0);
    let format = match (leaving, forgetful) {
        _ if c.sessions.values().any(|s| stored(s).is_some()) => TRANSCRIPT_FORMAT,
        (true, _) => CLOSED_FORMAT,
        (false, true) => FORGETFUL_FORMAT,
        (false, false) => SNAPSHOT_FORMAT,
    };
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&format.to_le_bytes());
    put_part(&mut out, |o| {
        // Writing JSON into a vector fails only for a map key that is not
        // a string, which none is.
        let _ = serde_json::to_writer(o, &snap);
    });
    for s in c.sessions.values() {
        let kept;
        let closed = match leave(s) {
            true => {
                kept = not_handed_over(s);
                Some(&kept)
            }
            false => s.closed(),
        };
        put_part(&mut out, |o| match ids {
            EventIds::Kept => s.seen.write_bytes(o),
            EventIds::Omitted => Seen::default().write_bytes(o),
        });
        put_part(&mut out, |o| closed.map_or((), |c| c.runs.write_live(o)));
        put_part(&mut out, |o| closed.map_or((), |c| c.tools.write_live(o)));
        let t = &s.x().transcript;
        let st = stored(s);
        put_part(&mut out, |o| match st {
            Some(st) => t.messages.write_from(st.count, o),
            None => t.messages.write(o),
        });
        put_part(&mut out, |o| {
            reasoning_bytes::write_reasoning(&t.reasoning, o)
        });
        if format == TRANSCRIPT_FORMAT {
            put_part(&mut out, |o| {
                o.extend_from_slice(st.map_or(&[][..], |st| &st.hashes));
            });
        }
    }
    out
}

/// The closed records of `s` not yet handed to the store
/// ([`Checker::take_closed`]): what a snapshot that leaves the rest to the
/// store keeps.
fn not_handed_over(s: &Session) -> Closed {
    use super::closed_store::ClosedKind;
    let mut kept = Closed::default();
    for key in s.closed_to_hand_over() {
        if let Some(b) = s.closed_bytes(key.kind, &key.id) {
            match key.kind {
                ClosedKind::Run => kept.runs.insert(&key.id, b),
                ClosedKind::ToolCall => kept.tools.insert(&key.id, b),
                ClosedKind::Transcript => {}
            }
        }
    }
    kept
}

/// From this many bytes of dedup set and arenas on, a restore reads them on
/// a second thread; below it, a thread costs more than it saves. This
/// crate's unit tests take the second thread always (so every snapshot test
/// runs it), its integration tests below 4 MiB never.
const BESIDE_BYTES: usize = 4 << 20;

/// `(a(), b())`, with `a` on a scoped thread beside `b` when `a_bytes` (what
/// `a` reads) reach [`BESIDE_BYTES`]. A long session's dedup set, arenas
/// and messages are checked in place (a few allocations), while its
/// reasoning decodes into many strings; the two share no state. If no thread can be started,
/// the two run in turn; `None` if `a` panicked (it does not on any bytes).
fn beside<A: Send, B>(
    a_bytes: usize,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B,
) -> (Option<A>, B) {
    if a_bytes < BESIDE_BYTES && !cfg!(test) {
        return (Some(a()), b());
    }
    let task = std::sync::Mutex::new(Some(a));
    let run = || task.lock().ok()?.take().map(|a| a());
    std::thread::scope(|s| {
        let thread = std::thread::Builder::new().name("narad-restore".into());
        let spawned = thread.spawn_scoped(s, run);
        let b = b();
        let a = spawned.ok().and_then(|h| h.join().ok().flatten());
        (a.or_else(run), b)
    })
}

/// The checker [`write`] wrote, and the answer of `check`, which runs
/// once on this thread: in the first session's restore (beside its second
/// thread, when it has one), or at the end when there is none. The checker is `None` for any other bytes
/// (another format, cut short, trailing bytes, a part that does not parse)
/// and when `check` fails.
pub(super) fn read_checked(
    validator: Validator,
    bytes: &[u8],
    shared: Option<&Bytes>,
    check: impl FnOnce() -> bool,
) -> (bool, Option<Checker>) {
    let mut check = Some(check);
    let mut passed = None;
    let restored = read(validator, bytes, shared, &mut || {
        passed = passed.or_else(|| check.take().map(|c| c()));
    });
    let passed = passed.or_else(|| check.take().map(|c| c()));
    let passed = passed.unwrap_or(false);
    (passed, restored.filter(|_| passed))
}

/// Whether `bytes` begin as a snapshot of a layout before
/// [`SNAPSHOT_FORMAT`] (those with the magic string: 6 to 9).
pub(super) fn is_earlier(bytes: &[u8]) -> bool {
    let format = bytes
        .get(MAGIC.len()..MAGIC.len() + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes);
    bytes.starts_with(MAGIC) && format.is_some_and(|f| f < SNAPSHOT_FORMAT)
}

/// `part` as a slice of `whole`, if it lies within it.
fn within(whole: &Bytes, part: &[u8]) -> Option<Bytes> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= whole.len()).then(|| whole.slice(start..end))
}

/// `part` kept as it lies: a slice of `shared` when it is most of it
/// (holding the whole buffer for a small part would cost more than a
/// copy), else one copy of it.
fn kept(shared: Option<&Bytes>, part: &[u8]) -> Bytes {
    let mostly = shared.filter(|b| part.len() >= b.len() / 2);
    match mostly.and_then(|b| within(b, part)) {
        Some(b) => b,
        None => Bytes::copy_from_slice(part),
    }
}

/// [`read_checked`] without the check's result: `alongside` runs in each
/// session's restore, on this thread, beside the second thread if any.
fn read(
    validator: Validator,
    bytes: &[u8],
    shared: Option<&Bytes>,
    alongside: &mut dyn FnMut(),
) -> Option<Checker> {
    #[derive(Deserialize)]
    struct Open {
        state: Session,
        derived: SmallMap<Derived>,
        #[serde(rename = "idsBefore", default)]
        ids_before: u64,
        #[serde(rename = "closedBefore", default)]
        closed_before: u64,
        #[serde(rename = "closedRuns", default)]
        closed_runs: bool,
        #[serde(rename = "transcriptStored", default)]
        transcript_stored: Option<StoredMeta>,
    }
    #[derive(Deserialize)]
    struct Snap {
        sessions: BTreeMap<String, Open>,
        workspaces: BTreeMap<String, (Seen, u64)>,
        client: ClientLedger,
        index: usize,
        #[serde(rename = "closedToStore", default)]
        closed_to_store: bool,
    }
    let mut parts = Parts(bytes);
    if parts.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let format = u32::from_le_bytes(parts.take(4)?.try_into().ok()?);
    if ![
        SNAPSHOT_FORMAT,
        FORGETFUL_FORMAT,
        CLOSED_FORMAT,
        TRANSCRIPT_FORMAT,
    ]
    .contains(&format)
    {
        return None;
    }
    let snap: Snap = serde_json::from_slice(parts.part()?).ok()?;
    // Only versions 12 and 13 leave closed history to a store.
    if snap.closed_to_store && format < CLOSED_FORMAT {
        return None;
    }
    let mut sessions = BTreeMap::new();
    for (k, open) in snap.sessions {
        let mut s = open.state;
        // Version 10 keeps every id; a session cannot omit ids it has not seen.
        if (format == SNAPSHOT_FORMAT && open.ids_before != 0) || open.ids_before > s.head {
            return None;
        }
        s.ids_before = open.ids_before;
        let leaves = open.closed_before != 0 || open.closed_runs;
        if (leaves && !snap.closed_to_store) || open.closed_before > s.head {
            return None;
        }
        if leaves {
            let l = s.leaving.get_or_insert_with(Box::default);
            (l.before, l.runs_before) = (open.closed_before, open.closed_runs);
        }
        let (seen, runs, tools) = (parts.part()?, parts.part()?, parts.part()?);
        let (messages, reasoning) = (parts.part()?, parts.part()?);
        let hashes = match format {
            TRANSCRIPT_FORMAT => parts.part()?,
            _ => &[],
        };
        // A session's stored messages are described only where the
        // format says so, by a checker that leaves history to the store.
        let stored = match &open.transcript_stored {
            None if hashes.is_empty() => None,
            Some(meta) if snap.closed_to_store => {
                let st = Stored::from_meta(meta, kept(shared, hashes))?;
                if st.at > s.head {
                    return None;
                }
                Some(st)
            }
            _ => return None,
        };
        // The messages are kept where they lie and checked, not decoded.
        let messages = kept(shared, messages);
        // Thread two checks the dedup set, arenas and messages in place,
        // while this one decodes the reasoning (a conversation's many
        // strings) and runs `alongside`.
        let (two, reasoning) = beside(
            seen.len() + runs.len() + tools.len() + messages.len(),
            || {
                let seen = Seen::from_bytes(seen);
                let closed = Closed::read(runs, tools);
                let messages = match messages.is_empty() {
                    true => Some(None),
                    false => Packed::read(messages).map(Some),
                };
                (seen, closed, messages)
            },
            || {
                let reasoning = reasoning_bytes::read_reasoning(reasoning);
                alongside();
                reasoning.and_then(IndexedList::reasoning)
            },
        );
        let (seen, closed, messages) = two?;
        (s.seen, s.closed) = (seen?, closed?);
        let (messages, reasoning) = (messages?, reasoning?);
        // The JSON holds none (`Session::open_state`): the parts are their
        // one source, so a JSON that carries some is refused.
        if !s.x().transcript.is_empty() {
            return None;
        }
        let messages = match stored {
            Some(st) => Messages::restored_away(st, messages)?,
            None => Messages::restored(messages),
        };
        if !messages.is_empty() || !reasoning.is_empty() {
            s.x_mut().transcript = Transcript::restored(messages, reasoning);
        }
        s.w_mut().derived = open.derived;
        s.trim();
        s.pack_closed_graphs();
        s.retire_all();
        if snap.closed_to_store && s.closed.is_some() {
            // Its arenas hold only what was not handed over yet.
            s.leave_closed();
        }
        sessions.insert(k.into_boxed_str(), Box::new(s));
    }
    if !parts.0.is_empty() {
        return None;
    }
    Some(Checker {
        validator,
        sessions,
        workspaces: snap.workspaces,
        client: snap.client,
        index: snap.index,
        canonical_graphs: false,
        full_history: false,
        closed_to_store: snap.closed_to_store,
        handover: Default::default(),
    })
}

#[cfg(test)]
mod tests;
