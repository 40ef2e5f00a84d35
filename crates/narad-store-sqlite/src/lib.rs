//! # narad-store-sqlite
//!
//! The SQLite [`Store`] backend (rusqlite, SQLite bundled): WAL journal,
//! `synchronous=FULL` by default, a busy timeout, and appends in
//! `BEGIN IMMEDIATE` transactions so several processes can share one file.
//! Blocking work runs on tokio's blocking pool.
//!
//! Appends go through the shared group commit ([`narad_store::group`]):
//! one writer thread with its own connection takes every batch that is
//! waiting and commits them in one `BEGIN IMMEDIATE` transaction (one
//! fsync), each decided on its own by [`narad_store::plan_batch`]. Reads use a second
//! connection on tokio's blocking pool; under WAL they never wait for the
//! writer.
//!
//! Layout versions: 1 (events with their indexes, heads, side records) and 2
//! (adds the workspace watch stream). Opening a version-1 file migrates it
//! to 2 in one transaction.
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_store_sqlite::SqliteStore::open("narad.sqlite").await?;
//! assert_eq!(store.head("session-1").await?, 0);
//! store.close().await?;
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use narad_store::group::{GroupCommit, GroupStats};
use narad_store::{
    row, Appended, Batch, Damage, Page, Scope, SideSpace, Store, StoreError, StoredEvent,
    StoredWatch, Subscription, WatchPage,
};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

/// The on-disk layout version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 2;

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

/// A SQLite-backed store. Cheap to clone; clones share the read
/// connection and the writer thread (which owns the write connection).
#[derive(Clone)]
pub struct SqliteStore {
    /// The read connection; `None` once closed.
    conn: Arc<Mutex<Option<Connection>>>,
    group: Arc<GroupCommit>,
    /// The file, named in damage reports.
    path: Arc<Path>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A SQLite failure: a value of the wrong type or a damaged file is
/// [`StoreError::Corrupt`]; anything else a backend failure.
fn sql(e: rusqlite::Error) -> StoreError {
    use rusqlite::{Error as E, ErrorCode as C};
    match &e {
        E::InvalidColumnType(..)
        | E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..) => StoreError::corrupt(Damage::WrongType, None, None),
        E::SqliteFailure(f, _) if matches!(f.code, C::DatabaseCorrupt | C::NotADatabase) => {
            StoreError::corrupt(Damage::File, None, None)
        }
        _ => backend(e),
    }
}

use narad_store::{from_sql_int as uint, to_sql_int as int};

mod append;
mod read_only;
use append::Writer;

fn space(s: SideSpace) -> i64 {
    i64::from(s.id())
}

/// Forward migrations: step `i` takes a file from layout `i` to `i + 1`.
/// A fresh file is layout 0 and runs them all.
const MIGRATIONS: [&str; 2] = [
    "
CREATE TABLE events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, bytes BLOB NOT NULL,
    root TEXT, rseq INTEGER, wf TEXT, wseq INTEGER,
    PRIMARY KEY (session, seq), UNIQUE (session, event_id));
CREATE UNIQUE INDEX events_run ON events (session, root, rseq) WHERE root IS NOT NULL;
CREATE UNIQUE INDEX events_wf ON events (session, wf, wseq) WHERE wf IS NOT NULL;
CREATE TABLE heads (session TEXT PRIMARY KEY, head INTEGER NOT NULL);
CREATE TABLE side (space INTEGER NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (space, key));
",
    "
CREATE TABLE watch (
    workspace TEXT NOT NULL, revision INTEGER NOT NULL, event_id TEXT NOT NULL,
    bytes BLOB NOT NULL, PRIMARY KEY (workspace, revision), UNIQUE (workspace, event_id));
",
];

fn connect(path: &Path, options: &SqliteOptions, create: bool) -> Result<Connection, StoreError> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    } else if !path.exists() {
        return Err(StoreError::NotFound {
            path: path.display().to_string(),
        });
    }
    let conn = Connection::open_with_flags(path, flags).map_err(sql)?;
    conn.busy_timeout(options.busy_timeout).map_err(sql)?;
    // Before any pragma: `journal_mode` and `auto_vacuum` would rewrite
    // another application's database.
    holds_a_store(&conn, path, create)?;
    // Every statement of the write and read paths is prepared once and
    // cached; the default cache (16) is smaller than their number.
    conn.set_prepared_statement_cache_capacity(64);
    if create {
        // Takes effect only on a file without tables yet: a new store can
        // give deleted sessions' pages back with `compact` (incremental
        // vacuum); an older one is rewritten whole by `VACUUM` there.
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(sql)?;
    }
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sql)?;
    let sync = match options.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync).map_err(sql)?;
    Ok(conn)
}

/// Refuses, unwritten, a file that holds another application's database,
/// or none where an existing store was asked for (`create` false): the
/// rule is [`narad_store::holds_a_store`], from the file's tables.
pub(crate) fn holds_a_store(
    conn: &Connection,
    path: &Path,
    create: bool,
) -> Result<(), StoreError> {
    let (meta, tables): (i64, i64) = conn
        .query_row(
            "SELECT coalesce(sum(name = 'meta'), 0), count(*) FROM sqlite_master
             WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql)?;
    narad_store::holds_a_store(meta > 0, tables > 0, create, &path.display().to_string())
}

/// The layout the file records (0 before any).
fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(conn
        .query_row(
            "SELECT value FROM meta WHERE name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0))
}

/// Brings the file to [`SCHEMA_VERSION`] in one transaction, or refuses a
/// newer one. Another process may be migrating at the same moment:
/// `BEGIN IMMEDIATE` serializes the two and the second finds nothing to do.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    )
    .map_err(sql)?;
    let found = schema_version(&tx).map_err(sql)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found: u32::try_from(found).unwrap_or(u32::MAX),
            supported: SCHEMA_VERSION as u32,
        });
    }
    let done = usize::try_from(found).map_err(backend)?;
    for step in MIGRATIONS.iter().skip(done) {
        tx.execute_batch(step).map_err(sql)?;
    }
    if found != SCHEMA_VERSION {
        tx.execute(
            "INSERT INTO meta (name, value) VALUES ('schema_version', ?1)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [SCHEMA_VERSION],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

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
        Self::open_mode(path.as_ref(), options, true).await
    }

    /// Opens the database at `path` only if it exists: a missing file is
    /// [`StoreError::NotFound`] naming the path, and nothing is created.
    /// For commands that only read.
    pub async fn open_existing(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_mode(path.as_ref(), SqliteOptions::default(), false).await
    }

    /// Runs SQLite's `PRAGMA quick_check` over the file at `path`:
    /// `Ok(true)` when it passed, [`StoreError::Corrupt`] when it found
    /// damage, [`StoreError::NotFound`] when there is no file. The check
    /// only reads, so it opens the file read-only: it runs on a file this
    /// process may not write too.
    pub async fn check_integrity(path: impl AsRef<Path>) -> Result<bool, StoreError> {
        let path: PathBuf = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            let check = || {
                let conn = read_only::open_ro(&path, &SqliteOptions::default())?;
                let verdict: String = conn
                    .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
                    .map_err(sql)?;
                if verdict == "ok" {
                    Ok(true)
                } else {
                    Err(StoreError::corrupt(Damage::File, None, None))
                }
            };
            check().map_err(|e| e.at_path(&path))
        })
        .await
        .map_err(backend)?
    }

    /// Gives the pages of deleted records back to the file system: an
    /// incremental vacuum on a store created with it (every store this
    /// version creates), else a full `VACUUM`, then a WAL checkpoint that
    /// truncates the log. Run it on a store no process has open for
    /// writing; it waits for a concurrent writer like any writer.
    pub async fn compact(path: impl AsRef<Path>) -> Result<(), StoreError> {
        let path: PathBuf = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            let run = || {
                let conn = connect(&path, &SqliteOptions::default(), false)?;
                let mode: i64 = conn
                    .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
                    .map_err(sql)?;
                if mode == 2 {
                    // Each step frees pages; step it to the end.
                    let mut stmt = conn.prepare("PRAGMA incremental_vacuum").map_err(sql)?;
                    let mut rows = stmt.query([]).map_err(sql)?;
                    while rows.next().map_err(sql)?.is_some() {}
                } else {
                    conn.execute_batch("VACUUM;").map_err(sql)?;
                }
                conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                    .map_err(sql)
            };
            run().map_err(|e| e.at_path(&path))
        })
        .await
        .map_err(backend)?
    }

    async fn open_mode(
        path: &Path,
        options: SqliteOptions,
        create: bool,
    ) -> Result<Self, StoreError> {
        let path: PathBuf = path.to_owned();
        tokio::task::spawn_blocking(move || {
            Self::open_blocking(&path, &options, create).map_err(|e| e.at_path(&path))
        })
        .await
        .map_err(backend)?
    }

    fn open_blocking(
        path: &Path,
        options: &SqliteOptions,
        create: bool,
    ) -> Result<Self, StoreError> {
        let mut write = connect(path, options, create)?;
        migrate(&mut write)?;
        let read = connect(path, options, false)?;
        let group = GroupCommit::start("narad-sqlite", Writer { conn: write })?;
        Ok(Self {
            conn: Arc::new(Mutex::new(Some(read))),
            group: Arc::new(group),
            path: Arc::from(path),
        })
    }

    /// How many batches the group commit has shared transactions between.
    pub fn commit_stats(&self) -> GroupStats {
        self.group.stats()
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (conn, path) = (Arc::clone(&self.conn), Arc::clone(&self.path));
        tokio::task::spawn_blocking(move || {
            let mut guard = conn
                .lock()
                .map_err(|_| StoreError::Backend("connection lock poisoned".into()))?;
            f(guard.as_mut().ok_or(StoreError::Closed)?).map_err(|e| e.at_path(&path))
        })
        .await
        .map_err(backend)?
    }
}

/// A session's head (0 before its first event), on any connection: the
/// store's reads and the writer's transaction ask it alike.
fn head_of(conn: &Connection, sid: &str) -> Result<u64, StoreError> {
    conn.prepare_cached("SELECT head FROM heads WHERE session = ?1")
        .map_err(sql)?
        .query_row([sid], |r| r.get::<_, i64>(0))
        .optional()
        .map_err(sql)?
        .map(uint)
        .transpose()
        .map(|h| h.unwrap_or(0))
}

/// One side record's value, on any connection (as [`head_of`]).
fn side_of(conn: &Connection, s: SideSpace, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
    conn.prepare_cached("SELECT value FROM side WHERE space = ?1 AND key = ?2")
        .map_err(sql)?
        .query_row(params![space(s), key], |r| r.get(0))
        .optional()
        .map_err(sql)
}

/// One page; `query` selects `(seq, cursor, bytes)` ordered by cursor,
/// after ?3. `scope` is `None` for session reads (the cursor is `seq`).
/// Each row's bytes are checked against its key.
fn page(
    conn: &Connection,
    query: &str,
    sid: &str,
    scope: Option<(Scope, &str)>,
    after: u64,
    limit: usize,
) -> Result<Page, StoreError> {
    let mut stmt = conn.prepare_cached(query).map_err(sql)?;
    let take = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
    let scope_id = scope.map_or("", |(_, id)| id);
    let rows = stmt
        .query_map(params![sid, scope_id, int(after)?, take], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })
        .map_err(sql)?;
    let mut out = Vec::new();
    let (mut next, mut filled) = (None, 0usize);
    let mut last = after;
    for row in rows {
        let (seq, cursor, bytes) = row.map_err(sql)?;
        if narad_store::page_full(out.len(), filled, limit) {
            next = Some(last);
            break;
        }
        let (seq, cursor) = (uint(seq)?, uint(cursor)?);
        last = row::advance(sid, last, cursor)?;
        out.push(match scope {
            None => row::decode_event(sid, seq, Bytes::from(bytes))?,
            Some((kind, id)) => {
                row::decode_scoped_event(sid, seq, kind, id, cursor, Bytes::from(bytes))?
            }
        });
        filled += out.last().map_or(0, |e| e.bytes.len());
    }
    Ok(Page { events: out, next })
}

#[async_trait]
impl Store for SqliteStore {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.group
            .append(batch)
            .await
            .map_err(|e| e.at_path(&self.path))
    }

    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        let sid = session_id.to_owned();
        self.blocking(move |c| head_of(c, &sid)).await
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
                "SELECT seq, seq, bytes FROM events WHERE session = ?1 AND ?2 = ?2 AND seq > ?3
                 ORDER BY seq LIMIT ?4",
                &sid,
                None,
                after,
                limit,
            )
        })
        .await
    }

    async fn find_events(
        &self,
        session_id: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let sid = session_id.to_owned();
        let ids: Vec<String> = event_ids.iter().map(|&i| i.to_owned()).collect();
        self.blocking(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT seq, bytes FROM events WHERE session = ?1 AND event_id = ?2",
                )
                .map_err(sql)?;
            let mut found = Vec::new();
            for id in &ids {
                let row = stmt
                    .query_row(params![sid, id], |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
                    })
                    .optional()
                    .map_err(sql)?;
                if let Some((seq, bytes)) = row {
                    found.push(row::decode_found_event(
                        &sid,
                        id,
                        uint(seq)?,
                        Bytes::from(bytes),
                    )?);
                }
            }
            Ok(row::in_session_order(found))
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
                "SELECT seq, rseq, bytes FROM events WHERE session = ?1 AND root = ?2 AND rseq > ?3
                 ORDER BY rseq LIMIT ?4",
                &sid,
                Some((Scope::Run, &root)),
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
                "SELECT seq, wseq, bytes FROM events WHERE session = ?1 AND wf = ?2 AND wseq > ?3
                 ORDER BY wseq LIMIT ?4",
                &sid,
                Some((Scope::Workflow, &wf)),
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
                .map_err(sql)?;
            let take = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![after, take], |r| r.get::<_, String>(0))
                .map_err(sql)?;
            rows.map(|r| r.map_err(sql)).collect()
        })
        .await
    }

    async fn side(&self, space_: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        let key = key.to_owned();
        self.blocking(move |c| Ok(side_of(c, space_, &key)?.map(Bytes::from)))
            .await
    }

    async fn list_side(
        &self,
        space_: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError> {
        let after = after.map(str::to_owned);
        self.blocking(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT key, value FROM side WHERE space = ?1 AND (?2 IS NULL OR key > ?2)
                     ORDER BY key LIMIT ?3",
                )
                .map_err(sql)?;
            let take = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![space(space_), after, take], |r| {
                    Ok((r.get::<_, String>(0)?, Bytes::from(r.get::<_, Vec<u8>>(1)?)))
                })
                .map_err(sql)?;
            rows.map(|r| r.map_err(sql)).collect()
        })
        .await
    }

    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let after = after.map(str::to_owned);
        self.blocking(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT DISTINCT workspace FROM watch WHERE (?1 IS NULL OR workspace > ?1)
                     ORDER BY workspace LIMIT ?2",
                )
                .map_err(sql)?;
            let take = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![after, take], |r| r.get::<_, String>(0))
                .map_err(sql)?;
            rows.map(|r| r.map_err(sql)).collect()
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
        self.blocking(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT revision, bytes FROM watch WHERE workspace = ?1 AND revision > ?2
                     ORDER BY revision LIMIT ?3",
                )
                .map_err(sql)?;
            let take = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![ws, int(after)?, take], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
                })
                .map_err(sql)?;
            let mut out: Vec<StoredWatch> = Vec::new();
            let mut next = None;
            for row in rows {
                let (rev, bytes) = row.map_err(sql)?;
                if out.len() == limit {
                    next = Some(out.last().map_or(after, |w| w.revision));
                    break;
                }
                out.push(StoredWatch::from_stored_bytes(uint(rev)?, &bytes)?);
            }
            Ok(WatchPage { events: out, next })
        })
        .await
    }

    fn subscribe(&self) -> Subscription {
        self.group.subscribe()
    }

    async fn close(&self) -> Result<(), StoreError> {
        let (group, conn) = (Arc::clone(&self.group), Arc::clone(&self.conn));
        tokio::task::spawn_blocking(move || {
            group.close();
            if let Ok(mut c) = conn.lock() {
                c.take();
            }
        })
        .await
        .map_err(backend)
    }
}
