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
/// snapshots, session metadata, idempotency keys): none may be dropped.
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
        | SideSpace::Idempotency => Carry::Verbatim,
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

/// A session's whole journal; the cursor must advance with every page.
pub async fn read_journal<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
) -> Result<Vec<crate::StoredEvent>, StoreError> {
    let mut out = Vec::new();
    let mut pages = crate::JournalPages::new(store, session_id, 0, PAGE);
    while let Some(page) = pages.next().await? {
        out.extend(page);
    }
    Ok(out)
}

/// One page of a listing keyed by strings, checked to advance past `after`.
fn advanced<T>(
    page: Vec<T>,
    after: Option<&str>,
    key: impl Fn(&T) -> &str,
) -> Result<Vec<T>, StoreError> {
    let mut last = after.map(str::to_owned);
    for item in &page {
        let k = key(item);
        if last.as_deref().is_some_and(|l| k <= l) {
            return Err(StoreError::corrupt(Damage::CursorStalled, None, None));
        }
        last = Some(k.to_owned());
    }
    Ok(page)
}

/// Calls `each` with every page of `space`, in key order.
async fn side_pages<S: Store + ?Sized>(
    store: &S,
    space: SideSpace,
    mut each: impl FnMut(Vec<(String, bytes::Bytes)>) -> Result<(), MigrateError>,
) -> Result<(), MigrateError> {
    let mut after: Option<String> = None;
    loop {
        let page = store.list_side(space, after.as_deref(), PAGE).await?;
        let page = advanced(page, after.as_deref(), |(k, _)| k)?;
        let Some((last, _)) = page.last() else {
            return Ok(());
        };
        after = Some(last.clone());
        each(page)?;
    }
}

/// Every workspace with a watch stream, in order.
async fn all_workspaces<S: Store + ?Sized>(store: &S) -> Result<Vec<String>, StoreError> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let page = store
            .list_workspaces(out.last().map(String::as_str), PAGE)
            .await?;
        let page = advanced(page, out.last().map(String::as_str), |w| w)?;
        if page.is_empty() {
            return Ok(out);
        }
        out.extend(page);
    }
}

/// A workspace's whole watch stream.
async fn watch_stream<S: Store + ?Sized>(
    store: &S,
    workspace: &str,
) -> Result<Vec<crate::StoredWatch>, StoreError> {
    let mut out: Vec<crate::StoredWatch> = Vec::new();
    let mut after = 0;
    loop {
        let page = store.read_watch(workspace, after, PAGE).await?;
        for ev in &page.events {
            after = row::advance(workspace, after, ev.revision)?;
        }
        let more = page.next.is_some() && !page.events.is_empty();
        out.extend(page.events);
        if !more {
            return Ok(out);
        }
    }
}

/// Copies everything `from` holds into `to`: each session's journal (the
/// target must hold a prefix of it; the rest is appended, so an
/// interrupted run resumes), then every record of every side space, then
/// every workspace's watch stream (redelivery makes a repeat a no-op).
/// `progress` is called with each session before it is copied. Answers
/// what this run copied; [`compare`] then checks the whole target.
pub async fn copy_all<A: Store + ?Sized, B: Store + ?Sized>(
    from: &A,
    to: &B,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<Tally, MigrateError> {
    let mut copied = Tally::default();
    let sessions = all_sessions(from).await?;
    for (i, sid) in sessions.iter().enumerate() {
        progress(i, sessions.len(), sid);
        let source = read_journal(from, sid).await?;
        let target_head = to.head(sid).await?;
        let done = read_journal(to, sid).await?;
        if done.len() as u64 != target_head
            || done.len() > source.len()
            || done.iter().zip(&source).any(|(a, b)| a.bytes != b.bytes)
        {
            return Err(MigrateError::TargetDiffers {
                session: sid.clone(),
            });
        }
        let mut head = target_head;
        let rest = &source[done.len()..];
        for chunk in rest.chunks(PAGE) {
            let batch = Batch {
                session_id: sid.clone(),
                expected_head: head,
                events: chunk.to_vec(),
                ..Batch::default()
            };
            head = to.append(batch).await?.head;
        }
        copied.sessions += 1;
        copied.events += rest.len() as u64;
    }
    for space in SideSpace::ALL {
        let Carry::Verbatim = how(space);
        let mut pages = Vec::new();
        side_pages(from, space, |page| {
            pages.push(page);
            Ok(())
        })
        .await?;
        for page in pages {
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
        let stream = watch_stream(from, &ws).await?;
        copied.workspaces += 1;
        copied.watch_events += stream.len() as u64;
        for chunk in stream.chunks(PAGE) {
            let batch = Batch {
                watch: chunk
                    .iter()
                    .map(|event| WatchWrite {
                        workspace_id: ws.clone(),
                        event: event.clone(),
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
/// `to` holds exactly the same; else the first part that differs.
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
        let a = read_journal(from, sid).await?;
        let b = read_journal(to, sid).await?;
        if a.len() != b.len() || a.iter().zip(&b).any(|(x, y)| x.bytes != y.bytes) {
            return Err(differs(format!("journal of {sid}")));
        }
        tally.sessions += 1;
        tally.events += a.len() as u64;
    }
    for space in SideSpace::ALL {
        let mut a = Vec::new();
        side_pages(from, space, |p| {
            a.extend(p);
            Ok(())
        })
        .await?;
        let mut b = Vec::new();
        side_pages(to, space, |p| {
            b.extend(p);
            Ok(())
        })
        .await?;
        if a != b {
            return Err(differs(space.name().into()));
        }
        tally.side.insert(space, a.len() as u64);
    }
    let workspaces = all_workspaces(from).await?;
    if all_workspaces(to).await? != workspaces {
        return Err(differs("workspaces".into()));
    }
    for ws in &workspaces {
        let a = watch_stream(from, ws).await?;
        if watch_stream(to, ws).await? != a {
            return Err(differs(format!("watch stream of {ws}")));
        }
        tally.workspaces += 1;
        tally.watch_events += a.len() as u64;
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
