//! # narad-store-postgres
//!
//! The PostgreSQL [`Store`] backend, for several engine processes on
//! several hosts sharing sessions. Pooled connections (deadpool), prepared
//! statements cached per connection, every append one transaction.
//!
//! Concurrency is decided **in the database**: an append locks its
//! session's `heads` row (`INSERT … ON CONFLICT DO UPDATE … RETURNING`, one
//! round trip), so appends to one session from any number of processes are
//! serialized there; [`plan_batch`] then decides the batch on what the
//! transaction read, exactly as on the embedded backends. A conditional
//! side write of a record that does not exist yet is an `INSERT … ON
//! CONFLICT DO NOTHING` whose row count decides. Commits are announced with
//! `NOTIFY` inside the transaction (delivered on commit) and heard by one
//! `LISTEN` connection per store, which reconnects with a bounded backoff.
//!
//! Each store lives in one PostgreSQL schema (default `narad`), created and
//! migrated by [`PostgresStore::open`] (layout versions as in the embedded
//! backends: 1 journal and side records, 2 the workspace watch stream).
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_store_postgres::PostgresStore::open("postgres://narad@localhost/narad", "narad").await?;
//! assert_eq!(store.head("session-1").await?, 0);
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use narad_store::group::Announcer;
use narad_store::{
    plan_batch, row, Appended, Batch, Damage, Expect, Page, Plan, Reads, Scope, ScopeKey,
    SideSpace, SideWrite, Store, StoreError, StoredEvent, StoredWatch, Subscription, View,
    WatchPage, WatchWrite,
};
use tokio_postgres::{NoTls, Row};

mod listen;
use listen::listen;

/// The layout version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 2;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Column `i` of a row; a value of another type than the layout's (a
/// damaged or hand-altered table) is [`StoreError::Corrupt`], never a panic.
fn col<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|_| StoreError::corrupt(Damage::WrongType, None, None))
}

use narad_store::{from_sql_int as uint, to_sql_int as int};

fn space(s: SideSpace) -> i32 {
    i32::from(s.id())
}

/// Forward migrations; `{s}` is the schema. Step `i` takes layout `i` to `i + 1`.
const MIGRATIONS: [&str; 2] = [
    "CREATE TABLE {s}.events (
        session TEXT NOT NULL, seq BIGINT NOT NULL, event_id TEXT NOT NULL, bytes BYTEA NOT NULL,
        root TEXT, rseq BIGINT, wf TEXT, wseq BIGINT,
        PRIMARY KEY (session, seq), UNIQUE (session, event_id));
     CREATE UNIQUE INDEX events_run ON {s}.events (session, root, rseq) WHERE root IS NOT NULL;
     CREATE UNIQUE INDEX events_wf ON {s}.events (session, wf, wseq) WHERE wf IS NOT NULL;
     CREATE TABLE {s}.heads (session TEXT PRIMARY KEY, head BIGINT NOT NULL);
     CREATE TABLE {s}.side (space INT NOT NULL, key TEXT NOT NULL, value BYTEA NOT NULL,
        PRIMARY KEY (space, key));",
    "CREATE TABLE {s}.watch (
        workspace TEXT NOT NULL, revision BIGINT NOT NULL, event_id TEXT NOT NULL,
        bytes BYTEA NOT NULL, PRIMARY KEY (workspace, revision), UNIQUE (workspace, event_id));
     CREATE TABLE {s}.watch_heads (workspace TEXT PRIMARY KEY, revision BIGINT NOT NULL);",
];

/// A PostgreSQL-backed store. Cheap to clone; clones share the pool and the
/// listener.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    schema: Arc<str>,
    announcer: Announcer,
    listener: Arc<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

fn valid_schema(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 48
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

impl PostgresStore {
    /// Connects to `url`, creates or migrates the store in `schema`
    /// (lowercase letters, digits, `_`), and starts listening for commits.
    /// A schema written by a newer layout is refused with
    /// [`StoreError::NewerSchema`].
    pub async fn open(url: &str, schema: &str) -> Result<Self, StoreError> {
        Self::open_mode(url, schema, true).await
    }

    /// Connects to a store that exists already: a schema without a Narad
    /// layout is [`StoreError::NotFound`] naming the schema, and nothing is
    /// created. For commands that only read.
    pub async fn open_existing(url: &str, schema: &str) -> Result<Self, StoreError> {
        Self::open_mode(url, schema, false).await
    }

    async fn open_mode(url: &str, schema: &str, create: bool) -> Result<Self, StoreError> {
        if !valid_schema(schema) {
            return Err(StoreError::Backend(format!(
                "invalid schema name `{schema}`"
            )));
        }
        let config: tokio_postgres::Config = url.parse().map_err(backend)?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .build()
            .map_err(backend)?;
        if !create {
            let c = pool.get().await.map_err(backend)?;
            let meta = format!("{schema}.meta");
            let row = c
                .query_one("SELECT to_regclass($1)::TEXT", &[&meta])
                .await
                .map_err(backend)?;
            if col::<Option<String>>(&row, 0)?.is_none() {
                return Err(StoreError::NotFound {
                    path: format!("schema {schema}"),
                });
            }
        }
        migrate(&pool, schema).await?;
        let announcer = Announcer::default();
        let (listening, ready) = tokio::sync::oneshot::channel();
        let listener = tokio::spawn(listen(
            config,
            schema.to_owned(),
            announcer.clone(),
            listening,
        ));
        // Commits after `open` returns must be heard: wait for LISTEN (a
        // server that cannot be reached fails `open` already above).
        let _ = tokio::time::timeout(Duration::from_secs(10), ready).await;
        Ok(Self {
            pool,
            schema: schema.into(),
            announcer,
            listener: Arc::new(listener),
        })
    }

    fn sql(&self, q: &str) -> String {
        q.replace("{s}", &self.schema)
    }

    /// A live pooled connection. A connection the server dropped is
    /// discarded and another one opened, with a bounded backoff.
    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        let mut backoff = Duration::from_millis(20);
        let mut last = String::new();
        for _ in 0..8 {
            if self.pool.is_closed() {
                return Err(StoreError::Closed);
            }
            match self.pool.get().await {
                Ok(c) if !c.is_closed() => return Ok(c),
                Ok(dead) => {
                    drop(deadpool_postgres::Object::take(dead));
                    continue;
                }
                Err(_) if self.pool.is_closed() => return Err(StoreError::Closed),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        Err(StoreError::Backend(format!(
            "cannot reach the database: {last}"
        )))
    }

    /// One page; `sql` selects `(seq, cursor, bytes)` ordered by cursor.
    /// `scope` is `None` for session reads (the cursor is `seq`). Each
    /// row's bytes are checked against its key.
    async fn page(
        &self,
        sql: &str,
        sid: &str,
        scope: Option<(Scope, &str)>,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let c = self.client().await?;
        let stmt = c.prepare_cached(&self.sql(sql)).await.map_err(backend)?;
        let take = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let mut all: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&sid];
        let scope_id = scope.map(|(_, id)| id);
        if let Some(id) = &scope_id {
            all.push(id);
        }
        let after_i = int(after)?;
        all.push(&after_i);
        all.push(&take);
        let rows = c.query(&stmt, &all).await.map_err(backend)?;
        let mut out = Vec::new();
        let mut next = None;
        let mut last = after;
        for row in rows {
            if out.len() == limit {
                next = Some(last);
                break;
            }
            let seq = uint(col(&row, 0).map_err(|e| in_session(e, sid))?)?;
            let cursor = uint(col(&row, 1).map_err(|e| in_session(e, sid))?)?;
            let bytes: &[u8] = col(&row, 2).map_err(|e| in_session(e, sid))?;
            last = row::advance(sid, last, cursor)?;
            let bytes = Bytes::copy_from_slice(bytes);
            out.push(match scope {
                None => row::decode_event(sid, seq, bytes)?,
                Some((kind, id)) => row::decode_scoped_event(sid, seq, kind, id, cursor, bytes)?,
            });
        }
        Ok(Page { events: out, next })
    }
}

/// Names the session in a damage report that does not name one yet.
fn in_session(e: StoreError, sid: &str) -> StoreError {
    match e {
        StoreError::Corrupt {
            damage,
            session: None,
            position,
            path,
        } => StoreError::Corrupt {
            damage,
            session: Some(sid.to_owned()),
            position,
            path,
        },
        other => other,
    }
}

async fn migrate(pool: &Pool, schema: &str) -> Result<(), StoreError> {
    let mut c = pool.get().await.map_err(backend)?;
    let tx = c.transaction().await.map_err(backend)?;
    // One migrator at a time across processes.
    tx.execute("SELECT pg_advisory_xact_lock(7263019)", &[])
        .await
        .map_err(backend)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);"
    ))
    .await
    .map_err(backend)?;
    let found: i64 = tx
        .query_opt(
            &format!("SELECT value FROM {schema}.meta WHERE name = 'schema_version'"),
            &[],
        )
        .await
        .map_err(backend)?
        .map_or(Ok(0), |r| col(&r, 0))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found: u32::try_from(found).unwrap_or(u32::MAX),
            supported: SCHEMA_VERSION as u32,
        });
    }
    for step in MIGRATIONS
        .iter()
        .skip(usize::try_from(found).map_err(backend)?)
    {
        tx.batch_execute(&step.replace("{s}", schema))
            .await
            .map_err(backend)?;
    }
    if found != SCHEMA_VERSION {
        tx.execute(
            &format!(
                "INSERT INTO {schema}.meta (name, value) VALUES ('schema_version', $1)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            ),
            &[&SCHEMA_VERSION],
        )
        .await
        .map_err(backend)?;
    }
    tx.commit().await.map_err(backend)
}

/// What one append's transaction read, for [`plan_batch`].
#[derive(Default)]
struct Read {
    head: u64,
    events: BTreeMap<String, (u64, Vec<u8>)>,
    scope_heads: BTreeMap<(ScopeKey, String), u64>,
    side: BTreeMap<(i32, String), Vec<u8>>,
    watch: BTreeMap<(String, String), Vec<u8>>,
    watch_heads: BTreeMap<String, u64>,
}

impl View for Read {
    fn head(&mut self, _: &str) -> Result<u64, StoreError> {
        Ok(self.head)
    }
    fn event(&mut self, _: &str, ev: &StoredEvent) -> Result<Option<(u64, bool)>, StoreError> {
        Ok(self
            .events
            .get(&ev.event_id)
            .map(|(seq, b)| (*seq, b.as_slice() == ev.bytes.as_ref())))
    }
    fn scope_head(&mut self, _: &str, scope: Scope, id: &str) -> Result<u64, StoreError> {
        Ok(self
            .scope_heads
            .get(&(scope.into(), id.to_owned()))
            .copied()
            .unwrap_or(0))
    }
    fn side(&mut self, w: &SideWrite) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.side.get(&(space(w.space), w.key.clone())).cloned())
    }
    fn watch(&mut self, w: &WatchWrite) -> Result<Option<bool>, StoreError> {
        Ok(self
            .watch
            .get(&(w.workspace_id.clone(), w.event.event_id.clone()))
            .map(|b| b.as_slice() == w.event.bytes.as_ref()))
    }
    fn watch_head(&mut self, ws: &str) -> Result<u64, StoreError> {
        Ok(self.watch_heads.get(ws).copied().unwrap_or(0))
    }
}

impl PostgresStore {
    async fn append_tx(
        &self,
        c: &mut deadpool_postgres::Object,
        batch: &Batch,
    ) -> Result<Appended, StoreError> {
        let tx = c.transaction().await.map_err(backend)?;
        let sid = batch.session_id.as_str();
        let workspace_only = sid.is_empty() && batch.events.is_empty();
        // Exactly the reads plan_batch declares for this batch.
        let reads = Reads::of(batch);
        let mut read = Read::default();
        if !workspace_only {
            // One round trip: create-or-lock the head row and read it.
            let row = tx
                .query_one(
                    &tx.prepare_cached(&self.sql(
                        "INSERT INTO {s}.heads (session, head) VALUES ($1, 0)
                         ON CONFLICT (session) DO UPDATE SET head = {s}.heads.head RETURNING head",
                    ))
                    .await
                    .map_err(backend)?,
                    &[&sid],
                )
                .await
                .map_err(backend)?;
            read.head = uint(col(&row, 0)?)?;
            let ids: Vec<&str> = reads.events.iter().copied().collect();
            for row in tx
                .query(
                    &tx.prepare_cached(&self.sql("SELECT event_id, seq, bytes FROM {s}.events WHERE session = $1 AND event_id = ANY($2)")).await.map_err(backend)?,
                    &[&sid, &ids],
                )
                .await
                .map_err(backend)?
            {
                read.events
                    .insert(col(&row, 0)?, (uint(col(&row, 1)?)?, col(&row, 2)?));
            }
            for &(tag, id) in &reads.scopes {
                let q = if tag == ScopeKey::Run {
                    "SELECT COALESCE(MAX(rseq), 0) FROM {s}.events WHERE session = $1 AND root = $2"
                } else {
                    "SELECT COALESCE(MAX(wseq), 0) FROM {s}.events WHERE session = $1 AND wf = $2"
                };
                let row = tx
                    .query_one(
                        &tx.prepare_cached(&self.sql(q)).await.map_err(backend)?,
                        &[&sid, &id],
                    )
                    .await
                    .map_err(backend)?;
                read.scope_heads
                    .insert((tag, id.to_owned()), uint(col(&row, 0)?)?);
            }
        }
        for &(sp, key) in &reads.side {
            let row = tx
                .query_opt(
                    &self
                        .sql("SELECT value FROM {s}.side WHERE space = $1 AND key = $2 FOR UPDATE"),
                    &[&space(sp), &key],
                )
                .await
                .map_err(backend)?;
            if let Some(r) = row {
                read.side.insert((space(sp), key.to_owned()), col(&r, 0)?);
            }
        }
        for &ws in &reads.watch_heads {
            tx.execute(
                &tx.prepare_cached(&self.sql("INSERT INTO {s}.watch_heads (workspace, revision) VALUES ($1, 0) ON CONFLICT DO NOTHING")).await.map_err(backend)?,
                &[&ws],
            )
            .await
            .map_err(backend)?;
            let row = tx
                .query_one(
                    &tx.prepare_cached(&self.sql(
                        "SELECT revision FROM {s}.watch_heads WHERE workspace = $1 FOR UPDATE",
                    ))
                    .await
                    .map_err(backend)?,
                    &[&ws],
                )
                .await
                .map_err(backend)?;
            read.watch_heads.insert(ws.to_owned(), uint(col(&row, 0)?)?);
        }
        for &(ws, event_id) in &reads.watch {
            let row = tx
                .query_opt(
                    &tx.prepare_cached(
                        &self.sql(
                            "SELECT bytes FROM {s}.watch WHERE workspace = $1 AND event_id = $2",
                        ),
                    )
                    .await
                    .map_err(backend)?,
                    &[&ws, &event_id],
                )
                .await
                .map_err(backend)?;
            if let Some(r) = row {
                read.watch
                    .insert((ws.to_owned(), event_id.to_owned()), col(&r, 0)?);
            }
        }
        let (fresh, fresh_watch, appended, purge) = match plan_batch(batch, &mut read)? {
            Plan::Redelivered(done) => return Ok(done),
            Plan::Write {
                fresh,
                fresh_watch,
                appended,
                purge,
            } => (fresh, fresh_watch, appended, purge),
        };
        if purge {
            // The run-tree and workflow indexes are columns of `events`;
            // the `heads` row stays locked by this transaction until commit.
            for stmt in [
                "DELETE FROM {s}.events WHERE session = $1",
                "DELETE FROM {s}.heads WHERE session = $1",
            ] {
                tx.execute(
                    &tx.prepare_cached(&self.sql(stmt)).await.map_err(backend)?,
                    &[&sid],
                )
                .await
                .map_err(backend)?;
            }
        }
        if !fresh.is_empty() {
            // One statement for the whole batch: one round trip.
            let insert = tx
                .prepare_cached(&self.sql(
                    "INSERT INTO {s}.events (session, seq, event_id, bytes, root, rseq, wf, wseq)
                     SELECT $1, * FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::BYTEA[],
                                              $5::TEXT[], $6::BIGINT[], $7::TEXT[], $8::BIGINT[])",
                ))
                .await
                .map_err(backend)?;
            let mut cols = (
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
            );
            for ev in &fresh {
                cols.0.push(int(ev.position.session_sequence)?);
                cols.1.push(ev.event_id.as_str());
                cols.2.push(ev.bytes.as_ref());
                let (root, rseq) = match &ev.position.run {
                    Some((r, s)) => (Some(r.as_str()), Some(int(*s)?)),
                    None => (None, None),
                };
                let (wf, wseq) = match &ev.position.workflow {
                    Some((w, s)) => (Some(w.as_str()), Some(int(*s)?)),
                    None => (None, None),
                };
                cols.3.push(root);
                cols.4.push(rseq);
                cols.5.push(wf);
                cols.6.push(wseq);
            }
            tx.execute(
                &insert,
                &[
                    &sid, &cols.0, &cols.1, &cols.2, &cols.3, &cols.4, &cols.5, &cols.6,
                ],
            )
            .await
            .map_err(backend)?;
        }
        for w in &batch.side {
            let (sp, key) = (space(w.space), w.key.as_str());
            let n = match (&w.value, &w.expect) {
                (Some(v), Expect::Absent) => {
                    tx.execute(
                        &tx.prepare_cached(&self.sql("INSERT INTO {s}.side (space, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")).await.map_err(backend)?,
                        &[&sp, &key, &v.as_ref()],
                    )
                    .await
                    .map_err(backend)?
                }
                (Some(v), _) => {
                    tx.execute(
                        &tx.prepare_cached(&self.sql("INSERT INTO {s}.side (space, key, value) VALUES ($1, $2, $3)
                                   ON CONFLICT (space, key) DO UPDATE SET value = excluded.value")).await.map_err(backend)?,
                        &[&sp, &key, &v.as_ref()],
                    )
                    .await
                    .map_err(backend)?
                }
                (None, _) => {
                    tx.execute(&tx.prepare_cached(&self.sql("DELETE FROM {s}.side WHERE space = $1 AND key = $2")).await.map_err(backend)?, &[&sp, &key])
                        .await
                        .map_err(backend)?;
                    1
                }
            };
            if n == 0 {
                // Another writer created it since we read: the expectation failed.
                return Err(StoreError::SideConflict);
            }
        }
        let mut newest: BTreeMap<&str, u64> = BTreeMap::new();
        for w in fresh_watch {
            let rev = int(w.event.revision)?;
            tx.execute(
                &tx.prepare_cached(&self.sql("INSERT INTO {s}.watch (workspace, revision, event_id, bytes) VALUES ($1, $2, $3, $4)")).await.map_err(backend)?,
                &[&w.workspace_id, &rev, &w.event.event_id, &w.event.bytes.as_ref()],
            )
            .await
            .map_err(backend)?;
            tx.execute(
                &tx.prepare_cached(
                    &self.sql("UPDATE {s}.watch_heads SET revision = $2 WHERE workspace = $1"),
                )
                .await
                .map_err(backend)?,
                &[&w.workspace_id, &rev],
            )
            .await
            .map_err(backend)?;
            newest.insert(&w.workspace_id, w.event.revision);
        }
        let channel = format!("narad_{}", self.schema);
        if !fresh.is_empty() {
            tx.execute(
                &tx.prepare_cached(&self.sql("UPDATE {s}.heads SET head = $2 WHERE session = $1"))
                    .await
                    .map_err(backend)?,
                &[&sid, &int(appended.head)?],
            )
            .await
            .map_err(backend)?;
            let payload = format!("s\t{}\t{sid}", appended.head);
            tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
                .await
                .map_err(backend)?;
        }
        for (ws, rev) in newest {
            let payload = format!("w\t{rev}\t{ws}");
            tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
                .await
                .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(appended)
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        let mut c = self.client().await?;
        let out = self.append_tx(&mut c, &batch).await;
        if matches!(out, Err(StoreError::Backend(_))) {
            // The connection may be dead (the outcome is then unknown to the
            // caller, who redelivers): never hand it out again.
            drop(deadpool_postgres::Object::take(c));
        }
        out
    }

    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql("SELECT head FROM {s}.heads WHERE session = $1"))
            .await
            .map_err(backend)?;
        c.query_opt(&stmt, &[&session_id])
            .await
            .map_err(backend)?
            .map(|r| uint(col(&r, 0).map_err(|e| in_session(e, session_id))?))
            .transpose()
            .map(|h| h.unwrap_or(0))
    }

    async fn read_session(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page(
            "SELECT seq, seq, bytes FROM {s}.events WHERE session = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            session_id,
            None,
            after,
            limit,
        )
        .await
    }

    async fn read_run(
        &self,
        session_id: &str,
        root: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page(
            "SELECT seq, rseq, bytes FROM {s}.events WHERE session = $1 AND root = $2 AND rseq > $3 ORDER BY rseq LIMIT $4",
            session_id,
            Some((Scope::Run, root)),
            after,
            limit,
        )
        .await
    }

    async fn read_workflow(
        &self,
        session_id: &str,
        wf: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page(
            "SELECT seq, wseq, bytes FROM {s}.events WHERE session = $1 AND wf = $2 AND wseq > $3 ORDER BY wseq LIMIT $4",
            session_id,
            Some((Scope::Workflow, wf)),
            after,
            limit,
        )
        .await
    }

    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql(
                "SELECT session FROM {s}.heads WHERE head > 0 AND ($1::TEXT IS NULL OR session > $1)
                 ORDER BY session LIMIT $2",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = c.query(&stmt, &[&after, &take]).await.map_err(backend)?;
        rows.iter().map(|r| col(r, 0)).collect()
    }

    async fn side(&self, space_: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql("SELECT value FROM {s}.side WHERE space = $1 AND key = $2"))
            .await
            .map_err(backend)?;
        Ok(c.query_opt(&stmt, &[&space(space_), &key])
            .await
            .map_err(backend)?
            .map(|r| col::<Vec<u8>>(&r, 0).map(Bytes::from))
            .transpose()?)
    }

    async fn list_side(
        &self,
        space_: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError> {
        let c = self.client().await?;
        // Byte order on every backend: compare and sort in the "C" collation.
        let stmt = c
            .prepare_cached(&self.sql(
                "SELECT key, value FROM {s}.side
                 WHERE space = $1 AND ($2::TEXT IS NULL OR key > $2 COLLATE \"C\")
                 ORDER BY key COLLATE \"C\" LIMIT $3",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = c
            .query(&stmt, &[&space(space_), &after, &take])
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| Ok((col::<String>(r, 0)?, Bytes::from(col::<Vec<u8>>(r, 1)?))))
            .collect()
    }

    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql(
                "SELECT workspace FROM {s}.watch_heads
                 WHERE revision > 0 AND ($1::TEXT IS NULL OR workspace > $1 COLLATE \"C\")
                 ORDER BY workspace COLLATE \"C\" LIMIT $2",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = c.query(&stmt, &[&after, &take]).await.map_err(backend)?;
        rows.iter().map(|r| col(r, 0)).collect()
    }

    async fn read_watch(
        &self,
        ws: &str,
        after: u64,
        limit: usize,
    ) -> Result<WatchPage, StoreError> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql(
                "SELECT revision, bytes FROM {s}.watch WHERE workspace = $1 AND revision > $2
                 ORDER BY revision LIMIT $3",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = c
            .query(&stmt, &[&ws, &int(after)?, &take])
            .await
            .map_err(backend)?;
        let mut out: Vec<StoredWatch> = Vec::new();
        let mut next = None;
        for row in rows {
            if out.len() == limit {
                next = Some(out.last().map_or(after, |w| w.revision));
                break;
            }
            out.push(StoredWatch::from_stored_bytes(
                uint(col(&row, 0)?)?,
                col::<&[u8]>(&row, 1)?,
            )?);
        }
        Ok(WatchPage { events: out, next })
    }

    fn subscribe(&self) -> Subscription {
        self.announcer.subscribe()
    }

    async fn close(&self) -> Result<(), StoreError> {
        self.pool.close();
        self.listener.abort();
        Ok(())
    }
}
