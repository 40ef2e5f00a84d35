//! The batch rules every backend applies inside its write transaction.

use std::collections::{BTreeMap, BTreeSet};

use crate::{
    Appended, Batch, Expect, Scope, SideSpace, SideWrite, StoreError, StoredEvent, WatchWrite,
};

/// Every read [`plan_batch`] may make for a batch, computed from the batch
/// alone. A backend that answers from what it read ahead (PostgreSQL reads
/// everything in a few round trips before deciding) reads exactly these;
/// [`plan_batch`] refuses any other read with [`StoreError::UndeclaredRead`],
/// so a read added to it later cannot get a silent `0`/`None` on one
/// backend only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reads<'a> {
    /// The session whose head is read (empty for a workspace-only batch).
    pub session: &'a str,
    /// Event ids of the session looked up for redelivery.
    pub events: BTreeSet<&'a str>,
    /// Run trees (`Scope::Run`, by `rootRunId`) and workflows whose last
    /// position is read.
    pub scopes: BTreeSet<(ScopeKey, &'a str)>,
    /// Side records whose current value is read.
    pub side: BTreeSet<(SideSpace, &'a str)>,
    /// `(workspaceId, eventId)` of watch events looked up for redelivery.
    pub watch: BTreeSet<(&'a str, &'a str)>,
    /// Workspaces whose newest revision is read.
    pub watch_heads: BTreeSet<&'a str>,
}

/// [`Scope`] as an ordered key of [`Reads::scopes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScopeKey {
    /// A run tree.
    Run,
    /// A workflow.
    Workflow,
}

impl From<Scope> for ScopeKey {
    fn from(s: Scope) -> Self {
        match s {
            Scope::Run => Self::Run,
            Scope::Workflow => Self::Workflow,
        }
    }
}

impl<'a> Reads<'a> {
    /// The reads [`plan_batch`] may make for `batch`.
    pub fn of(batch: &'a Batch) -> Self {
        let mut r = Self {
            session: &batch.session_id,
            ..Self::default()
        };
        for ev in &batch.events {
            r.events.insert(&ev.event_id);
            if let Some((root, _)) = &ev.position.run {
                r.scopes.insert((ScopeKey::Run, root));
            }
            if let Some((wf, _)) = &ev.position.workflow {
                r.scopes.insert((ScopeKey::Workflow, wf));
            }
        }
        // `Expect::Any` holds whatever is stored: nothing to read.
        for w in batch.side.iter().filter(|w| w.expect != Expect::Any) {
            r.side.insert((w.space, &w.key));
        }
        if !batch.session_id.is_empty() {
            r.side.insert((SideSpace::Tombstone, &batch.session_id));
        }
        for w in &batch.watch {
            r.watch.insert((&w.workspace_id, &w.event.event_id));
            r.watch_heads.insert(&w.workspace_id);
        }
        r
    }
}

/// A [`View`] that serves only the declared [`Reads`].
struct Declared<'r, 'a, V> {
    reads: &'r Reads<'a>,
    view: &'r mut V,
}

fn undeclared(what: &'static str) -> StoreError {
    StoreError::UndeclaredRead { what }
}

impl<V: View> View for Declared<'_, '_, V> {
    fn head(&mut self, session_id: &str) -> Result<u64, StoreError> {
        if session_id != self.reads.session {
            return Err(undeclared("head"));
        }
        self.view.head(session_id)
    }
    fn event(
        &mut self,
        session_id: &str,
        event: &StoredEvent,
    ) -> Result<Option<(u64, bool)>, StoreError> {
        if session_id != self.reads.session || !self.reads.events.contains(event.event_id.as_str())
        {
            return Err(undeclared("event"));
        }
        self.view.event(session_id, event)
    }
    fn scope_head(&mut self, session_id: &str, scope: Scope, id: &str) -> Result<u64, StoreError> {
        if session_id != self.reads.session || !self.reads.scopes.contains(&(scope.into(), id)) {
            return Err(undeclared("scope_head"));
        }
        self.view.scope_head(session_id, scope, id)
    }
    fn side(&mut self, write: &SideWrite) -> Result<Option<Vec<u8>>, StoreError> {
        if !self.reads.side.contains(&(write.space, write.key.as_str())) {
            return Err(undeclared("side"));
        }
        self.view.side(write)
    }
    fn watch(&mut self, write: &WatchWrite) -> Result<Option<bool>, StoreError> {
        let key = (write.workspace_id.as_str(), write.event.event_id.as_str());
        if !self.reads.watch.contains(&key) {
            return Err(undeclared("watch"));
        }
        self.view.watch(write)
    }
    fn watch_head(&mut self, workspace_id: &str) -> Result<u64, StoreError> {
        if !self.reads.watch_heads.contains(workspace_id) {
            return Err(undeclared("watch_head"));
        }
        self.view.watch_head(workspace_id)
    }
}

/// What a backend can read inside its write transaction; [`plan_batch`]
/// decides everything else. Reads see the transaction's own earlier writes
/// (an earlier batch of the same group commit).
pub trait View {
    /// The session head (0 for an unknown session).
    fn head(&mut self, session_id: &str) -> Result<u64, StoreError>;
    /// If `(session_id, event.event_id)` is stored: its `sessionSequence`
    /// and whether the stored bytes equal `event.bytes`.
    fn event(
        &mut self,
        session_id: &str,
        event: &StoredEvent,
    ) -> Result<Option<(u64, bool)>, StoreError>;
    /// The last stored position of a run tree or workflow (0 if none).
    fn scope_head(&mut self, session_id: &str, scope: Scope, id: &str) -> Result<u64, StoreError>;
    /// A side record's current value.
    fn side(&mut self, write: &SideWrite) -> Result<Option<Vec<u8>>, StoreError>;
    /// If `(workspaceId, eventId)` of this watch event is stored: whether the
    /// stored bytes are equal.
    fn watch(&mut self, write: &WatchWrite) -> Result<Option<bool>, StoreError>;
    /// The newest stored revision of a workspace's watch stream (0 if none).
    fn watch_head(&mut self, workspace_id: &str) -> Result<u64, StoreError>;
}

/// What a backend does with a batch, as decided by [`plan_batch`].
#[derive(Debug)]
pub enum Plan<'a> {
    /// Every event is stored with identical bytes: write nothing, answer this.
    Redelivered(Appended),
    /// Write `fresh`, `fresh_watch` and the batch's side writes, then set the
    /// head to `appended.head`.
    Write {
        /// The events not stored yet, in batch order.
        fresh: Vec<&'a StoredEvent>,
        /// The watch events not stored yet, in batch order.
        fresh_watch: Vec<&'a WatchWrite>,
        /// The answer once the write commits.
        appended: Appended,
        /// The batch writes its own session's tombstone: delete the
        /// session's journal (events, id and scope indexes, head) in the
        /// same transaction ([`crate::lifecycle`]).
        purge: bool,
    },
}

/// Decides a batch, in this order: redelivery of events and watch events
/// (identical bytes report the stored position, other bytes are
/// [`StoreError::EventConflict`]; a batch whose events and watch events are
/// all stored is a redelivery whole, side writes included), the head guard, contiguity of all three
/// ordering domains, watch revisions increasing per workspace, side
/// expectations. Nothing is decided by the backend, so every backend refuses
/// exactly the same batches.
///
/// A batch with no events and an empty `session_id` is a workspace-only
/// batch: it carries watch (and side) writes and has no head to guard.
///
/// Every read goes through the batch's declared [`Reads`]; any other read
/// is [`StoreError::UndeclaredRead`].
pub fn plan_batch<'a>(batch: &'a Batch, view: &mut impl View) -> Result<Plan<'a>, StoreError> {
    let reads = Reads::of(batch);
    decide(
        batch,
        &mut Declared {
            reads: &reads,
            view,
        },
    )
}

fn decide<'a>(batch: &'a Batch, view: &mut impl View) -> Result<Plan<'a>, StoreError> {
    let sid = batch.session_id.as_str();
    // A deleted session takes nothing more, not even a redelivery of what
    // it once held: its journal is gone, so a redelivery would resurrect it.
    if !sid.is_empty()
        && view
            .side(&crate::lifecycle::tombstone_probe(sid))?
            .is_some()
    {
        return Err(StoreError::SessionDeleted {
            session_id: sid.to_owned(),
        });
    }
    let purge = crate::lifecycle::is_purge(batch);
    if purge && !batch.events.is_empty() {
        return Err(StoreError::SessionDeleted {
            session_id: sid.to_owned(),
        });
    }
    let head = view.head(sid)?;
    let mut positions = Vec::with_capacity(batch.events.len());
    let mut fresh = Vec::new();
    for ev in &batch.events {
        match view.event(sid, ev)? {
            Some((seq, true)) => positions.push(seq),
            Some((_, false)) => return Err(StoreError::EventConflict),
            None => {
                positions.push(ev.position.session_sequence);
                fresh.push(ev);
            }
        }
    }
    let mut fresh_watch = Vec::new();
    for w in &batch.watch {
        match view.watch(w)? {
            Some(true) => {}
            Some(false) => return Err(StoreError::EventConflict),
            None => fresh_watch.push(w),
        }
    }
    // A batch whose events are all stored is the same batch again (event
    // ids are unique to it): its side writes committed with those events,
    // so they are not decided again. Re-deciding them would answer a
    // redelivery after a lost answer with a head or side conflict.
    let nothing_new = fresh.is_empty()
        && fresh_watch.is_empty()
        && (batch.side.is_empty() || !batch.events.is_empty());
    if nothing_new && !(batch.events.is_empty() && batch.watch.is_empty()) {
        return Ok(Plan::Redelivered(Appended {
            head,
            positions,
            redelivered: true,
        }));
    }
    let workspace_only = sid.is_empty() && batch.events.is_empty();
    if !workspace_only && batch.expected_head != head {
        return Err(StoreError::HeadConflict {
            expected: batch.expected_head,
            current: head,
        });
    }
    let next = check_contiguity(sid, head, &fresh, view)?;
    let mut revisions: BTreeMap<&str, u64> = BTreeMap::new();
    for w in &fresh_watch {
        let ws = w.workspace_id.as_str();
        let current = match revisions.get(ws) {
            Some(r) => *r,
            None => view.watch_head(ws)?,
        };
        if w.event.revision <= current {
            return Err(StoreError::RevisionRegression { current });
        }
        revisions.insert(ws, w.event.revision);
    }
    for w in batch.side.iter().filter(|w| w.expect != Expect::Any) {
        if !expectation_holds(&w.expect, view.side(w)?.as_deref()) {
            return Err(StoreError::SideConflict);
        }
    }
    Ok(Plan::Write {
        fresh,
        fresh_watch,
        appended: Appended {
            head: if purge { 0 } else { next },
            positions,
            redelivered: false,
        },
        purge,
    })
}

/// Checks that the new events of a batch continue the session head and the
/// head of every run tree and workflow they touch. Returns the new head.
fn check_contiguity(
    sid: &str,
    head: u64,
    fresh: &[&StoredEvent],
    view: &mut impl View,
) -> Result<u64, StoreError> {
    let mut next = head;
    let mut heads: BTreeMap<(u8, &str), u64> = BTreeMap::new();
    for ev in fresh {
        if ev.position.session_sequence != next + 1 {
            return Err(StoreError::Contiguity {
                domain: "sessionSequence",
            });
        }
        next += 1;
        let scoped = [
            (Scope::Run, 0, "sequence", &ev.position.run),
            (
                Scope::Workflow,
                1,
                "workflowSequence",
                &ev.position.workflow,
            ),
        ];
        for (scope, tag, domain, pos) in scoped {
            if let Some((id, seq)) = pos {
                let last = match heads.get(&(tag, id.as_str())) {
                    Some(h) => *h,
                    None => view.scope_head(sid, scope, id)?,
                };
                if *seq != last + 1 {
                    return Err(StoreError::Contiguity { domain });
                }
                heads.insert((tag, id.as_str()), *seq);
            }
        }
    }
    Ok(next)
}

/// Whether a side record's current value satisfies `expect`.
fn expectation_holds(expect: &Expect, current: Option<&[u8]>) -> bool {
    match (expect, current) {
        (Expect::Any, _) => true,
        (Expect::Absent, c) => c.is_none(),
        (Expect::Equals(b), Some(c)) => c == b.as_ref(),
        (Expect::Equals(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every read with "nothing stored".
    struct Empty;

    impl View for Empty {
        fn head(&mut self, _: &str) -> Result<u64, StoreError> {
            Ok(0)
        }
        fn event(&mut self, _: &str, _: &StoredEvent) -> Result<Option<(u64, bool)>, StoreError> {
            Ok(None)
        }
        fn scope_head(&mut self, _: &str, _: Scope, _: &str) -> Result<u64, StoreError> {
            Ok(0)
        }
        fn side(&mut self, _: &SideWrite) -> Result<Option<Vec<u8>>, StoreError> {
            Ok(None)
        }
        fn watch(&mut self, _: &WatchWrite) -> Result<Option<bool>, StoreError> {
            Ok(None)
        }
        fn watch_head(&mut self, _: &str) -> Result<u64, StoreError> {
            Ok(0)
        }
    }

    fn side(key: &str) -> SideWrite {
        SideWrite {
            space: SideSpace::Queue,
            key: key.into(),
            expect: Expect::Absent,
            value: None,
        }
    }

    #[test]
    fn a_read_the_batch_does_not_declare_is_a_typed_error() {
        let batch = Batch {
            session_id: "s".into(),
            side: vec![side("s/1")],
            ..Batch::default()
        };
        let reads = Reads::of(&batch);
        let mut empty = Empty;
        let mut view = Declared {
            reads: &reads,
            view: &mut empty,
        };
        assert_eq!(view.side(&side("s/1")), Ok(None));
        assert_eq!(view.head("s"), Ok(0));
        let refused = [
            view.side(&side("s/2")).map(|_| ()),
            view.head("other").map(|_| ()),
            view.scope_head("s", Scope::Run, "r").map(|_| ()),
            view.watch_head("w").map(|_| ()),
        ];
        for r in refused {
            let e = r.err();
            assert!(
                matches!(e, Some(StoreError::UndeclaredRead { .. })),
                "{e:?}"
            );
            assert_eq!(e.map(|e| e.code()), Some("undeclared_read"));
        }
    }

    #[test]
    fn plan_batch_reads_only_what_the_batch_declares() {
        let batch = Batch {
            session_id: "s".into(),
            side: vec![side("s/1"), side("s/2")],
            ..Batch::default()
        };
        assert!(matches!(
            plan_batch(&batch, &mut Empty),
            Ok(Plan::Write { .. })
        ));
        let reads = Reads::of(&batch);
        // The two writes and the session's tombstone.
        assert_eq!(reads.side.len(), 3);
        assert_eq!(reads.session, "s");
    }
}
