//! Closed history left to the host's store. A checker in this mode
//! ([`Checker::leave_closed_to_store`]) hands each closed run and finished
//! tool call to its host as a record to keep ([`Checker::take_closed`]),
//! and its snapshot for a store ([`Checker::snapshot_for_store`]) leaves
//! out what it handed over: a long session's snapshot then follows its
//! open work, not its history.
//!
//! A checker restored from such a snapshot does not hold the closed runs
//! and tool calls of the events the snapshot covers. Before it decides a
//! record that names a run or tool call it holds no trace of, it refuses
//! the record with [`CLOSED_RECALL`] and nothing else: the host looks up
//! the ids [`Checker::closed_needed`] lists in its store, gives back what
//! it finds ([`Checker::recall_closed`], with `None` for an id it does not
//! hold) and pushes the record again, which is then decided as by a
//! checker that never forgot. Such a refusal is not a verdict: it does not
//! count as a record ([`Checker::records_seen`]).
//!
//! Which ids a record names: its `runId`, `rootRunId` and `parentRunId`,
//! the target of a `run.stop.requested`, the `toolCallId` of a tool call
//! event, a hydrate record's root, and the `messageId` of a message record
//! (asked for only when it may be among messages left to the store:
//! [`super::transcript_store`]). Every closed lookup of the rules is of
//! one of these.

use super::closed::Closed;
use super::session::Session;
use super::{fail, Checker, R};
use crate::model::{AuthorityEnvelope, AuthorityPayload};
use std::collections::{BTreeSet, HashSet};

/// The code of the refusal that asks the host for closed history
/// ([`Checker::closed_needed`]); never a verdict on the record.
pub const CLOSED_RECALL: &str = "closed_recall_needed";

/// Ids looked up and found in no store, kept so a record is not refused
/// again for them; a cache, dropped whole past this many.
const ABSENT_MAX: usize = 4096;

/// What a closed record is kept for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClosedKind {
    /// A run that reached a terminal (with its run tree's head and packed
    /// graph, when it is a root).
    Run,
    /// A finished tool call (its owning run).
    ToolCall,
    /// A session's transcript messages, once they pass
    /// [`super::HANDOVER_BYTES`]: one record, with an empty id.
    Transcript,
}

impl ClosedKind {
    /// A stable one-letter tag, for a host's store key.
    pub const fn tag(self) -> char {
        match self {
            Self::Run => 'r',
            Self::ToolCall => 't',
            Self::Transcript => 'm',
        }
    }
}

/// A closed run or tool call, by id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClosedKey {
    /// Which kind.
    pub kind: ClosedKind,
    /// Its `runId` or `toolCallId`.
    pub id: String,
}

/// A closed record for the host's store: its key and the exact bytes to
/// keep, and to give back with [`Checker::recall_closed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedRecord {
    /// Whose record.
    pub key: ClosedKey,
    /// The record (written again, with new bytes, when it changes).
    pub bytes: Vec<u8>,
}

/// A session's side of the mode: what to hand over, what was looked up and
/// not found, what the last refusal asked for.
#[derive(Debug, Clone, Default)]
pub(super) struct Leaving {
    /// The session holds no closed run or tool call of the events at or
    /// before this position but those recalled (0: it holds every one).
    pub before: u64,
    /// Whether a run had closed by `before` (so the session has runs while
    /// it may hold none).
    pub runs_before: bool,
    dirty: BTreeSet<ClosedKey>,
    absent: HashSet<ClosedKey>,
    needed: Vec<ClosedKey>,
}

impl Session {
    /// Notes that the closed record of `id` was created or changed, for
    /// [`Checker::take_closed`] (when the session leaves closed history to
    /// the store).
    pub(super) fn closed_changed(&mut self, kind: ClosedKind, id: &str) {
        if let Some(l) = self.leaving.as_deref_mut() {
            l.dirty.insert(ClosedKey {
                kind,
                id: id.to_owned(),
            });
        }
    }

    /// Whether the session may have left `id`'s closed record to the store
    /// and holds no trace of it (open, closed or looked up and absent).
    fn unknown(&self, kind: ClosedKind, id: &str) -> bool {
        let open = match kind {
            // A message id: whether it may be among the messages away.
            ClosedKind::Transcript => return self.x().transcript.messages.away_may_hold(id),
            _ if self.closed_before() == 0 => return false,
            ClosedKind::Run => self.w().runs.contains_key(id),
            ClosedKind::ToolCall => self.w().tools.contains_key(id),
        };
        let closed = self.closed_bytes(kind, id).is_some();
        let key = || ClosedKey {
            kind,
            id: id.to_owned(),
        };
        !open
            && !closed
            && !self
                .leaving
                .as_ref()
                .is_some_and(|l| l.absent.contains(&key()))
    }

    /// Refuses with [`CLOSED_RECALL`], listing them, when any of `names`
    /// may be in the store only; changes nothing else.
    pub(super) fn gate<'a>(&mut self, names: impl IntoIterator<Item = (ClosedKind, &'a str)>) -> R {
        if self.closed_before() == 0 && self.x().transcript.messages.away() == 0 {
            return Ok(());
        }
        let mut needed: Vec<ClosedKey> = names
            .into_iter()
            .filter(|(k, id)| self.unknown(*k, id))
            .map(|(kind, id)| match kind {
                ClosedKind::Transcript => super::transcript_store::key(),
                _ => ClosedKey {
                    kind,
                    id: id.to_owned(),
                },
            })
            .collect();
        if needed.is_empty() {
            return Ok(());
        }
        needed.sort();
        needed.dedup();
        self.leaving.get_or_insert_with(Box::default).needed = needed;
        fail(
            CLOSED_RECALL,
            "4.1",
            "the record names closed history the host's store holds",
        )
    }
}

/// The runs, tool calls and messages an authority event names (see the
/// module docs).
pub(super) fn named<'a>(
    env: &'a AuthorityEnvelope,
    payload: Option<&'a AuthorityPayload>,
) -> impl Iterator<Item = (ClosedKind, &'a str)> {
    let runs = [&env.run_id, &env.root_run_id, &env.parent_run_id]
        .into_iter()
        .flatten()
        .map(|id| (ClosedKind::Run, id.as_str()));
    let from_payload = match payload {
        Some(AuthorityPayload::RunStopRequested { target_run_id }) => {
            Some((ClosedKind::Run, target_run_id.as_str()))
        }
        Some(
            AuthorityPayload::ToolCallStarted { tool_call_id, .. }
            | AuthorityPayload::ToolCallFinished { tool_call_id, .. },
        ) => Some((ClosedKind::ToolCall, tool_call_id.as_str())),
        Some(
            AuthorityPayload::MessageUserRecorded { message_id, .. }
            | AuthorityPayload::MessageTextStarted { message_id, .. }
            | AuthorityPayload::MessageTextDelta { message_id, .. }
            | AuthorityPayload::MessageTextCompleted { message_id }
            | AuthorityPayload::MessageRedacted { message_id, .. },
        ) => Some((ClosedKind::Transcript, message_id.as_str())),
        _ => None,
    };
    runs.chain(from_payload)
}

impl Checker {
    /// Leaves closed history to the host's store from now on: every
    /// session hands its closed runs and finished tool calls to the host
    /// ([`Checker::take_closed`], those it already holds included), and
    /// [`Checker::snapshot_for_store`] leaves out those handed over. For a
    /// host that keeps them by session and key, written in the same batch
    /// as the events that closed or changed them (the engine does).
    ///
    /// ```
    /// use narad_core::checker::{Applied, Checker, ClosedKind, CLOSED_RECALL};
    /// use narad_core::Validator;
    ///
    /// let ev = |n: u64, seq: u64, ty: &str| format!(
    ///     r#"{{"type":"{ty}","protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},"rootRunId":"r","runId":"r","sequence":{seq}}}"#
    /// ).into_bytes();
    /// let mut c = Checker::default();
    /// c.leave_closed_to_store();
    /// c.push_bytes(&ev(1, 1, "run.started")).unwrap();
    /// c.push_bytes(&ev(2, 2, "run.finished")).unwrap();
    /// // The host keeps what closed, in the batch of the events.
    /// let kept = c.take_closed("s", usize::MAX);
    /// assert_eq!((kept.len(), kept[0].key.kind), (1, ClosedKind::Run));
    ///
    /// let mut restored = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
    /// // A start of run `r` again needs its closed record first.
    /// let again = ev(3, 3, "run.started");
    /// assert_eq!(restored.push_bytes(&again).unwrap_err().code, CLOSED_RECALL);
    /// let needed = restored.closed_needed("s");
    /// assert_eq!(needed, vec![kept[0].key.clone()]);
    /// assert!(restored.recall_closed("s", &needed[0], Some(&kept[0].bytes)));
    /// assert_eq!(restored.push_bytes(&again).unwrap_err().code, "run_already_started");
    /// ```
    pub fn leave_closed_to_store(&mut self) {
        self.closed_to_store = true;
        for s in self.sessions.values_mut() {
            s.start_leaving();
        }
    }

    /// Whether this checker leaves closed history to its host's store
    /// ([`Checker::leave_closed_to_store`], or restored from such a
    /// checker's snapshot).
    pub fn leaves_closed_to_store(&self) -> bool {
        self.closed_to_store
    }

    /// Up to `limit` closed records of `session_id` created or changed
    /// since the last call, in key order, for the host to keep; each is
    /// handed over once (again when it changes). Empty unless the checker
    /// leaves closed history to the store.
    pub fn take_closed(&mut self, session_id: &str, limit: usize) -> Vec<ClosedRecord> {
        let mut out = self.take_closed_runs(session_id, limit);
        if out.len() < limit {
            if let Some(bytes) = self.take_transcript(session_id) {
                let key = super::transcript_store::key();
                out.push(ClosedRecord { key, bytes });
            }
        }
        out
    }

    /// [`Checker::take_closed`] of runs and tool calls.
    fn take_closed_runs(&mut self, session_id: &str, limit: usize) -> Vec<ClosedRecord> {
        let Some(s) = self.sessions.get_mut(session_id) else {
            return Vec::new();
        };
        let Some(l) = s.leaving.as_deref_mut() else {
            return Vec::new();
        };
        let mut keys = Vec::new();
        while keys.len() < limit {
            match l.dirty.pop_first() {
                Some(k) => keys.push(k),
                None => break,
            }
        }
        if l.dirty.is_empty() {
            // An emptied B-tree keeps its root node; a new one holds none.
            l.dirty = BTreeSet::new();
        }
        keys.into_iter()
            .filter_map(|key| {
                let bytes = s.closed_bytes(key.kind, &key.id)?.to_vec();
                Some(ClosedRecord { key, bytes })
            })
            .collect()
    }

    /// Whether closed records of `session_id` are left to take
    /// ([`Checker::take_closed`]).
    pub fn has_closed_to_take(&self, session_id: &str) -> bool {
        self.sessions
            .get(session_id)
            .and_then(|s| s.leaving.as_deref())
            .is_some_and(|l| !l.dirty.is_empty())
            || self.transcript_due(session_id)
    }

    /// What the last [`CLOSED_RECALL`] refusal of a record of `session_id`
    /// asked the host to look up, in key order (then cleared).
    pub fn closed_needed(&mut self, session_id: &str) -> Vec<ClosedKey> {
        self.sessions
            .get_mut(session_id)
            .and_then(|s| s.leaving.as_deref_mut())
            .map(|l| std::mem::take(&mut l.needed))
            .unwrap_or_default()
    }

    /// Gives back a closed record of `session_id` that this checker was
    /// restored without: `stored` as [`Checker::take_closed`] handed it
    /// over, or `None` when the host's store holds no record of that key.
    /// `false`, and nothing learned, when the checker holds every closed
    /// record of the session, already holds a trace of the id, or the
    /// bytes are not such a record.
    pub fn recall_closed(
        &mut self,
        session_id: &str,
        key: &ClosedKey,
        stored: Option<&[u8]>,
    ) -> bool {
        let Some(s) = self.sessions.get_mut(session_id) else {
            return false;
        };
        if key.kind == ClosedKind::Transcript {
            let copy = |b: &[u8]| bytes::Bytes::copy_from_slice(b);
            return stored.is_some_and(|b| self.recall_transcript(session_id, copy(b)));
        }
        if !s.unknown(key.kind, &key.id) {
            return false;
        }
        match stored {
            None => {
                let l = s.leaving.get_or_insert_with(Box::default);
                if l.absent.len() >= ABSENT_MAX {
                    l.absent.clear();
                }
                l.absent.insert(key.clone());
                true
            }
            Some(b) => {
                if !Closed::valid(key.kind, &key.id, b) {
                    return false;
                }
                let c = s.closed.get_or_insert_with(Box::default);
                match key.kind {
                    ClosedKind::Run => c.runs.insert(&key.id, b),
                    ClosedKind::ToolCall => c.tools.insert(&key.id, b),
                    ClosedKind::Transcript => return false,
                }
                true
            }
        }
    }

    /// Whether `id` may be a closed run or tool call of `session_id` that
    /// this checker left to its host's store and holds no trace of: what a
    /// host looks up ([`Checker::recall_closed`]) before a read of it, or
    /// before a record naming it (which would be refused with
    /// [`CLOSED_RECALL`] until then).
    pub fn closed_unknown(&self, session_id: &str, kind: ClosedKind, id: &str) -> bool {
        self.sessions
            .get(session_id)
            .is_some_and(|s| s.unknown(kind, id))
    }

    /// Whether the checker holds every closed run and tool call of
    /// `session_id`, and every message of its transcript (`false` after a
    /// restore from a snapshot that left some to the store: reads of
    /// closed history and of the transcript then answer only for what was
    /// recalled).
    pub fn holds_closed_history(&self, session_id: &str) -> bool {
        self.sessions
            .get(session_id)
            .is_none_or(|s| s.closed_before() == 0 && s.x().transcript.messages.away() == 0)
    }
}

impl Session {
    /// Once a session of a checker that leaves closed history to the
    /// store first holds some, everything closed so far is to be handed
    /// over (later changes are noted as they happen). A session with none
    /// carries nothing for it.
    pub(super) fn start_leaving(&mut self) {
        if self.leaving.is_none() && self.closed.is_some() {
            self.leave_closed();
        }
    }

    /// See [`Leaving::before`] (0 when the session holds all).
    pub(super) fn closed_before(&self) -> u64 {
        self.leaving.as_ref().map_or(0, |l| l.before)
    }

    /// See [`Leaving::runs_before`].
    pub(super) fn closed_runs_before(&self) -> bool {
        self.leaving.as_ref().is_some_and(|l| l.runs_before)
    }

    /// Starts leaving closed history to the store: everything closed so
    /// far is to be handed over.
    pub(super) fn leave_closed(&mut self) {
        let mut dirty = BTreeSet::new();
        if let Some(c) = self.closed() {
            for (kind, arena) in [(ClosedKind::Run, &c.runs), (ClosedKind::ToolCall, &c.tools)] {
                for (id, _) in arena.sorted() {
                    dirty.insert(ClosedKey {
                        kind,
                        id: id.to_owned(),
                    });
                }
            }
        }
        let l = self.leaving.get_or_insert_with(Box::default);
        l.dirty.extend(dirty);
    }

    /// The held closed record of `id`, as handed to the store.
    pub(super) fn closed_bytes(&self, kind: ClosedKind, id: &str) -> Option<&[u8]> {
        let c = self.closed()?;
        match kind {
            ClosedKind::Run => c.runs.get(id),
            ClosedKind::ToolCall => c.tools.get(id),
            ClosedKind::Transcript => None,
        }
    }

    /// The closed records yet to be handed to the store, in key order.
    pub(super) fn closed_to_hand_over(&self) -> impl Iterator<Item = &ClosedKey> {
        self.leaving.iter().flat_map(|l| l.dirty.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Applied;
    use crate::Validator;
    use std::collections::HashMap;

    fn ev(n: u64, root: &str, run: &str, seq: u64, body: &str) -> Vec<u8> {
        format!(
            r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},"rootRunId":"{root}","runId":"{run}","sequence":{seq},{body}}}"#
        )
        .into_bytes()
    }

    /// Pushes as a host does: a [`CLOSED_RECALL`] refusal is answered from
    /// `store` and the record pushed again.
    fn push(c: &mut Checker, store: &HashMap<ClosedKey, Vec<u8>>, b: &[u8]) -> String {
        let mut out = c.push_bytes(b);
        while let Err(r) = &out {
            if r.code != CLOSED_RECALL {
                break;
            }
            for k in c.closed_needed("s") {
                assert!(c.recall_closed("s", &k, store.get(&k).map(Vec::as_slice)));
            }
            out = c.push_bytes(b);
        }
        format!("{out:?}")
    }

    fn keep(c: &mut Checker, store: &mut HashMap<ClosedKey, Vec<u8>>) {
        for r in c.take_closed("s", usize::MAX) {
            store.insert(r.key, r.bytes);
        }
    }

    /// Root `R` stays open; its nested run `X` (with tool call `t`) and a
    /// top-level run before it closed.
    fn history() -> (Checker, HashMap<ClosedKey, Vec<u8>>) {
        let mut c = Checker::default();
        c.leave_closed_to_store();
        let mut store = HashMap::new();
        let lines = [
            ev(1, "A", "A", 1, r#""type":"run.started""#),
            ev(2, "A", "A", 2, r#""type":"run.finished""#),
            ev(3, "R", "R", 1, r#""type":"run.started""#),
            ev(4, "R", "X", 2, r#""type":"run.started","parentRunId":"R""#),
            ev(
                5,
                "R",
                "X",
                3,
                r#""type":"tool.call.started","toolCallId":"t","toolName":"x","executor":"backend","args":{}"#,
            ),
            ev(
                6,
                "R",
                "X",
                4,
                r#""type":"tool.call.finished","toolCallId":"t","outcome":"success","response":{}"#,
            ),
            ev(7, "R", "X", 5, r#""type":"run.finished""#),
        ];
        for l in &lines {
            assert_eq!(push(&mut c, &store, l), "Ok(Applied)");
            keep(&mut c, &mut store);
        }
        (c, store)
    }

    /// Records that name closed history in each way the rules read it.
    fn next() -> Vec<Vec<u8>> {
        vec![
            ev(8, "R", "Y", 6, r#""type":"run.started","parentRunId":"X""#),
            ev(8, "R", "X", 6, r#""type":"run.started","parentRunId":"R""#),
            ev(8, "A", "A", 3, r#""type":"run.started""#),
            ev(
                8,
                "R",
                "R",
                6,
                r#""type":"tool.call.started","toolCallId":"t","toolName":"x","executor":"backend","args":{}"#,
            ),
            ev(
                8,
                "R",
                "R",
                6,
                r#""type":"run.stop.requested","targetRunId":"X""#,
            ),
            ev(
                8,
                "R",
                "R",
                6,
                r#""type":"tool.call.started","toolCallId":"u","toolName":"x","executor":"backend","args":{}"#,
            ),
            ev(9, "R", "R", 7, r#""type":"run.finished""#),
        ]
    }

    #[test]
    fn a_restored_checker_decides_with_its_store_as_one_that_never_forgot() {
        let (c, store) = history();
        let snap = c.snapshot_for_store();
        let restore = || Checker::restore(Validator::default(), &snap).unwrap();
        let mut restored = restore();
        assert!(!restored.holds_closed_history("s"));
        assert!(restored.has_runs("s"));
        let mut never = c.clone();
        for b in next() {
            let want = format!("{:?}", never.push_bytes(&b));
            let shown = String::from_utf8_lossy(&b).into_owned();
            assert_eq!(push(&mut restored, &store, &b), want, "{shown}");
            // Each record alone, on a checker that recalled nothing yet.
            let alone = format!("{:?}", c.clone().push_bytes(&b));
            assert_eq!(push(&mut restore(), &store, &b), alone, "{shown}");
        }
        assert_eq!(restored.records_seen(), never.records_seen());
    }

    #[test]
    fn what_was_handed_over_is_left_out_of_the_snapshot() {
        let (mut c, mut store) = history();
        let line = ev(8, "R", "R", 6, r#""type":"run.finished""#);
        assert_eq!(push(&mut c, &store, &line), "Ok(Applied)");
        keep(&mut c, &mut store);
        let at = |c: &Checker| c.snapshot_for_store().len();
        let mut full = c.clone();
        full.closed_to_store = false;
        let (before, full_before) = (at(&c), at(&full));
        for i in 0..100 {
            let (n, id) = (9 + 2 * i, format!("B{i}"));
            for (k, b) in [
                (1, r#""type":"run.started""#),
                (2, r#""type":"run.finished""#),
            ] {
                let line = ev(n + k - 1, &id, &id, k, b);
                assert_eq!(push(&mut c, &store, &line), "Ok(Applied)");
                assert_eq!(full.push_bytes(&line), Ok(Applied::Applied));
                keep(&mut c, &mut store);
            }
        }
        // Nothing grows but the numbers.
        assert!(at(&c) < before + 16, "{before} {}", at(&c));
        assert!(
            at(&full) > full_before + 100 * 4,
            "{full_before} {}",
            at(&full)
        );
        // Restored, it hands over nothing it already did.
        let mut r = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
        assert!(r.leaves_closed_to_store());
        assert!(r.take_closed("s", usize::MAX).is_empty());
    }

    #[test]
    fn what_was_not_handed_over_stays_in_the_snapshot_until_it_is() {
        let (mut c, mut store) = history();
        let line = ev(8, "R", "R", 6, r#""type":"run.finished""#);
        assert_eq!(push(&mut c, &store, &line), "Ok(Applied)");
        assert!(c.has_closed_to_take("s"));
        let mut r = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
        assert_eq!(
            r.run_state("s", "R"),
            Some(crate::checker::RunState::Finished)
        );
        let handed: Vec<ClosedKey> = r.take_closed("s", 1).into_iter().map(|r| r.key).collect();
        assert_eq!(handed.len(), 1);
        keep(&mut r, &mut store);
        assert!(!r.has_closed_to_take("s"));
        let again = Checker::restore(Validator::default(), &r.snapshot_for_store()).unwrap();
        assert_eq!(again.run_state("s", "R"), None, "left to the store");
    }

    #[test]
    fn a_refusal_for_recall_changes_nothing_and_bad_bytes_are_not_recalled() {
        let (c, store) = history();
        let mut r = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
        let before = r.snapshot();
        let line = ev(8, "A", "A", 3, r#""type":"run.started""#);
        assert_eq!(r.push_bytes(&line).unwrap_err().code, CLOSED_RECALL);
        assert_eq!(r.snapshot(), before);
        let needed = r.closed_needed("s");
        assert_eq!(needed.len(), 1);
        assert!(!r.recall_closed("s", &needed[0], Some(&[0xff, 0xff])));
        assert!(!r.recall_closed("t", &needed[0], store.get(&needed[0]).map(Vec::as_slice)));
        assert!(r.recall_closed("s", &needed[0], store.get(&needed[0]).map(Vec::as_slice)));
        assert!(!r.recall_closed("s", &needed[0], None), "held now");
        assert_eq!(r.push_bytes(&line).unwrap_err().code, "run_already_started");
        // An id no store holds is looked up once.
        let fresh = ev(8, "R", "N", 6, r#""type":"run.started","parentRunId":"R""#);
        assert_eq!(r.push_bytes(&fresh).unwrap_err().code, CLOSED_RECALL);
        for k in r.closed_needed("s") {
            assert!(r.recall_closed("s", &k, None));
        }
        assert_eq!(r.push_bytes(&fresh), Ok(Applied::Applied));
    }

    /// A snapshot written before the checker left closed history to the
    /// store holds all of it: once restored and switched over, it is
    /// handed over in steps, and each snapshot keeps what is not yet.
    #[test]
    fn an_earlier_snapshot_hands_its_closed_history_over_in_steps() {
        let (c, _) = history();
        let mut earlier = c.clone();
        earlier.closed_to_store = false;
        let snap = earlier.snapshot_for_store();
        assert_eq!(snap[8], 11);
        let mut r = Checker::restore(Validator::default(), &snap).unwrap();
        assert!(!r.leaves_closed_to_store());
        r.leave_closed_to_store();
        let mut store = HashMap::new();
        for r in r.take_closed("s", 2) {
            store.insert(r.key, r.bytes);
        }
        let mut again = Checker::restore(Validator::default(), &r.snapshot_for_store()).unwrap();
        assert!(again.has_closed_to_take("s"));
        keep(&mut again, &mut store);
        assert_eq!(store.len(), 3, "runs A and X, tool call t");
        let last = Checker::restore(Validator::default(), &again.snapshot_for_store()).unwrap();
        let mut never = c.clone();
        let mut last = last;
        for b in next() {
            let want = format!("{:?}", never.push_bytes(&b));
            assert_eq!(push(&mut last, &store, &b), want);
        }
    }

    #[test]
    fn a_snapshot_that_claims_more_than_it_covers_does_not_restore() {
        let (c, _) = history();
        let snap = c.snapshot_for_store();
        let text = String::from_utf8_lossy(&snap).into_owned();
        assert!(text.contains(r#""closedBefore":7"#));
        let swap = |from: &str, to: &str| {
            let at = snap
                .windows(from.len())
                .position(|w| w == from.as_bytes())
                .unwrap();
            let mut b = snap.clone();
            b.splice(at..at + from.len(), to.bytes());
            // The JSON part's length moves with it.
            let n = u64::from_le_bytes(b[12..20].try_into().unwrap()) + to.len() as u64
                - from.len() as u64;
            b[12..20].copy_from_slice(&n.to_le_bytes());
            b
        };
        assert!(Checker::restore(
            Validator::default(),
            &swap("\"closedBefore\":7", "\"closedBefore\":8")
        )
        .is_none());
        assert!(Checker::restore(
            Validator::default(),
            &swap("\"closedBefore\":7", "\"closedBefore\":6")
        )
        .is_some());
        let mut older = snap.clone();
        older[8] = 11;
        assert!(Checker::restore(Validator::default(), &older).is_none());
    }
}
