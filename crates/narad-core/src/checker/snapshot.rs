//! The layout of [`Checker::snapshot`]: closed history as the packed bytes
//! the checker already holds, not rendered again, so a long session's
//! snapshot is small and restores without unpacking a record.
//!
//! ```text
//! magic "narad.ck" | format: u32 LE | part: JSON of the open state
//! then per session, in the JSON's session order:
//!   part: dedup set | part: closed runs arena | part: closed tool calls arena
//!   | part: transcript messages | part: transcript reasoning
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
use super::packed_messages::Packed;
use super::reasoning_bytes;
use super::seen::Seen;
use super::session::Session;
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
        put_part(&mut out, |o| t.messages.write(o));
        put_part(&mut out, |o| {
            reasoning_bytes::write_reasoning(&t.reasoning, o)
        });
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
    if ![SNAPSHOT_FORMAT, FORGETFUL_FORMAT, CLOSED_FORMAT].contains(&format) {
        return None;
    }
    let snap: Snap = serde_json::from_slice(parts.part()?).ok()?;
    // Only version 12 leaves closed history to a store.
    if snap.closed_to_store && format != CLOSED_FORMAT {
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
        // The messages are kept where they lie and checked, not decoded:
        // a slice of `shared` when they are most of it (holding the whole
        // buffer for a small part would cost more than a copy), else one
        // copy of their part.
        let mostly = shared.filter(|b| messages.len() >= b.len() / 2);
        let messages = match mostly.and_then(|b| within(b, messages)) {
            Some(b) => b,
            None => Bytes::copy_from_slice(messages),
        };
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
        if messages.is_some() || !reasoning.is_empty() {
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u64, run: &str, seq: u64, body: &str) -> Vec<u8> {
        format!(
            r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},"rootRunId":"{run}","runId":"{run}","sequence":{seq},{body}}}"#
        )
        .into_bytes()
    }

    fn started(n: u64, run: &str, seq: u64, tool: &str) -> Vec<u8> {
        let body = format!(
            r#""type":"tool.call.started","toolCallId":"{tool}","toolName":"search","executor":"backend","args":{{}}"#
        );
        line(n, run, seq, &body)
    }

    fn finished(n: u64, run: &str, seq: u64, tool: &str) -> Vec<u8> {
        let body = format!(
            r#""type":"tool.call.finished","toolCallId":"{tool}","outcome":"success","response":{{}}"#
        );
        line(n, run, seq, &body)
    }

    /// A session of 20 closed runs (past the arenas' index threshold),
    /// each with a finished tool call, then an open run with an open call;
    /// and the records that go on from there.
    fn session() -> (Checker, Vec<Vec<u8>>) {
        let mut c = Checker::default();
        let mut n = 0;
        let push = |c: &mut Checker, b: Vec<u8>| {
            assert!(c.push_bytes(&b).is_ok(), "{}", String::from_utf8_lossy(&b));
        };
        for i in 0..20 {
            let run = format!("run-{i}");
            push(&mut c, line(n + 1, &run, 1, r#""type":"run.started""#));
            push(&mut c, started(n + 2, &run, 2, &format!("tool-{i}")));
            push(&mut c, finished(n + 3, &run, 3, &format!("tool-{i}")));
            push(&mut c, line(n + 4, &run, 4, r#""type":"run.finished""#));
            n += 4;
        }
        push(&mut c, line(n + 1, "open", 1, r#""type":"run.started""#));
        push(&mut c, started(n + 2, "open", 2, "tool-open"));
        let next = vec![
            finished(n + 3, "open", 3, "tool-open"),
            line(n + 4, "open", 4, r#""type":"run.finished""#),
            line(1, "run-0", 1, r#""type":"run.started""#),
            line(n + 5, "run-3", 5, r#""type":"run.started""#),
        ];
        (c, next)
    }

    /// Every read a host makes, and the records that follow.
    fn exercise(mut c: Checker, next: &[Vec<u8>]) -> String {
        let mut out = c.debug_state();
        out += &c.state_json("s").unwrap_or_default();
        let runs: Vec<String> = c.runs("s").map(|(k, _)| k.to_owned()).collect();
        for r in &runs {
            out += &format!("{:?}{:?}", c.graph("s", r), c.run_head("s", r));
            out += &format!("{:?}", c.tool_call("s", &r.replace("run", "tool")));
        }
        for b in next {
            out += &format!("{:?}", c.push_bytes(b));
        }
        out + &c.debug_state()
    }

    #[test]
    fn a_snapshot_restores_exactly_and_no_cut_of_it_restores() {
        let (c, next) = session();
        let snap = c.snapshot();
        let restored = Checker::restore(Validator::default(), &snap).unwrap();
        assert_eq!(restored.debug_state(), c.debug_state());
        assert_eq!(exercise(restored, &next), exercise(c.clone(), &next));
        for cut in 0..snap.len() {
            assert!(Checker::restore(Validator::default(), &snap[..cut]).is_none());
        }
        let mut longer = snap.clone();
        longer.push(0);
        assert!(Checker::restore(Validator::default(), &longer).is_none());
    }

    /// Past a thousand events the dedup set restores as a frozen run
    /// (`seen/sorted.rs`); events after the restore go beside it and then
    /// into it. Redeliveries from before, across and after that merge,
    /// identical or not, get the verdicts of the checker never restored.
    /// Run `i` as two records, from session position `n + 1`.
    fn two_record_run(n: u64, i: u64) -> [Vec<u8>; 2] {
        let id = format!("run-{i}");
        let started = line(n + 1, &id, 1, r#""type":"run.started""#);
        [started, line(n + 2, &id, 2, r#""type":"run.finished""#)]
    }

    /// A session of `runs` two-record runs, and its records.
    fn long_session(runs: u64) -> (Checker, Vec<Vec<u8>>) {
        let mut c = Checker::default();
        let mut all = Vec::new();
        for i in 0..runs {
            for b in two_record_run(2 * i, i) {
                assert!(c.push_bytes(&b).is_ok());
                all.push(b);
            }
        }
        (c, all)
    }

    #[test]
    fn a_long_session_restored_decides_redeliveries_as_the_original() {
        let run = two_record_run;
        let (mut c, mut all) = long_session(800);
        let mut restored = Checker::restore(Validator::default(), &c.snapshot()).unwrap();
        assert_eq!(restored.debug_state(), c.debug_state());
        // 1,300 more events: past the 1,024 the run takes beside it.
        for i in 800..1450 {
            for b in run(2 * i, i) {
                assert_eq!(
                    format!("{:?}", restored.push_bytes(&b)),
                    format!("{:?}", c.push_bytes(&b))
                );
                all.push(b);
            }
        }
        let again = |c: &mut Checker, b: &[u8]| format!("{:?}", c.push_bytes(b));
        for at in [0, 1, 999, 1599, 1600, 2000, 2899] {
            let b = &all[at];
            assert_eq!(again(&mut restored, b), again(&mut c, b), "{at}");
            // The same eventId with other content.
            let other = String::from_utf8_lossy(b).replace("2026-08-05", "2026-08-06");
            let want = again(&mut c, other.as_bytes());
            assert!(want.contains("Err"), "{want}");
            assert_eq!(again(&mut restored, other.as_bytes()), want, "{at}");
        }
        assert_eq!(restored.debug_state(), c.debug_state());
        let twice = Checker::restore(Validator::default(), &restored.snapshot()).unwrap();
        assert_eq!(twice.debug_state(), c.debug_state());
        assert_eq!(restored.snapshot(), c.snapshot());
    }

    #[test]
    fn a_bit_flipped_snapshot_restores_to_none_or_a_checker_that_does_not_panic() {
        let (c, next) = session();
        let first = line(1, "run-0", 1, r#""type":"run.started""#);
        // Both kinds: every eventId kept, and none (format 9, `idsBefore`).
        for snap in [c.snapshot(), c.snapshot_for_store()] {
            let mut restored = 0;
            for i in 0..snap.len() {
                for bit in [0, 5, 7] {
                    let mut bad = snap.clone();
                    bad[i] ^= 1 << bit;
                    if let Some(mut r) = Checker::restore(Validator::default(), &bad) {
                        restored += 1;
                        let _ = r.may_have_forgotten("s", "e1") && r.recall("s", &first);
                        exercise(r, &next);
                    }
                }
            }
            // Some flips land where any value parses (a hash, an id's byte).
            assert!(restored > 0);
        }
    }

    /// A stored snapshot is storage contents: a flipped bit in a long
    /// session's dedup set (the frozen run, restored as it lies) either
    /// refuses the snapshot or restores a checker that takes redeliveries
    /// and new records without a panic.
    #[test]
    fn a_bit_flipped_dedup_run_restores_to_none_or_a_checker_that_does_not_panic() {
        let (c, all) = long_session(800);
        let snap = c.snapshot();
        // magic, format, then the JSON part; the dedup set is the next part.
        let json_len = u64::from_le_bytes(snap[12..20].try_into().unwrap()) as usize;
        let at = 20 + json_len;
        let seen_len = u64::from_le_bytes(snap[at..at + 8].try_into().unwrap()) as usize;
        assert_eq!(seen_len, all.len() * 12, "12 bytes an entry");
        let mut next: Vec<Vec<u8>> = [0, 1, 700, 1599].map(|i| all[i].clone()).into();
        next.extend(two_record_run(1600, 800));
        let (mut restored, mut refused) = (0, 0);
        // Every byte of a few entries (hash and fingerprint), and a stride
        // through the rest.
        let bytes = (0..36).chain((36..seen_len).step_by(97));
        for i in bytes.map(|i| at + 8 + i) {
            for bit in [0, 7] {
                let mut bad = snap.clone();
                bad[i] ^= 1 << bit;
                match Checker::restore(Validator::default(), &bad) {
                    Some(mut r) => {
                        restored += 1;
                        // What reads the dedup set: pushes, and the next
                        // snapshot (the whole host surface: the test above).
                        for b in &next {
                            let _ = r.push_bytes(b);
                        }
                        let _ = r.snapshot();
                    }
                    None => refused += 1,
                }
            }
        }
        // A flip in a fingerprint still reads; one in a hash's high bits
        // breaks the order.
        assert!(restored > 0 && refused > 0, "{restored} {refused}");
    }

    /// A session-scoped record at session position `n`.
    fn plain(n: u64, body: &str) -> Vec<u8> {
        format!(
            r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},{body}}}"#
        )
        .into_bytes()
    }

    /// A conversation: a user message, a completed and an open streamed
    /// message in a run, reasoning, a redaction (shown and hidden); and
    /// the records that go on from there, refused ones included.
    fn conversation() -> (Checker, Vec<Vec<u8>>) {
        let mut c = Checker::default();
        let records = [
            plain(
                1,
                r#""type":"message.user.recorded","messageId":"u1","messageScope":"session","content":"Hi \"there\" ☃""#,
            ),
            line(2, "r1", 1, r#""type":"run.started""#),
            plain(
                3,
                r#""type":"reasoning.started","reasoningId":"z1","messageId":"a1""#,
            ),
            plain(
                4,
                r#""type":"reasoning.delta","reasoningId":"z1","delta":"Think""#,
            ),
            line(
                5,
                "r1",
                2,
                r#""type":"message.text.started","messageId":"a1","role":"assistant","messageScope":"run""#,
            ),
            plain(
                6,
                r#""type":"message.text.delta","messageId":"a1","delta":"Hel""#,
            ),
            plain(7, r#""type":"message.text.completed","messageId":"a1""#),
            line(
                8,
                "r1",
                3,
                r#""type":"message.text.started","messageId":"a2","role":"assistant","messageScope":"run""#,
            ),
            plain(
                9,
                r#""type":"message.text.delta","messageId":"a2","delta":"Wor""#,
            ),
            plain(
                10,
                r#""type":"message.redacted","messageId":"u1","reason":"pii","displayReplacement":"[removed]""#,
            ),
            plain(
                11,
                r#""type":"message.user.recorded","messageId":"u2","messageScope":"session","content":"" "#,
            ),
            plain(
                12,
                r#""type":"message.redacted","messageId":"u2","reason":"pii","displayReplacement":null"#,
            ),
        ];
        for b in &records {
            assert!(c.push_bytes(b).is_ok(), "{}", String::from_utf8_lossy(b));
        }
        let next = vec![
            plain(
                13,
                r#""type":"message.text.delta","messageId":"a2","delta":"ld""#,
            ),
            plain(
                14,
                r#""type":"message.text.delta","messageId":"a1","delta":"late""#,
            ),
            plain(
                14,
                r#""type":"message.user.recorded","messageId":"a1","messageScope":"session","content":"again""#,
            ),
            plain(14, r#""type":"message.text.completed","messageId":"a2""#),
            plain(
                15,
                r#""type":"message.user.recorded","messageId":"u3","messageScope":"session","content":"new""#,
            ),
            plain(
                16,
                r#""type":"reasoning.delta","reasoningId":"z1","delta":" more""#,
            ),
            plain(
                17,
                r#""type":"message.redacted","messageId":"nope","reason":"pii","displayReplacement":"x""#,
            ),
        ];
        (c, next)
    }

    #[test]
    fn a_transcript_restores_exactly_and_flipped_bits_never_panic() {
        let (c, next) = conversation();
        let snap = c.snapshot();
        let restored = Checker::restore(Validator::default(), &snap).unwrap();
        assert_eq!(restored.debug_state(), c.debug_state());
        assert_eq!(restored.transcript("s"), c.transcript("s"));
        let (a, b) = (exercise(restored, &next), exercise(c.clone(), &next));
        assert_eq!(a, b);
        assert!(b.contains("message_duplicate") && b.contains("message_completed"));
        for cut in 0..snap.len() {
            assert!(Checker::restore(Validator::default(), &snap[..cut]).is_none());
        }
        for i in 0..snap.len() {
            for bit in [0, 6] {
                let mut bad = snap.clone();
                bad[i] ^= 1 << bit;
                if let Some(r) = Checker::restore(Validator::default(), &bad) {
                    exercise(r, &next);
                }
            }
        }
    }

    /// The messages have one source, their binary part: a snapshot whose
    /// JSON carries them too (no checker writes one) is refused.
    #[test]
    fn a_snapshot_whose_json_carries_messages_or_reasoning_is_refused() {
        let (c, _) = conversation();
        let snap = c.snapshot();
        let json_len = u64::from_le_bytes(snap[12..20].try_into().unwrap()) as usize;
        let open: serde_json::Value = serde_json::from_slice(&snap[20..20 + json_len]).unwrap();
        // The snapshot with its JSON part replaced by `open`.
        let with = |open: &serde_json::Value| {
            let json = serde_json::to_vec(open).unwrap();
            let mut out = snap[..12].to_vec();
            out.extend_from_slice(&(json.len() as u64).to_le_bytes());
            out.extend_from_slice(&json);
            out.extend_from_slice(&snap[20 + json_len..]);
            out
        };
        let restored = Checker::restore(Validator::default(), &with(&open)).unwrap();
        assert_eq!(restored.debug_state(), c.debug_state());
        let mut carrying = open.clone();
        let messages = serde_json::to_value(c.transcript("s").unwrap()).unwrap()["messages"].take();
        carrying["sessions"]["s"]["state"]["transcript"]["messages"] = messages;
        assert!(Checker::restore(Validator::default(), &with(&carrying)).is_none());
        let reasoning = &c.transcript("s").unwrap().reasoning;
        assert!(!reasoning.is_empty());
        let mut carrying = open.clone();
        let reasoning = serde_json::to_value(reasoning).unwrap();
        carrying["sessions"]["s"]["state"]["transcript"]["reasoning"] = reasoning;
        assert!(Checker::restore(Validator::default(), &with(&carrying)).is_none());
    }

    /// The second thread's work comes back; if it panics, `beside` answers
    /// `None` for it (and the caller refuses the snapshot), never a panic
    /// of its own.
    #[test]
    fn beside_returns_both_results_and_survives_a_panic_on_the_second_thread() {
        assert_eq!(beside(usize::MAX, || 1, || 2), (Some(1), 2));
        assert_eq!(beside(0, || 1, || 2), (Some(1), 2));
        let (a, b) = beside(
            usize::MAX,
            || -> u8 { panic!("on the second thread") },
            || 2,
        );
        assert_eq!((a, b), (None, 2));
    }

    /// The host's check runs exactly once, whether the bytes hold sessions,
    /// none, or are no snapshot at all; when it fails, no checker.
    #[test]
    fn the_check_runs_once_and_a_failed_check_gives_no_checker() {
        let (c, _) = conversation();
        let snap = c.snapshot();
        let empty = Checker::default().snapshot();
        let inputs: [&[u8]; 4] = [&snap, &empty, &snap[..snap.len() - 1], b"not a snapshot"];
        for (i, bytes) in inputs.into_iter().enumerate() {
            for answer in [true, false] {
                let mut runs = 0;
                let (passed, restored) = read_checked(Validator::default(), bytes, None, || {
                    runs += 1;
                    answer
                });
                assert_eq!((runs, passed), (1, answer), "input {i}");
                assert_eq!(restored.is_some(), answer && i < 2, "input {i}");
            }
        }
    }

    #[test]
    fn a_snapshot_of_another_format_is_not_restored() {
        let (c, _) = session();
        // Older layouts (8 and 9 held the messages as rows) and unknown
        // ones are replayed, not restored.
        for format in [5, 8, 9, 13] {
            let mut snap = c.snapshot();
            snap[MAGIC.len()] = format;
            assert!(Checker::restore(Validator::default(), &snap).is_none());
        }
    }

    /// A snapshot for a store keeps no eventId: the restored checker says
    /// which ids it may have forgotten, takes back only stored events of
    /// positions the snapshot covered, and then decides as before.
    #[test]
    fn a_snapshot_for_a_store_forgets_event_ids_until_they_are_recalled() {
        let (c, next) = session();
        let full = c.snapshot();
        let forgetful = c.snapshot_for_store();
        assert_eq!(&full[MAGIC.len()..MAGIC.len() + 4], &[10, 0, 0, 0]);
        assert_eq!(&forgetful[MAGIC.len()..MAGIC.len() + 4], &[11, 0, 0, 0]);
        // 81 events' dedup entries of 12 bytes, and `"idsBefore":82`.
        assert_eq!(full.len() - forgetful.len(), 82 * 12 - 15);
        let mut r = Checker::restore(Validator::default(), &forgetful).unwrap();
        let first = line(1, "run-0", 1, r#""type":"run.started""#);
        assert!(r.may_have_forgotten("s", "e1"));
        assert!(!r.may_have_forgotten("t", "e1"), "no such session");
        // Not an authority event of `s` at a covered position: not taken.
        assert!(!r.recall("t", &first));
        assert!(!r.recall("s", b"{}"));
        assert!(!r.recall("s", &line(83, "run-0", 1, r#""type":"run.started""#)));
        assert!(r.may_have_forgotten("s", "e1"));
        assert!(r.recall("s", &first));
        assert!(!r.may_have_forgotten("s", "e1"));
        assert_eq!(r.push_bytes(&first), Ok(super::super::Applied::Duplicate));
        let changed = line(1, "run-0", 1, r#""type":"run.started","parentRunId":"x""#);
        let refused = r.push_bytes(&changed).map_err(|e| e.code);
        assert_eq!(refused, Err("duplicate_event_conflict"));
        // New events are known as they are pushed.
        let (mut a, mut b) = (r, Checker::restore(Validator::default(), &full).unwrap());
        for n in &next {
            let code = |r: Result<_, super::super::Rejection>| r.map_err(|e| e.code);
            assert_eq!(code(a.push_bytes(n)), code(b.push_bytes(n)));
        }
        assert!(!a.may_have_forgotten("s", "e84"));
        // Still forgetful after its own full snapshot: format 11 again.
        let again = a.snapshot();
        assert_eq!(&again[MAGIC.len()..MAGIC.len() + 4], &[11, 0, 0, 0]);
        let a = Checker::restore(Validator::default(), &again).unwrap();
        assert!(a.may_have_forgotten("s", "e2") && !a.may_have_forgotten("s", "e84"));
        // Version 10 never omits ids; no session omits ids past its head.
        let mut v10 = forgetful.clone();
        v10[MAGIC.len()] = 10;
        assert!(Checker::restore(Validator::default(), &v10).is_none());
        let mut past = forgetful.clone();
        let key = b"\"idsBefore\":82";
        let at = past.windows(key.len()).position(|w| w == key).unwrap();
        past[at + key.len() - 2..at + key.len()].copy_from_slice(b"99");
        assert!(Checker::restore(Validator::default(), &past).is_none());
        past[at + key.len() - 2..at + key.len()].copy_from_slice(b"81");
        assert!(Checker::restore(Validator::default(), &past).is_some());
    }
}
