//! # narad-store-sqlite
//!
//! The SQLite [`Store`] backend (rusqlite, SQLite bundled): WAL journal,
//! `synchronous=FULL` by default, a busy timeout, and appends in
//! `BEGIN IMMEDIATE` transactions so several processes can share one file.
//! Blocking work runs on tokio's blocking pool.
//!
//! **Status:** first slice of issue 4; passes the shared
//! `narad_store::suite`. Two real processes sharing one file are tested.
//! Not yet: group commit, commit notification.
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_store_sqlite::SqliteStore::open("narad.sqlite").await?;
//! assert_eq!(store.head("session-1").await?, 0);
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use narad_store::{
    plan_batch, Appended, Batch, Page, Plan, Scope, SideSpace, Store, StoreError, StoredEvent,
};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

/// The on-disk layout version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// Durability of a commit (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Every commit is fsynced (the default).
    #[default]
    Full,
    /// WAL `NORMAL`: a power loss may drop the last commits, never corrupt.
    Normal,
}

/// Options for [`SqliteStore::open_with`].
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// `PRAGMA synchronous`.
    pub synchronous: Synchronous,
    /// How long a writer waits for another process's lock.
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(10),
        }
    }
}

/// A SQLite-backed store. Cheap to clone; clones share one connection.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn int(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Backend("sequence out of range".into()))
}

fn uint(v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Backend("stored sequence is negative".into()))
}

fn space(s: SideSpace) -> i64 {
    match s {
        SideSpace::Lease => 1,
        SideSpace::Token => 2,
        SideSpace::Snapshot => 3,
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, bytes BLOB NOT NULL,
    root TEXT, rseq INTEGER, wf TEXT, wseq INTEGER,
    PRIMARY KEY (session, seq), UNIQUE (session, event_id));
CREATE UNIQUE INDEX IF NOT EXISTS events_run ON events (session, root, rseq) WHERE root IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS events_wf ON events (session, wf, wseq) WHERE wf IS NOT NULL;
CREATE TABLE IF NOT EXISTS heads (session TEXT PRIMARY KEY, head INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS side (space INTEGER NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (space, key));
";

impl SqliteStore {
    /// Opens (or creates) the database at `path` with default options.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// Opens (or creates) the database at `path`. A file written by a newer
    /// layout is refused with [`StoreError::NewerSchema`].
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path: PathBuf = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || Self::open_blocking(&path, &options))
            .await
            .map_err(backend)?
    }

    fn open_blocking(path: &Path, options: &SqliteOptions) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path).map_err(backend)?;
        conn.busy_timeout(options.busy_timeout).map_err(backend)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        let sync = match options.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", sync)
            .map_err(backend)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        tx.execute_batch(SCHEMA).map_err(backend)?;
        let found: Option<i64> = tx
            .query_row(
                "SELECT value FROM meta WHERE name = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        match found {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    found: u32::try_from(v).unwrap_or(u32::MAX),
                    supported: SCHEMA_VERSION as u32,
                })
            }
            Some(_) => {}
            None => {
                tx.execute(
                    "INSERT INTO meta (name, value) VALUES ('schema_version', ?1)",
                    [SCHEMA_VERSION],
                )
                .map_err(backend)?;
            }
        }
        tx.commit().map_err(backend)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| StoreError::Backend("connection lock poisoned".into()))?;
            f(&mut guard)
        })
        .await
        .map_err(backend)?
    }
}

fn append_blocking(conn: &mut Connection, batch: Batch) -> Result<Appended, StoreError> {
    let sid = batch.session_id.as_str();
    // IMMEDIATE takes the write lock up front: another process's writer waits
    // (busy timeout) instead of failing at commit.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let head: u64 = tx
        .query_row("SELECT head FROM heads WHERE session = ?1", [sid], |r| {
            r.get::<_, i64>(0)
        })
        .optional()
        .map_err(backend)?
        .map(uint)
        .transpose()?
        .unwrap_or(0);

    let plan = plan_batch(
        &batch,
        head,
        |ev| {
            let stored: Option<(i64, Vec<u8>)> = tx
                .query_row(
                    "SELECT seq, bytes FROM events WHERE session = ?1 AND event_id = ?2",
                    params![sid, ev.event_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(backend)?;
            stored
                .map(|(seq, bytes)| Ok((uint(seq)?, bytes == ev.bytes.as_ref())))
                .transpose()
        },
        |scope, id| match scope {
            Scope::Run => scope_head(&tx, "root", "rseq", sid, id),
            Scope::Workflow => scope_head(&tx, "wf", "wseq", sid, id),
        },
        |w| {
            tx.query_row(
                "SELECT value FROM side WHERE space = ?1 AND key = ?2",
                params![space(w.space), w.key],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)
        },
    )?;
    let (fresh, appended) = match plan {
        Plan::Redelivered(done) => return Ok(done),
        Plan::Write { fresh, appended } => (fresh, appended),
    };
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (session, seq, event_id, bytes, root, rseq, wf, wseq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(backend)?;
        for ev in &fresh {
            let (root, rseq) = match &ev.position.run {
                Some((r, s)) => (Some(r.as_str()), Some(int(*s)?)),
                None => (None, None),
            };
            let (wf, wseq) = match &ev.position.workflow {
                Some((w, s)) => (Some(w.as_str()), Some(int(*s)?)),
                None => (None, None),
            };
            insert
                .execute(params![
                    sid,
                    int(ev.position.session_sequence)?,
                    ev.event_id,
                    ev.bytes.as_ref(),
                    root,
                    rseq,
                    wf,
                    wseq
                ])
                .map_err(backend)?;
        }
    }
    for w in &batch.side {
        match &w.value {
            Some(v) => tx.execute(
                "INSERT INTO side (space, key, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT (space, key) DO UPDATE SET value = excluded.value",
                params![space(w.space), w.key, v.as_ref()],
            ),
            None => tx.execute(
                "DELETE FROM side WHERE space = ?1 AND key = ?2",
                params![space(w.space), w.key],
            ),
        }
        .map_err(backend)?;
    }
    tx.execute(
        "INSERT INTO heads (session, head) VALUES (?1, ?2)
         ON CONFLICT (session) DO UPDATE SET head = excluded.head",
        params![sid, int(appended.head)?],
    )
    .map_err(backend)?;
    tx.commit().map_err(backend)?;
    Ok(appended)
}

/// Last stored sequence of a run tree or workflow (`col`/`seq_col` are
/// fixed column names from this file, never input).
fn scope_head(
    tx: &rusqlite::Transaction<'_>,
    col: &str,
    seq_col: &str,
    sid: &str,
    scope: &str,
) -> Result<u64, StoreError> {
    let sql = format!("SELECT MAX({seq_col}) FROM events WHERE session = ?1 AND {col} = ?2");
    let v: Option<i64> = tx
        .query_row(&sql, params![sid, scope], |r| r.get(0))
        .map_err(backend)?;
    v.map(uint).transpose().map(|v| v.unwrap_or(0))
}

/// One page; `sql` selects `(cursor, bytes)` ordered by cursor, after ?3.
fn page(
    conn: &Connection,
    sql: &str,
    sid: &str,
    scope: &str,
    after: u64,
    limit: usize,
) -> Result<Page, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(backend)?;
    let take = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![sid, scope, int(after)?, take], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
        })
        .map_err(backend)?;
    let mut out = Vec::new();
    let mut next = None;
    let mut last = after;
    for row in rows {
        let (cursor, bytes) = row.map_err(backend)?;
        if out.len() == limit {
            next = Some(last);
            break;
        }
        last = uint(cursor)?;
        out.push(StoredEvent::from_stored_bytes(&bytes)?);
    }
    Ok(Page { events: out, next })
}

#[async_trait]
impl Store for SqliteStore {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.blocking(move |c| append_blocking(c, batch)).await
    }

    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        let sid = session_id.to_owned();
        self.blocking(move |c| {
            c.query_row("SELECT head FROM heads WHERE session = ?1", [sid], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
            .map_err(backend)?
            .map(uint)
            .transpose()
            .map(|h| h.unwrap_or(0))
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
        self.blocking(move |c| {
            page(
                c,
                // ?2 is the scope of filtered reads; unused for the session.
                "SELECT seq, bytes FROM events WHERE session = ?1 AND ?2 = ?2 AND seq > ?3
                 ORDER BY seq LIMIT ?4",
                &sid,
                "",
                after,
                limit,
            )
        })
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
        self.blocking(move |c| {
            page(
                c,
                "SELECT rseq, bytes FROM events WHERE session = ?1 AND root = ?2 AND rseq > ?3
                 ORDER BY rseq LIMIT ?4",
                &sid,
                &root,
                after,
                limit,
            )
        })
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
        self.blocking(move |c| {
            page(
                c,
                "SELECT wseq, bytes FROM events WHERE session = ?1 AND wf = ?2 AND wseq > ?3
                 ORDER BY wseq LIMIT ?4",
                &sid,
                &wf,
                after,
                limit,
            )
        })
        .await
    }

    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map(str::to_owned);
        self.blocking(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT session FROM heads WHERE ?1 IS NULL OR session > ?1
                     ORDER BY session LIMIT ?2",
                )
                .map_err(backend)?;
            let take = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![after, take], |r| r.get::<_, String>(0))
                .map_err(backend)?;
            rows.map(|r| r.map_err(backend)).collect()
        })
        .await
    }

    async fn side(&self, space_: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        let key = key.to_owned();
        self.blocking(move |c| {
            c.query_row(
                "SELECT value FROM side WHERE space = ?1 AND key = ?2",
                params![space(space_), key],
                |r| r.get::<_, Vec<u8>>(0),
            )
            .optional()
            .map(|v| v.map(Bytes::from))
            .map_err(backend)
        })
        .await
    }
}
