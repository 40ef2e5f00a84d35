//! Filtered history with combined cursors (§10.2).
//!
//! A scope cursor `n` (run-tree `sequence` or `workflowSequence`) names the
//! session positions after which the scope's next event is `n + 1`: the
//! half-open interval from the `sessionSequence` of its `n`-th event to that
//! of its `n + 1`-th (from 0 for `n = 0`, unbounded for the scope's last
//! event). A session cursor names one position. Cursors are **mutually
//! consistent** when their positions intersect; the read then starts after
//! the greatest lower bound. A scope cursor beyond its scope's last event
//! names no position at all. Anything else is [`StoreError::CursorConflict`].
//! Because the journal is append-only, the positions a cursor names never
//! change, so the check needs no read transaction around the whole request.

use crate::{Page, Store, StoreError, StoredEvent};

/// A filtered history request: the `GET /sessions/{id}/events` query of
/// §10.2 as a type. Every field is optional; none means the whole session.
///
/// ```
/// use narad_store::HistoryQuery;
/// let q = HistoryQuery::default()
///     .run("run-1", Some(4))
///     .after_session_sequence(9)
///     .limit(100);
/// assert_eq!(q.limit, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// `afterSessionSequence`.
    pub after_session_sequence: Option<u64>,
    /// `rootRunId`, with `afterSequence` when given.
    pub run: Option<(String, Option<u64>)>,
    /// `workflowId`, with `afterWorkflowSequence` when given.
    pub workflow: Option<(String, Option<u64>)>,
    /// At most this many events.
    pub limit: usize,
}

impl Default for HistoryQuery {
    fn default() -> Self {
        Self {
            after_session_sequence: None,
            run: None,
            workflow: None,
            limit: 1000,
        }
    }
}

impl HistoryQuery {
    /// Sets `afterSessionSequence`.
    pub fn after_session_sequence(mut self, n: u64) -> Self {
        self.after_session_sequence = Some(n);
        self
    }
    /// Filters to one run tree, optionally after run-tree `sequence`.
    pub fn run(mut self, root_run_id: impl Into<String>, after: Option<u64>) -> Self {
        self.run = Some((root_run_id.into(), after));
        self
    }
    /// Filters to one workflow, optionally after `workflowSequence`.
    pub fn workflow(mut self, workflow_id: impl Into<String>, after: Option<u64>) -> Self {
        self.workflow = Some((workflow_id.into(), after));
        self
    }
    /// Sets the page size.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Run,
    Workflow,
}

async fn scope_page<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
    kind: Kind,
    id: &str,
    after: u64,
    limit: usize,
) -> Result<Page, StoreError> {
    match kind {
        Kind::Run => store.read_run(session_id, id, after, limit).await,
        Kind::Workflow => store.read_workflow(session_id, id, after, limit).await,
    }
}

/// The session positions `[lo, hi)` a scope cursor names.
async fn interval<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
    kind: Kind,
    id: &str,
    n: u64,
) -> Result<(u64, u64), StoreError> {
    let seq = |e: &StoredEvent| e.position.session_sequence;
    if n == 0 {
        let first = scope_page(store, session_id, kind, id, 0, 1).await?;
        return Ok((0, first.events.first().map_or(u64::MAX, seq)));
    }
    let page = scope_page(store, session_id, kind, id, n - 1, 2).await?;
    match page.events.as_slice() {
        [at, next, ..] => Ok((seq(at), seq(next))),
        [at] => Ok((seq(at), u64::MAX)),
        [] => Err(StoreError::CursorConflict),
    }
}

fn matches(ev: &StoredEvent, q: &HistoryQuery) -> bool {
    let run_ok = q
        .run
        .as_ref()
        .is_none_or(|(r, _)| ev.position.run.as_ref().is_some_and(|(id, _)| id == r));
    let wf_ok = q
        .workflow
        .as_ref()
        .is_none_or(|(w, _)| ev.position.workflow.as_ref().is_some_and(|(id, _)| id == w));
    run_ok && wf_ok
}

/// Answers a [`HistoryQuery`] from a store's session, run and workflow reads
/// (the default of [`Store::read_history`]). Events come in
/// `sessionSequence` order; `next` is the last returned `sessionSequence`
/// when more remain (the returned events carry their scope positions too).
pub async fn read_history<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
    q: &HistoryQuery,
) -> Result<Page, StoreError> {
    // The start position: the intersection of every cursor given.
    let (mut lo, mut hi) = (0u64, u64::MAX);
    if let Some(a) = q.after_session_sequence {
        (lo, hi) = (a, a.saturating_add(1));
    }
    let scoped = [
        q.run.as_ref().map(|(id, n)| (Kind::Run, id, n)),
        q.workflow.as_ref().map(|(id, n)| (Kind::Workflow, id, n)),
    ];
    for (kind, id, n) in scoped.iter().flatten() {
        if let Some(n) = n {
            let (l, h) = interval(store, session_id, *kind, id, *n).await?;
            (lo, hi) = (lo.max(l), hi.min(h));
        }
    }
    if lo >= hi {
        return Err(StoreError::CursorConflict);
    }

    // Walk the narrowest index the filter allows, from its own cursor when
    // given (otherwise from its start), keeping events after `lo`.
    let walk = scoped.iter().flatten().next().copied();
    let mut cursor = match walk {
        Some((_, _, n)) => n.unwrap_or(0),
        None => lo,
    };
    let mut out: Vec<StoredEvent> = Vec::new();
    let chunk = q.limit.saturating_add(1).clamp(1, 1024);
    loop {
        let page = match walk {
            Some((kind, id, _)) => scope_page(store, session_id, kind, id, cursor, chunk).await?,
            None => store.read_session(session_id, cursor, chunk).await?,
        };
        let done = page.next.is_none();
        let before = cursor;
        for ev in page.events {
            let pos = &ev.position;
            let to = match walk {
                Some((Kind::Run, ..)) => pos.run.as_ref().map_or(0, |r| r.1),
                Some((Kind::Workflow, ..)) => pos.workflow.as_ref().map_or(0, |w| w.1),
                None => pos.session_sequence,
            };
            cursor = crate::row::advance(session_id, cursor, to)?;
            if pos.session_sequence <= lo || !matches(&ev, q) {
                continue;
            }
            if out.len() == q.limit {
                let next = out.last().map_or(lo, |e| e.position.session_sequence);
                return Ok(Page {
                    events: out,
                    next: Some(next),
                });
            }
            out.push(ev);
        }
        if done {
            return Ok(Page {
                events: out,
                next: None,
            });
        }
        // More remain, so this page must have moved the cursor.
        crate::row::advance(session_id, before, cursor)?;
    }
}
