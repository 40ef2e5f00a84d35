//! # narad-store-redb
//!
//! The embedded default [`Store`] backend: one redb file, every append one
//! durable write transaction, blocking work on tokio's blocking pool so the
//! async runtime never waits on a disk.
//!
//! **Status:** first slice of issue 4: append with head guard, contiguity,
//! redelivery and side writes; session, run and workflow reads; session
//! list; schema version check; passes the shared `narad_store::suite`. Not
//! yet: group commit, commit notification.
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_store_redb::RedbStore::open("narad.redb").await?;
//! assert_eq!(store.head("session-1").await?, 0);
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use narad_store::{
    plan_batch, Appended, Batch, Page, Plan, Scope, SideSpace, Store, StoreError, StoredEvent,
};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

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
/// (space, key) → value.
const SIDE: TableDefinition<(u8, &str), &[u8]> = TableDefinition::new("side");
/// name → value; holds `schema_version`.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The on-disk layout version this build writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

/// A redb-backed store. Cheap to clone; clones share the file.
#[derive(Clone)]
pub struct RedbStore {
    db: Arc<Database>,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore").finish_non_exhaustive()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn space(s: SideSpace) -> u8 {
    match s {
        SideSpace::Lease => 1,
        SideSpace::Token => 2,
        SideSpace::Snapshot => 3,
    }
}

impl RedbStore {
    /// Opens (or creates) the store file at `path`. A file written by a newer
    /// layout is refused with [`StoreError::NewerSchema`].
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || Self::open_blocking(&path))
            .await
            .map_err(backend)?
    }

    fn open_blocking(path: &Path) -> Result<Self, StoreError> {
        let db = Database::create(path).map_err(backend)?;
        let tx = db.begin_write().map_err(backend)?;
        {
            let mut meta = tx.open_table(META).map_err(backend)?;
            let found = meta
                .get("schema_version")
                .map_err(backend)?
                .map(|v| v.value());
            match found {
                Some(v) if v > SCHEMA_VERSION => {
                    return Err(StoreError::NewerSchema {
                        found: u32::try_from(v).unwrap_or(u32::MAX),
                        supported: SCHEMA_VERSION as u32,
                    })
                }
                Some(_) => {}
                None => {
                    meta.insert("schema_version", SCHEMA_VERSION)
                        .map_err(backend)?;
                }
            }
            // Create every table so that reads of a fresh file find them.
            tx.open_table(EVENTS).map_err(backend)?;
            tx.open_table(IDS).map_err(backend)?;
            tx.open_table(HEADS).map_err(backend)?;
            tx.open_table(RUNS).map_err(backend)?;
            tx.open_table(WORKFLOWS).map_err(backend)?;
            tx.open_table(SIDE).map_err(backend)?;
        }
        tx.commit().map_err(backend)?;
        Ok(Self { db: Arc::new(db) })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(backend)?
    }
}

fn append_blocking(db: &Database, batch: Batch) -> Result<Appended, StoreError> {
    let sid = batch.session_id.as_str();
    let tx = db.begin_write().map_err(backend)?;
    let appended = {
        let mut events = tx.open_table(EVENTS).map_err(backend)?;
        let mut ids = tx.open_table(IDS).map_err(backend)?;
        let mut heads = tx.open_table(HEADS).map_err(backend)?;
        let mut runs = tx.open_table(RUNS).map_err(backend)?;
        let mut wfs = tx.open_table(WORKFLOWS).map_err(backend)?;
        let mut side = tx.open_table(SIDE).map_err(backend)?;
        let head = heads.get(sid).map_err(backend)?.map_or(0, |v| v.value());

        let plan = plan_batch(
            &batch,
            head,
            |ev| {
                let Some(seq) = ids
                    .get((sid, ev.event_id.as_str()))
                    .map_err(backend)?
                    .map(|v| v.value())
                else {
                    return Ok(None);
                };
                let same = events
                    .get((sid, seq))
                    .map_err(backend)?
                    .is_some_and(|b| b.value() == ev.bytes.as_ref());
                Ok(Some((seq, same)))
            },
            |scope, id| match scope {
                Scope::Run => last_key(&runs, sid, id),
                Scope::Workflow => last_key(&wfs, sid, id),
            },
            |w| {
                Ok(side
                    .get((space(w.space), w.key.as_str()))
                    .map_err(backend)?
                    .map(|v| v.value().to_vec()))
            },
        )?;
        let (fresh, appended) = match plan {
            Plan::Redelivered(done) => return Ok(done),
            Plan::Write { fresh, appended } => (fresh, appended),
        };
        for ev in &fresh {
            let seq = ev.position.session_sequence;
            events
                .insert((sid, seq), ev.bytes.as_ref())
                .map_err(backend)?;
            ids.insert((sid, ev.event_id.as_str()), seq)
                .map_err(backend)?;
            if let Some((root, rseq)) = &ev.position.run {
                runs.insert((sid, root.as_str(), *rseq), seq)
                    .map_err(backend)?;
            }
            if let Some((wf, wseq)) = &ev.position.workflow {
                wfs.insert((sid, wf.as_str(), *wseq), seq)
                    .map_err(backend)?;
            }
        }
        for w in &batch.side {
            let key = (space(w.space), w.key.as_str());
            match &w.value {
                Some(v) => side.insert(key, v.as_ref()).map(|_| ()),
                None => side.remove(key).map(|_| ()),
            }
            .map_err(backend)?;
        }
        heads.insert(sid, appended.head).map_err(backend)?;
        appended
    };
    tx.commit().map_err(backend)?;
    Ok(appended)
}

fn last_key(
    t: &impl ReadableTable<(&'static str, &'static str, u64), u64>,
    sid: &str,
    scope: &str,
) -> Result<u64, StoreError> {
    let mut r = t
        .range((sid, scope, 0)..=(sid, scope, u64::MAX))
        .map_err(backend)?;
    match r.next_back() {
        Some(Ok((k, _))) => Ok(k.value().2),
        Some(Err(e)) => Err(backend(e)),
        None => Ok(0),
    }
}

fn page_session(db: &Database, sid: &str, after: u64, limit: usize) -> Result<Page, StoreError> {
    let tx = db.begin_read().map_err(backend)?;
    let events = tx.open_table(EVENTS).map_err(backend)?;
    let mut out = Vec::new();
    let mut next = None;
    for item in events
        .range((sid, after.saturating_add(1))..=(sid, u64::MAX))
        .map_err(backend)?
    {
        let (_, v) = item.map_err(backend)?;
        if out.len() == limit {
            next = Some(after + out.len() as u64);
            break;
        }
        out.push(StoredEvent::from_stored_bytes(v.value())?);
    }
    Ok(Page { events: out, next })
}

fn page_scope(
    db: &Database,
    table: TableDefinition<(&str, &str, u64), u64>,
    sid: &str,
    scope: &str,
    after: u64,
    limit: usize,
) -> Result<Page, StoreError> {
    let tx = db.begin_read().map_err(backend)?;
    let index = tx.open_table(table).map_err(backend)?;
    let events = tx.open_table(EVENTS).map_err(backend)?;
    let mut out = Vec::new();
    let mut next = None;
    for item in index
        .range((sid, scope, after.saturating_add(1))..=(sid, scope, u64::MAX))
        .map_err(backend)?
    {
        let (k, seq) = item.map_err(backend)?;
        if out.len() == limit {
            next = Some(k.value().2 - 1);
            break;
        }
        let seq = seq.value();
        let bytes = events
            .get((sid, seq))
            .map_err(backend)?
            .ok_or_else(|| StoreError::Backend("index names a missing event".into()))?;
        out.push(StoredEvent::from_stored_bytes(bytes.value())?);
    }
    Ok(Page { events: out, next })
}

#[async_trait]
impl Store for RedbStore {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.blocking(move |db| append_blocking(db, batch)).await
    }

    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        let sid = session_id.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let heads = tx.open_table(HEADS).map_err(backend)?;
            Ok(heads
                .get(sid.as_str())
                .map_err(backend)?
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

    async fn read_run(
        &self,
        session_id: &str,
        root_run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let (sid, root) = (session_id.to_owned(), root_run_id.to_owned());
        self.blocking(move |db| page_scope(db, RUNS, &sid, &root, after, limit))
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
        self.blocking(move |db| page_scope(db, WORKFLOWS, &sid, &wf, after, limit))
            .await
    }

    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map(str::to_owned);
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let heads = tx.open_table(HEADS).map_err(backend)?;
            let mut out = Vec::new();
            for item in heads.iter().map_err(backend)? {
                let (k, _) = item.map_err(backend)?;
                let id = k.value();
                if after.as_deref().is_some_and(|a| id <= a) {
                    continue;
                }
                if out.len() == limit {
                    break;
                }
                out.push(id.to_owned());
            }
            Ok(out)
        })
        .await
    }

    async fn side(&self, space_: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        let key = key.to_owned();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(backend)?;
            let side = tx.open_table(SIDE).map_err(backend)?;
            Ok(side
                .get((space(space_), key.as_str()))
                .map_err(backend)?
                .map(|v| Bytes::copy_from_slice(v.value())))
        })
        .await
    }
}
