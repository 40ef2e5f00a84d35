//! # narad-store-redb
//!
//! The embedded default [`Store`] backend: one redb file, every append one
//! durable write transaction, blocking work on tokio's blocking pool so the
//! async runtime never waits on a disk.
//!
//! Appends go through the shared group commit
//! ([`narad_store::group`]): one writer thread takes every batch that is
//! waiting and commits them in one redb write transaction (one fsync), each
//! decided on its own by [`plan_batch`]. Reads run on tokio's blocking pool
//! in redb read transactions, concurrently with the writer.
//!
//! Layout versions: 1 (events, id, head, run and workflow indexes, side
//! records), 2 (adds the workspace watch stream) and 3 (side values of
//! 1 MiB or more in chunks: `side.rs`). Opening an older file migrates it
//! to 3 in one transaction; its rows stay as they are and read as before.
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_store_redb::RedbStore::open("narad.redb").await?;
//! assert_eq!(store.head("session-1").await?, 0);
//! store.close().await?;
//! # Ok(()) }
//! ```

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use narad_store::group::{GroupCommit, GroupStats, GroupWriter};
use narad_store::{
    plan_batch, row, Appended, Batch, Damage, Page, Plan, Scope, SideSpace, SideWrite, Store,
    StoreError, StoredEvent, StoredWatch, Subscription, View, WatchPage, WatchWrite,
};
mod open;
mod options;
mod recover;
use recover::Db;
mod side;
pub use options::{RedbOptions, DEFAULT_CACHE_BYTES};
use side::{SideTables, SIDE, SIDE_CHUNKS, SIDE_LARGE};

use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

/// (session, sessionSequence) → exact bytes.
const EVENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("events");
/// (session, eventId) → sessionSequence.
const IDS: TableDefinition<(&str, &str), u64> = TableDefinition::new("event_ids");
/// session → head.
const HEADS: TableDefinition<&str, u64> = TableDefinition::new("heads");
/// (session, rootRunId, sequence) → sessionSequence.
const RUNS: TableDefinition<(&str, &str, u64), u64> = TableDefinition::new("run_index");
/// (session, workflowId, workflowSequence) → sessionSequence.
const WORKFLOWS: TableDefinition<(&str, &str, u64), u64> = TableDefinition::new("workflow_index");
/// Side records: `side.rs` (`side`, `side_large`, `side_chunks`, layout 3).
/// (workspace, revision) → exact watch bytes (layout 2).
const WATCH: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("watch");
/// (workspace, eventId) → revision (layout 2).
const WATCH_IDS: TableDefinition<(&str, &str), u64> = TableDefinition::new("watch_ids");
/// name → value; holds `schema_version`.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Side values from this size on (a long session's reducer snapshot: tens
/// of MiB) are handed out as redb read them, without a copy; smaller ones
/// are copied, so that holding one never holds a read transaction open.
const SHARED_SIDE_VALUE: usize = 1 << 20;

/// A side row's bytes: copied when small, held as redb read them when
/// large (a layout 2 file's snapshot row; layout 3 chunks such values).
fn side_bytes(v: redb::OwnedAccessGuard<&'static [u8]>) -> Bytes {
    if v.value().len() < SHARED_SIDE_VALUE {
        Bytes::copy_from_slice(v.value())
    } else {
        Bytes::from_owner(Held(v))
    }
}

/// A side value as redb read it. It keeps its read transaction open until
/// dropped, which holds back the reuse of pages freed after it began: the
/// engine drops a snapshot once it is restored.
struct Held(redb::OwnedAccessGuard<&'static [u8]>);

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        self.0.value()
    }
}

/// The on-disk layout version this build writes and reads.
pub const SCHEMA_VERSION: u64 = 3;

/// One forward step of the layout, inside the open transaction.
type Migration = fn(&WriteTransaction) -> Result<(), redb::TableError>;

/// Forward migrations: step `i` takes a file from layout `i` to `i + 1`.
/// A fresh file is layout 0 and runs them all.
const MIGRATIONS: [Migration; 3] = [
    |tx| {
        tx.open_table(EVENTS)?;
        tx.open_table(IDS)?;
        tx.open_table(HEADS)?;
        tx.open_table(RUNS)?;
        tx.open_table(WORKFLOWS)?;
        tx.open_table(SIDE)?;
        Ok(())
    },
    |tx| {
        tx.open_table(WATCH)?;
        tx.open_table(WATCH_IDS)?;
        Ok(())
    },
    |tx| {
        tx.open_table(SIDE_LARGE)?;
        tx.open_table(SIDE_CHUNKS)?;
        Ok(())
    },
];

/// A redb-backed store. Cheap to clone; clones share the file and the
/// writer thread. The file is released when the last clone is dropped or
/// on [`Store::close`].
#[derive(Clone)]
pub struct RedbStore {
    /// The open file (or why there is none: closed, or a failed reopen);
    /// reads take a clone of its handle so close never waits on them.
    db: Arc<recover::Slot>,
    group: Arc<GroupCommit>,
    /// The file, named in damage reports.
    path: Arc<Path>,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore").finish_non_exhaustive()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A redb failure: what redb reports as corruption is
/// [`StoreError::Corrupt`]; anything else a backend failure.
fn rerr(e: impl Into<redb::Error>) -> StoreError {
    match e.into() {
        redb::Error::Corrupted(_) => StoreError::corrupt(Damage::File, None, None),
        other => backend(other),
    }
}

/// Runs `f`, which calls into redb, turning a panic into
/// [`StoreError::Corrupt`] naming `path`.
///
/// redb 4 can panic on a damaged file (an unwrapped slice conversion, an
/// out-of-range index, `unreachable!` on an unknown page type) instead of
/// returning `Corrupted`. Every redb call of this crate runs inside this
/// guard, on the blocking pool or the writer thread, so such a panic
/// reaches the caller as a typed error and never unwinds through tokio.
/// The process's panic hook still runs first: a library does not replace
/// it, so the default hook prints the panic message; an application that
/// wants silence installs its own hook (the `narad` CLI does).
fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| e.at_path(path)),
        Err(_) => Err(StoreError::corrupt(Damage::File, None, None).at_path(path)),
    }
}

fn space(s: SideSpace) -> u8 {
    s.id()
}

impl RedbStore {
    /// How many batches the group commit has shared transactions between.
    pub fn commit_stats(&self) -> GroupStats {
        self.group.stats()
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = self.db.get()?;
        let path = Arc::clone(&self.path);
        tokio::task::spawn_blocking(move || guarded(&path, || f(&db)))
            .await
            .map_err(backend)?
    }
}

/// The write path, owned by the writer thread.
struct Writer {
    handle: recover::Handle,
}

/// The tables of one write transaction: what [`plan_batch`] reads and what
/// an accepted batch writes.
struct Tables<'t> {
    events: Table<'t, (&'static str, u64), &'static [u8]>,
    ids: Table<'t, (&'static str, &'static str), u64>,
    heads: Table<'t, &'static str, u64>,
    runs: Table<'t, (&'static str, &'static str, u64), u64>,
    wfs: Table<'t, (&'static str, &'static str, u64), u64>,
    side: SideTables<'t>,
    watch: Table<'t, (&'static str, u64), &'static [u8]>,
    watch_ids: Table<'t, (&'static str, &'static str), u64>,
}

impl<'t> Tables<'t> {
    fn open(tx: &'t WriteTransaction) -> Result<Self, StoreError> {
        Ok(Self {
            events: tx.open_table(EVENTS).map_err(rerr)?,
            ids: tx.open_table(IDS).map_err(rerr)?,
            heads: tx.open_table(HEADS).map_err(rerr)?,
            runs: tx.open_table(RUNS).map_err(rerr)?,
            wfs: tx.open_table(WORKFLOWS).map_err(rerr)?,
            side: SideTables::open(tx)?,
            watch: tx.open_table(WATCH).map_err(rerr)?,
            watch_ids: tx.open_table(WATCH_IDS).map_err(rerr)?,
        })
    }

    /// Plans one batch and, if accepted, writes it.
    fn apply(&mut self, batch: &Batch) -> Result<Result<Appended, StoreError>, StoreError> {
        let (fresh, fresh_watch, appended, purge) = match plan_batch(batch, self) {
            Ok(Plan::Redelivered(done)) => return Ok(Ok(done)),
            Ok(Plan::Write {
                fresh,
                fresh_watch,
                appended,
                purge,
            }) => (fresh, fresh_watch, appended, purge),
            // A refused batch wrote nothing; the group goes on.
            Err(StoreError::Backend(e)) => return Err(StoreError::Backend(e)),
            Err(refused) => return Ok(Err(refused)),
        };
        let sid = batch.session_id.as_str();
        if purge {
            self.purge(sid)?;
        }
        for ev in &fresh {
            let seq = ev.position.session_sequence;
            self.events
                .insert((sid, seq), ev.bytes.as_ref())
                .map_err(rerr)?;
            self.ids
                .insert((sid, ev.event_id.as_str()), seq)
                .map_err(rerr)?;
            if let Some((root, rseq)) = &ev.position.run {
                self.runs
                    .insert((sid, root.as_str(), *rseq), seq)
                    .map_err(rerr)?;
            }
            if let Some((wf, wseq)) = &ev.position.workflow {
                self.wfs
                    .insert((sid, wf.as_str(), *wseq), seq)
                    .map_err(rerr)?;
            }
        }
        for w in fresh_watch {
            let ws = w.workspace_id.as_str();
            self.watch
                .insert((ws, w.event.revision), w.event.bytes.as_ref())
                .map_err(rerr)?;
            self.watch_ids
                .insert((ws, w.event.event_id.as_str()), w.event.revision)
                .map_err(rerr)?;
        }
        for w in &batch.side {
            self.side
                .put((space(w.space), w.key.as_str()), w.value.as_deref())?;
        }
        if !fresh.is_empty() {
            self.heads.insert(sid, appended.head).map_err(rerr)?;
        }
        Ok(Ok(appended))
    }
}

impl Tables<'_> {
    /// Removes a session's journal: events, id and scope indexes, head.
    fn purge(&mut self, sid: &str) -> Result<(), StoreError> {
        self.events
            .retain_in((sid, 0)..=(sid, u64::MAX), |_, _| false)
            .map_err(rerr)?;
        // String-keyed ranges have no upper bound to name: walk from the
        // session's first key while the session matches.
        let mut ids = Vec::new();
        for item in self.ids.range((sid, "")..).map_err(rerr)? {
            let (k, _) = item.map_err(rerr)?;
            let (s, id) = k.value();
            if s != sid {
                break;
            }
            ids.push(id.to_owned());
        }
        for id in &ids {
            self.ids.remove((sid, id.as_str())).map_err(rerr)?;
        }
        for table in [&mut self.runs, &mut self.wfs] {
            let mut keys = Vec::new();
            for item in table.range((sid, "", 0)..).map_err(rerr)? {
                let (k, _) = item.map_err(rerr)?;
                let (s, scope, seq) = k.value();
                if s != sid {
                    break;
                }
                keys.push((scope.to_owned(), seq));
            }
            for (scope, seq) in &keys {
                table.remove((sid, scope.as_str(), *seq)).map_err(rerr)?;
            }
        }
        self.heads.remove(sid).map_err(rerr)?;
        Ok(())
    }
}

impl View for Tables<'_> {
    fn head(&mut self, sid: &str) -> Result<u64, StoreError> {
        Ok(self.heads.get(sid).map_err(rerr)?.map_or(0, |v| v.value()))
    }

    fn event(&mut self, sid: &str, ev: &StoredEvent) -> Result<Option<(u64, bool)>, StoreError> {
        let Some(seq) = self
            .ids
            .get((sid, ev.event_id.as_str()))
            .map_err(rerr)?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        let same = self
            .events
            .get((sid, seq))
            .map_err(rerr)?
            .is_some_and(|b| b.value() == ev.bytes.as_ref());
        Ok(Some((seq, same)))
    }

    fn scope_head(&mut self, sid: &str, scope: Scope, id: &str) -> Result<u64, StoreError> {
        match scope {
            Scope::Run => last_key(&self.runs, sid, id),
            Scope::Workflow => last_key(&self.wfs, sid, id),
        }
    }

    fn side(&mut self, w: &SideWrite) -> Result<Option<Vec<u8>>, StoreError> {
        self.side.get((space(w.space), w.key.as_str()))
    }

    fn watch(&mut self, w: &WatchWrite) -> Result<Option<bool>, StoreError> {
        let ws = w.workspace_id.as_str();
        let Some(rev) = self
            .watch_ids
            .get((ws, w.event.event_id.as_str()))
            .map_err(rerr)?
            .map(|v| v.value())
        else {
            return Ok(None);
        };
        let stored = self.watch.get((ws, rev)).map_err(rerr)?;
        Ok(Some(
            stored.is_some_and(|b| b.value() == w.event.bytes.as_ref()),
        ))
    }

    fn watch_head(&mut self, ws: &str) -> Result<u64, StoreError> {
        let mut r = self.watch.range((ws, 0)..=(ws, u64::MAX)).map_err(rerr)?;
        match r.next_back() {
            Some(Ok((k, _))) => Ok(k.value().1),
            Some(Err(e)) => Err(backend(e)),
            None => Ok(0),
        }
    }
}

impl GroupWriter for Writer {
    fn commit_group(
        &mut self,
        batches: &[Batch],
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        let db = self.handle.db()?;
        let committed = guarded(self.handle.path(), || {
            let tx = db.writable()?.begin_write().map_err(rerr)?;
            let outcomes = {
                let mut tables = Tables::open(&tx)?;
                let mut outcomes = Vec::with_capacity(batches.len());
                for batch in batches {
                    outcomes.push(tables.apply(batch)?);
                }
                outcomes
            };
            tx.commit().map_err(rerr)?;
            Ok(outcomes)
        });
        if matches!(committed, Err(StoreError::Backend(_))) {
            self.handle.after_failure(db);
        }
        committed
    }
}

fn last_key(
    t: &impl ReadableTable<(&'static str, &'static str, u64), u64>,
    sid: &str,
    scope: &str,
) -> Result<u64, StoreError> {
    let mut r = t
        .range((sid, scope, 0)..=(sid, scope, u64::MAX))
        .map_err(rerr)?;
    match r.next_back() {
        Some(Ok((k, _))) => Ok(k.value().2),
        Some(Err(e)) => Err(backend(e)),
        None => Ok(0),
    }
}

fn page_session(db: &Db, sid: &str, after: u64, limit: usize) -> Result<Page, StoreError> {
    let tx = db.begin_read().map_err(rerr)?;
    let events = tx.open_table(EVENTS).map_err(rerr)?;
    let mut out = Vec::new();
    let (mut next, mut filled) = (None, 0usize);
    let mut last = after;
    for item in events
        .range((sid, after.saturating_add(1))..=(sid, u64::MAX))
        .map_err(rerr)?
    {
        let (k, v) = item.map_err(rerr)?;
        if narad_store::page_full(out.len(), filled, limit) {
            next = Some(last);
            break;
        }
        let (key_sid, seq) = k.value();
        if key_sid != sid {
            return Err(StoreError::corrupt(Damage::File, Some(sid), Some(seq)));
        }
        last = row::advance(sid, last, seq)?;
        out.push(row::decode_event(
            sid,
            seq,
            Bytes::copy_from_slice(v.value()),
        )?);
        filled += out.last().map_or(0, |e| e.bytes.len());
    }
    Ok(Page { events: out, next })
}

fn find_events(db: &Db, sid: &str, ids: &[String]) -> Result<Vec<StoredEvent>, StoreError> {
    let tx = db.begin_read().map_err(rerr)?;
    let index = tx.open_table(IDS).map_err(rerr)?;
    let events = tx.open_table(EVENTS).map_err(rerr)?;
    let mut found = Vec::new();
    for id in ids {
        let Some(seq) = index.get((sid, id.as_str())).map_err(rerr)? else {
            continue;
        };
        let seq = seq.value();
        let bytes = events
            .get((sid, seq))
            .map_err(rerr)?
            .ok_or_else(|| StoreError::corrupt(Damage::MissingEvent, Some(sid), Some(seq)))?;
        found.push(row::decode_found_event(
            sid,
            id,
            seq,
            Bytes::copy_from_slice(bytes.value()),
        )?);
    }
    Ok(row::in_session_order(found))
}

fn page_scope(
    db: &Db,
    kind: Scope,
    sid: &str,
    scope: &str,
    after: u64,
    limit: usize,
) -> Result<Page, StoreError> {
    let table = match kind {
        Scope::Run => RUNS,
        Scope::Workflow => WORKFLOWS,
    };
    let tx = db.begin_read().map_err(rerr)?;
    let index = tx.open_table(table).map_err(rerr)?;
    let events = tx.open_table(EVENTS).map_err(rerr)?;
    let mut out = Vec::new();
    let (mut next, mut filled) = (None, 0usize);
    let mut last = after;
    for item in index
        .range((sid, scope, after.saturating_add(1))..=(sid, scope, u64::MAX))
        .map_err(rerr)?
    {
        let (k, seq) = item.map_err(rerr)?;
        if narad_store::page_full(out.len(), filled, limit) {
            next = Some(last);
            break;
        }
        let (key_sid, key_scope, position) = k.value();
        if key_sid != sid || key_scope != scope {
            return Err(StoreError::corrupt(Damage::File, Some(sid), Some(position)));
        }
        last = row::advance(sid, last, position)?;
        let seq = seq.value();
        let bytes = events
            .get((sid, seq))
            .map_err(rerr)?
            .ok_or_else(|| StoreError::corrupt(Damage::MissingEvent, Some(sid), Some(seq)))?;
        out.push(row::decode_scoped_event(
            sid,
            seq,
            kind,
            scope,
            position,
            Bytes::copy_from_slice(bytes.value()),
        )?);
        filled += out.last().map_or(0, |e| e.bytes.len());
    }
    Ok(Page { events: out, next })
}

#[async_trait]
impl Store for RedbStore {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.group
            .append(batch)
            .await
            .map_err(|e| e.at_path(&self.path))
    }

    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        let sid = session_id.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(rerr)?;
            let heads = tx.open_table(HEADS).map_err(rerr)?;
            Ok(heads
                .get(sid.as_str())
                .map_err(rerr)?
                .map_or(0, |v| v.value()))
        })
        .await
    }

    async fn read_session(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let sid = session_id.to_owned();
        self.blocking(move |db| page_session(db, &sid, after, limit))
            .await
    }

    async fn find_events(
        &self,
        session_id: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let sid = session_id.to_owned();
        let ids: Vec<String> = event_ids.iter().map(|&i| i.to_owned()).collect();
        self.blocking(move |db| find_events(db, &sid, &ids)).await
    }

    async fn read_run(
        &self,
        session_id: &str,
        root_run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let (sid, root) = (session_id.to_owned(), root_run_id.to_owned());
        self.blocking(move |db| page_scope(db, Scope::Run, &sid, &root, after, limit))
            .await
    }

    async fn read_workflow(
        &self,
        session_id: &str,
        workflow_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let (sid, wf) = (session_id.to_owned(), workflow_id.to_owned());
        self.blocking(move |db| page_scope(db, Scope::Workflow, &sid, &wf, after, limit))
            .await
    }

    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map(str::to_owned);
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(rerr)?;
            let heads = tx.open_table(HEADS).map_err(rerr)?;
            let mut out = Vec::new();
            let from = match after.as_deref() {
                Some(a) => std::ops::Bound::Excluded(a),
                None => std::ops::Bound::Unbounded,
            };
            for item in heads
                .range::<&str>((from, std::ops::Bound::Unbounded))
                .map_err(rerr)?
            {
                if out.len() == limit {
                    break;
                }
                let (k, _) = item.map_err(rerr)?;
                out.push(k.value().to_owned());
            }
            Ok(out)
        })
        .await
    }

    async fn side(&self, space_: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        let key = key.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(rerr)?;
            side::read(&tx, (space(space_), key.as_str()))
        })
        .await
    }

    async fn list_side(
        &self,
        space_: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError> {
        let after = after.map(str::to_owned);
        let id = space(space_);
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(rerr)?;
            side::list(&tx, id, after.as_deref(), limit)
        })
        .await
    }

    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map(str::to_owned);
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(rerr)?;
            let watch = tx.open_table(WATCH).map_err(rerr)?;
            let mut out: Vec<String> = Vec::new();
            let mut last = after;
            while out.len() < limit {
                // Jump past every revision of the last workspace seen.
                let from = match last.as_deref() {
                    Some(ws) => std::ops::Bound::Excluded((ws, u64::MAX)),
                    None => std::ops::Bound::Unbounded,
                };
                let mut range = watch
                    .range::<(&str, u64)>((from, std::ops::Bound::Unbounded))
                    .map_err(rerr)?;
                let Some(item) = range.next() else { break };
                let (k, _) = item.map_err(rerr)?;
                let ws = k.value().0.to_owned();
                if last.as_deref() == Some(ws.as_str()) {
                    break;
                }
                out.push(ws.clone());
                last = Some(ws);
            }
            Ok(out)
        })
        .await
    }

    async fn read_watch(
        &self,
        workspace_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<WatchPage, StoreError> {
        let ws = workspace_id.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(rerr)?;
            let watch = tx.open_table(WATCH).map_err(rerr)?;
            let mut out = Vec::new();
            let mut next = None;
            for item in watch
                .range((ws.as_str(), after.saturating_add(1))..=(ws.as_str(), u64::MAX))
                .map_err(rerr)?
            {
                let (k, v) = item.map_err(rerr)?;
                if out.len() == limit {
                    next = Some(out.last().map_or(after, |w: &StoredWatch| w.revision));
                    break;
                }
                out.push(StoredWatch::from_stored_bytes(k.value().1, v.value())?);
            }
            Ok(WatchPage { events: out, next })
        })
        .await
    }

    fn subscribe(&self) -> Subscription {
        self.group.subscribe()
    }

    async fn close(&self) -> Result<(), StoreError> {
        let group = Arc::clone(&self.group);
        tokio::task::spawn_blocking(move || group.close())
            .await
            .map_err(backend)?;
        // The writer has dropped its handle; this drops ours, so the file is
        // released once in-flight reads finish.
        self.db.close();
        Ok(())
    }
}
