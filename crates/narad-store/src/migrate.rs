//! Copying a whole store to another backend, and comparing two stores,
//! through the contract's one enumeration of every record: every session's
//! journal ([`Store::list_sessions`], [`Store::read_session`]), every record
//! of every side space ([`SideSpace::ALL`], [`Store::list_side`]) and every
//! workspace's watch stream ([`Store::list_workspaces`], [`Store::read_watch`]).
//!
//! A space added to [`SideSpace`] is migrated and compared without a change
//! here; [`how`] must still name how (an exhaustive match, so adding a
//! variant does not compile until it is decided).

use std::collections::BTreeMap;

use crate::{row, Batch, Damage, Expect, SideSpace, SideWrite, Store, StoreError, WatchWrite};

const PAGE: usize = 1000;

/// How a side space is carried to another store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carry {
    /// Every record, key and bytes unchanged.
    Verbatim,
}

/// How `space` is migrated. Every side record is the engine's durable
/// state (open interrupts, tokens, leases, queued starts, timers,
/// snapshots, session metadata, idempotency keys, closed history): none
/// may be dropped.
pub const fn how(space: SideSpace) -> Carry {
    match space {
        SideSpace::Lease
        | SideSpace::Token
        | SideSpace::Snapshot
        | SideSpace::Session
        | SideSpace::Interrupt
        | SideSpace::Timer
        | SideSpace::Queue
        | SideSpace::Tombstone
        | SideSpace::SessionIndex
        | SideSpace::Idempotency
        | SideSpace::Closed => Carry::Verbatim,
    }
}

/// Counts of what a store holds (or what one run copied), per kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tally {
    /// Sessions with a journal.
    pub sessions: u64,
    /// Journal events.
    pub events: u64,
    /// Records per side space (every space of [`SideSpace::ALL`]).
    pub side: BTreeMap<SideSpace, u64>,
    /// Workspaces with a watch stream.
    pub workspaces: u64,
    /// Watch events over all workspaces.
    pub watch_events: u64,
}

impl Tally {
    /// `sessions 2, events 9, lease 1, …, workspaces 1, watch 3`.
    pub fn summary(&self) -> String {
        let mut parts = vec![
            format!("sessions {}", self.sessions),
            format!("events {}", self.events),
        ];
        for space in SideSpace::ALL {
            let n = self.side.get(&space).copied().unwrap_or(0);
            parts.push(format!("{} {n}", space.name()));
        }
        parts.push(format!("workspaces {}", self.workspaces));
        parts.push(format!("watch {}", self.watch_events));
        parts.join(", ")
    }
}

/// Why a migration or a comparison stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    /// Reading or writing a store failed.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The target holds a session journal that is not a prefix of the
    /// source's: nothing of that session was copied.
    #[error("session {session}: the target already holds a different journal")]
    TargetDiffers {
        /// The session.
        session: String,
    },
    /// After copying, a part of the target differs from the source.
    #[error("the copy differs from the source in {part}")]
    CopyDiffers {
        /// `journal of SESSION`, a side space's name, `workspaces` or
        /// `watch stream of WORKSPACE`.
        part: String,
    },
}

impl MigrateError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Store(e) => e.code(),
            Self::TargetDiffers { .. } => "target_differs",
            Self::CopyDiffers { .. } => "copy_differs",
        }
    }
}

/// Every session id, in order (each page must continue after the last).
pub async fn all_sessions<S: Store + ?Sized>(store: &S) -> Result<Vec<String>, StoreError> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let page = store
            .list_sessions(out.last().map(String::as_str), PAGE)
            .await?;
        if page.is_empty() {
            return Ok(out);
        }
        for sid in page {
            if out.last().is_some_and(|last| sid <= *last) {
                return Err(StoreError::corrupt(Damage::CursorStalled, Some(&sid), None));
            }
            out.push(sid);
        }
    }
}

/// Side records listed at once: a space's records are small typed
/// records, except reducer snapshots, which reach tens of MB for a long
/// session (a 1M-event session's is 20 to 56 MB), so they are listed one
/// at a time. What a copy or a comparison holds is then one page of each
/// store, never a whole space.
fn side_page(space: SideSpace) -> usize {
    match space {
        SideSpace::Snapshot => 1,
        _ => PAGE,
    }
}

/// A space's side records a page at a time, each page checked to continue
/// after the last key of the one before.
struct SidePages<'a, S: Store + ?Sized> {
    store: &'a S,
    space: SideSpace,
    after: Option<String>,
}

impl<'a, S: Store + ?Sized> SidePages<'a, S> {
    fn new(store: &'a S, space: SideSpace) -> Self {
        Self {
            store,
            space,
            after: None,
        }
    }

    /// The next page; empty after the last.
    async fn next(&mut self) -> Result<Vec<(String, bytes::Bytes)>, StoreError> {
        let (space, limit) = (self.space, side_page(self.space));
        let page = self
            .store
            .list_side(space, self.after.as_deref(), limit)
            .await?;
        advance(&mut self.after, page.iter().map(|(k, _)| k.as_str()))?;
        Ok(page)
    }
}

/// Moves a listing's cursor `after` over the keys of its next page, each of
/// which must sort after the one before (a damaged store must not make a
/// reader loop).
fn advance<'k>(
    after: &mut Option<String>,
    keys: impl Iterator<Item = &'k str>,
) -> Result<(), StoreError> {
    for k in keys {
        if after.as_deref().is_some_and(|l| k <= l) {
            return Err(StoreError::corrupt(Damage::CursorStalled, None, None));
        }
        *after = Some(k.to_owned());
    }
    Ok(())
}

/// A session's journal an event at a time, read a page at a time.
struct Events<'a, S: Store + ?Sized> {
    pages: crate::JournalPages<'a, S>,
    page: std::vec::IntoIter<crate::StoredEvent>,
}

impl<'a, S: Store + ?Sized> Events<'a, S> {
    fn new(store: &'a S, session_id: &'a str) -> Self {
        Self {
            pages: crate::JournalPages::new(store, session_id, 0, PAGE),
            page: Vec::new().into_iter(),
        }
    }

    async fn next(&mut self) -> Result<Option<crate::StoredEvent>, StoreError> {
        loop {
            if let Some(ev) = self.page.next() {
                return Ok(Some(ev));
            }
            match self.pages.next().await? {
                Some(page) => self.page = page.into_iter(),
                None => return Ok(None),
            }
        }
    }
}

/// Every workspace with a watch stream, in order.
async fn all_workspaces<S: Store + ?Sized>(store: &S) -> Result<Vec<String>, StoreError> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let mut after = out.last().cloned();
        let page = store.list_workspaces(after.as_deref(), PAGE).await?;
        advance(&mut after, page.iter().map(String::as_str))?;
        if page.is_empty() {
            return Ok(out);
        }
        out.extend(page);
    }
}

/// A workspace's watch stream a page at a time, the revision checked to
/// advance.
struct WatchPages<'a, S: Store + ?Sized> {
    store: &'a S,
    workspace: &'a str,
    after: u64,
    done: bool,
}

impl<'a, S: Store + ?Sized> WatchPages<'a, S> {
    fn new(store: &'a S, workspace: &'a str) -> Self {
        Self {
            store,
            workspace,
            after: 0,
            done: false,
        }
    }

    /// The next page; empty after the last.
    async fn next(&mut self) -> Result<Vec<crate::StoredWatch>, StoreError> {
        if self.done {
            return Ok(Vec::new());
        }
        let page = self
            .store
            .read_watch(self.workspace, self.after, PAGE)
            .await?;
        for ev in &page.events {
            self.after = row::advance(self.workspace, self.after, ev.revision)?;
        }
        self.done = page.next.is_none() || page.events.is_empty();
        Ok(page.events)
    }
}

/// Appends to `to` what it lacks of `sid`'s journal in `from`, a page at a
/// time; answers how many events. The target must hold a prefix of the
/// source's journal, compared event by event as both are read.
async fn copy_journal<A: Store + ?Sized, B: Store + ?Sized>(
    from: &A,
    to: &B,
    sid: &str,
) -> Result<u64, MigrateError> {
    let differs = || MigrateError::TargetDiffers {
        session: sid.to_owned(),
    };
    let target_head = to.head(sid).await?;
    let mut source = Events::new(from, sid);
    let mut target = Events::new(to, sid);
    let mut held = 0u64;
    while let Some(t) = target.next().await? {
        if source.next().await?.is_none_or(|s| s.bytes != t.bytes) {
            return Err(differs());
        }
        held += 1;
    }
    if held != target_head {
        return Err(differs());
    }
    let (mut head, mut events, mut bytes) = (target_head, Vec::new(), 0);
    loop {
        let ev = source.next().await?;
        let last = ev.is_none();
        if let Some(ev) = ev {
            bytes += ev.bytes.len();
            events.push(ev);
        }
        if !events.is_empty() && (last || crate::page_full(events.len(), bytes, PAGE)) {
            let batch = Batch {
                session_id: sid.to_owned(),
                expected_head: head,
                events: std::mem::take(&mut events),
                ..Batch::default()
            };
            head = to.append(batch).await?.head;
            bytes = 0;
        }
        if last {
            return Ok(head - target_head);
        }
    }
}

/// Copies everything `from` holds into `to`: each session's journal (the
/// target must hold a prefix of it; the rest is appended, so an
/// interrupted run resumes), then every record of every side space, then
/// every workspace's watch stream (redelivery makes a repeat a no-op).
/// `progress` is called with each session before it is copied. Answers
/// what this run copied; [`compare`] then checks the whole target.
///
/// Memory: a page of each store at a time (one reducer snapshot, or up to
/// 1,000 small side records, or a journal page of at most 1,000 events and
/// [`crate::PAGE_BYTES`]), plus the list of session ids.
pub async fn copy_all<A: Store + ?Sized, B: Store + ?Sized>(
    from: &A,
    to: &B,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<Tally, MigrateError> {
    let mut copied = Tally::default();
    let sessions = all_sessions(from).await?;
    for (i, sid) in sessions.iter().enumerate() {
        progress(i, sessions.len(), sid);
        copied.events += copy_journal(from, to, sid).await?;
        copied.sessions += 1;
    }
    for space in SideSpace::ALL {
        let Carry::Verbatim = how(space);
        let mut pages = SidePages::new(from, space);
        loop {
            let page = pages.next().await?;
            if page.is_empty() {
                break;
            }
            *copied.side.entry(space).or_default() += page.len() as u64;
            // A batch with no session and no events is not head-guarded.
            let batch = Batch {
                side: page
                    .into_iter()
                    .map(|(key, value)| SideWrite {
                        space,
                        key,
                        expect: Expect::Any,
                        value: Some(value),
                    })
                    .collect(),
                ..Batch::default()
            };
            to.append(batch).await?;
        }
    }
    for ws in all_workspaces(from).await? {
        copied.workspaces += 1;
        let mut pages = WatchPages::new(from, &ws);
        loop {
            let page = pages.next().await?;
            if page.is_empty() {
                break;
            }
            copied.watch_events += page.len() as u64;
            let batch = Batch {
                watch: page
                    .into_iter()
                    .map(|event| WatchWrite {
                        workspace_id: ws.clone(),
                        event,
                    })
                    .collect(),
                ..Batch::default()
            };
            to.append(batch).await?;
        }
    }
    Ok(copied)
}

/// Compares every part of two stores: each journal's bytes, every record
/// (key and bytes) of every side space, the list of workspaces and each
/// watch stream (revisions and bytes). Answers the tally of `from` when
/// `to` holds exactly the same; else the first part that differs. Reads
/// both stores a page at a time, as [`copy_all`] does.
pub async fn compare<A: Store + ?Sized, B: Store + ?Sized>(
    from: &A,
    to: &B,
) -> Result<Tally, MigrateError> {
    let differs = |part: String| MigrateError::CopyDiffers { part };
    let mut tally = Tally::default();
    let sessions = all_sessions(from).await?;
    if all_sessions(to).await? != sessions {
        return Err(differs("sessions".into()));
    }
    for sid in &sessions {
        let (mut a, mut b) = (Events::new(from, sid), Events::new(to, sid));
        loop {
            match (a.next().await?, b.next().await?) {
                (None, None) => break,
                (Some(x), Some(y)) if x.bytes == y.bytes => tally.events += 1,
                _ => return Err(differs(format!("journal of {sid}"))),
            }
        }
        tally.sessions += 1;
    }
    for space in SideSpace::ALL {
        // Both list with the same cursor and page size, so equal spaces
        // give equal pages, and the first unequal page is a difference.
        let (mut a, mut b) = (SidePages::new(from, space), SidePages::new(to, space));
        let mut n = 0;
        loop {
            let page = a.next().await?;
            if b.next().await? != page {
                return Err(differs(space.name().into()));
            }
            if page.is_empty() {
                break;
            }
            n += page.len() as u64;
        }
        tally.side.insert(space, n);
    }
    let workspaces = all_workspaces(from).await?;
    if all_workspaces(to).await? != workspaces {
        return Err(differs("workspaces".into()));
    }
    for ws in &workspaces {
        let (mut a, mut b) = (WatchPages::new(from, ws), WatchPages::new(to, ws));
        let (mut x, mut y) = (Vec::new().into_iter(), Vec::new().into_iter());
        loop {
            // The two streams may page at different revisions.
            if x.len() == 0 {
                x = a.next().await?.into_iter();
            }
            if y.len() == 0 {
                y = b.next().await?.into_iter();
            }
            match (x.next(), y.next()) {
                (None, None) => break,
                (Some(p), Some(q)) if p == q => tally.watch_events += 1,
                _ => return Err(differs(format!("watch stream of {ws}"))),
            }
        }
        tally.workspaces += 1;
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_space_is_carried() {
        for space in SideSpace::ALL {
            assert_eq!(how(space), Carry::Verbatim);
        }
        let t = Tally::default().summary();
        for space in SideSpace::ALL {
            assert!(t.contains(space.name()), "{t}");
        }
    }
}
