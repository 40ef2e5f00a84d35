//! # narad-store-postgres
//!
//! The PostgreSQL [`Store`] backend, for several engine processes on
//! several hosts sharing sessions. Pooled connections (deadpool), prepared
//! statements cached per connection, every append one transaction.
//!
//! Concurrency is decided **in the database**: an append locks its
//! session's `heads` row (`INSERT … ON CONFLICT DO UPDATE … RETURNING`, one
//! round trip), so appends to one session from any number of processes are
//! serialized there; [`plan_batch`](narad_store::plan_batch) then decides the batch on what the
//! transaction read, exactly as on the embedded backends. A conditional
//! side write of a record that does not exist yet is an `INSERT … ON
//! CONFLICT DO NOTHING` whose row count decides. Commits are announced with
//! `NOTIFY` inside the transaction (delivered on commit) and heard by one
//! `LISTEN` connection per store, which reconnects with a bounded backoff.
//!
//! Each store lives in one PostgreSQL schema (default `narad`), created and
//! migrated by [`PostgresStore::open`] (layout versions as in the embedded
//! backends: 1 journal and side records, 2 the workspace watch stream; 3,
//! PostgreSQL's own, holds every id as its UTF-8 bytes, so an id may hold
//! U+0000 and lists in byte order whatever the database's collation, and
//! indexes ids by a bounded key, so an id may be longer than a btree entry).
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_store_postgres::PostgresStore::open("postgres://narad@localhost/narad", "narad").await?;
//! assert_eq!(store.head("session-1").await?, 0);
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use narad_store::group::Announcer;
use narad_store::{
    row, Appended, Batch, Damage, Page, Scope, SideSpace, Store, StoreError, StoredEvent,
    StoredWatch, Subscription, WatchPage,
};
use tokio_postgres::{NoTls, Row};

mod append;
mod listen;
mod schema;
use listen::listen;
use schema::{migrate, valid_schema};

/// The layout version this build writes and reads.
pub const SCHEMA_VERSION: i64 = 3;

/// A backend failure in words: the server's own SQLSTATE and message when
/// the server refused (tokio-postgres says only "db error"), else the
/// error's text. The server's detail and hint lines, which may quote row
/// values, are left out.
fn backend<E: std::error::Error + 'static>(e: E) -> StoreError {
    let mut cause: &(dyn std::error::Error + 'static) = &e;
    loop {
        if let Some(db) = cause.downcast_ref::<tokio_postgres::error::DbError>() {
            return StoreError::Backend(format!(
                "PostgreSQL refused ({}): {}",
                db.code().code(),
                controls_escaped(db.message())
            ));
        }
        match cause.source() {
            Some(inner) => cause = inner,
            None => return StoreError::Backend(e.to_string()),
        }
    }
}

/// `s` with its control characters escaped, so a message stays one line.
fn controls_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A connection URL tokio-postgres does not parse, with the innermost
/// cause (which option, which byte), not its bare "invalid connection
/// string". The causes name option keys and positions, never a value.
fn invalid_url(e: &tokio_postgres::Error) -> StoreError {
    let mut cause: &(dyn std::error::Error + 'static) = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    StoreError::Backend(format!(
        "invalid PostgreSQL connection URL: {}",
        controls_escaped(&cause.to_string())
    ))
}

/// A failed first connection to the server `config` names: where, as
/// `postgres://USER@HOST:PORT/DB` (no password), and the innermost cause.
fn unreachable(
    config: &tokio_postgres::Config,
    e: &(dyn std::error::Error + 'static),
) -> StoreError {
    use tokio_postgres::config::Host;
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            // tokio-postgres's rule: one port serves every host.
            let port = match ports {
                [one] => *one,
                _ => ports.get(i).copied().unwrap_or(5432),
            };
            match h {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    StoreError::Backend(format!(
        "cannot connect to postgres://{user}{}/{db}: {cause}",
        hosts.join(",")
    ))
}

/// Column `i` of a row; a value of another type than the layout's (a
/// damaged or hand-altered table) is [`StoreError::Corrupt`], never a panic.
fn col<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|_| StoreError::corrupt(Damage::WrongType, None, None))
}

/// Column `i` of a row, an id held as its UTF-8 bytes (layout 3); bytes
/// that are not UTF-8 are [`StoreError::Corrupt`].
fn id_col(row: &Row, i: usize) -> Result<String, StoreError> {
    String::from_utf8(col::<Vec<u8>>(row, i)?)
        .map_err(|_| StoreError::corrupt(Damage::WrongType, None, None))
}

use narad_store::{from_sql_int as uint, to_sql_int as int};

fn space(s: SideSpace) -> i32 {
    i32::from(s.id())
}

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

impl PostgresStore {
    /// Connects to `url`, creates or migrates the store in `schema`
    /// (lowercase letters, digits, `_`), and starts listening for commits.
    /// A schema written by a newer layout is refused with
    /// [`StoreError::NewerSchema`], and one that holds another
    /// application's tables with [`StoreError::NotAStore`], unwritten.
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
        let config: tokio_postgres::Config = url.parse().map_err(|e| invalid_url(&e))?;
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
        // The first connection names the server it could not reach (and
        // why, from the innermost cause), never the password.
        let c = pool.get().await.map_err(|e| unreachable(&config, &e))?;
        // A schema without the layout's `meta` table (every layout has had
        // one) but with tables of its own is another application's: no
        // table is added to it. Without any table it is no store to read.
        let meta = format!("{schema}.meta");
        let row = c
            .query_one(
                "SELECT to_regclass($1)::TEXT,
                        (SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $2)",
                &[&meta, &schema],
            )
            .await
            .map_err(backend)?;
        if col::<Option<String>>(&row, 0)?.is_none() {
            if col::<i64>(&row, 1)? > 0 {
                return Err(StoreError::NotAStore {
                    path: format!("schema {schema}"),
                });
            }
            if !create {
                return Err(StoreError::NotFound {
                    path: format!("schema {schema}"),
                });
            }
        }
        drop(c);
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
        let sid_bytes = sid.as_bytes();
        let mut all: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&sid_bytes];
        let scope_id = scope.map(|(_, id)| id.as_bytes());
        if let Some(id) = &scope_id {
            all.push(id);
        }
        let after_i = int(after)?;
        all.push(&after_i);
        all.push(&take);
        // Streamed, so a page that stops at its bytes (`page_full`) never
        // holds the rows after it; the connection discards what is left.
        let rows = c.query_raw(&stmt, all).await.map_err(backend)?;
        futures_util::pin_mut!(rows);
        let mut out = Vec::new();
        let (mut next, mut filled) = (None, 0usize);
        let mut last = after;
        while let Some(row) = futures_util::TryStreamExt::try_next(&mut rows)
            .await
            .map_err(backend)?
        {
            if narad_store::page_full(out.len(), filled, limit) {
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
            filled += out.last().map_or(0, |e| e.bytes.len());
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
            .prepare_cached(
                &self.sql("SELECT head FROM {s}.heads WHERE {s}.k(session) = {s}.k($1)"),
            )
            .await
            .map_err(backend)?;
        c.query_opt(&stmt, &[&session_id.as_bytes()])
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
            "SELECT seq, seq, bytes FROM {s}.events WHERE {s}.k(session) = {s}.k($1) AND seq > $2 ORDER BY seq LIMIT $3",
            session_id,
            None,
            after,
            limit,
        )
        .await
    }

    async fn find_events(
        &self,
        session_id: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        if event_ids.is_empty() {
            return Ok(Vec::new());
        }
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql(
                "SELECT event_id, seq, bytes FROM {s}.events WHERE {s}.k(session) = {s}.k($1)
                 AND {s}.k(event_id) = ANY(ARRAY(SELECT {s}.k(id) FROM unnest($2::BYTEA[]) AS id))
                 ORDER BY seq",
            ))
            .await
            .map_err(backend)?;
        let ids: Vec<&[u8]> = event_ids.iter().map(|id| id.as_bytes()).collect();
        let rows = c
            .query(&stmt, &[&session_id.as_bytes(), &ids])
            .await
            .map_err(backend)?;
        let mut found = Vec::with_capacity(rows.len());
        for r in &rows {
            let id = id_col(r, 0).map_err(|e| in_session(e, session_id))?;
            let seq = uint(col(r, 1).map_err(|e| in_session(e, session_id))?)?;
            let bytes: &[u8] = col(r, 2).map_err(|e| in_session(e, session_id))?;
            found.push(row::decode_found_event(
                session_id,
                &id,
                seq,
                Bytes::copy_from_slice(bytes),
            )?);
        }
        Ok(found)
    }

    async fn read_run(
        &self,
        session_id: &str,
        root: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page(
            "SELECT seq, rseq, bytes FROM {s}.events WHERE {s}.k(session) = {s}.k($1) AND {s}.k(root) = {s}.k($2) AND rseq > $3 ORDER BY rseq LIMIT $4",
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
            "SELECT seq, wseq, bytes FROM {s}.events WHERE {s}.k(session) = {s}.k($1) AND {s}.k(wf) = {s}.k($2) AND wseq > $3 ORDER BY wseq LIMIT $4",
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
                "SELECT session FROM {s}.heads WHERE head > 0 AND ($1::BYTEA IS NULL
                    OR ({s}.p(session) >= {s}.p($1) AND session > $1))
                 ORDER BY {s}.p(session), session LIMIT $2",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = c
            .query(&stmt, &[&after.map(str::as_bytes), &take])
            .await
            .map_err(backend)?;
        rows.iter().map(|r| id_col(r, 0)).collect()
    }

    async fn side(&self, space_: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(
                &self.sql("SELECT value FROM {s}.side WHERE space = $1 AND {s}.k(key) = {s}.k($2)"),
            )
            .await
            .map_err(backend)?;
        Ok(c.query_opt(&stmt, &[&space(space_), &key.as_bytes()])
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
        // Byte order on every backend: ids are bytes, ordered by their
        // indexed first 1,024 bytes and then whole.
        let stmt = c
            .prepare_cached(&self.sql(
                "SELECT key, value FROM {s}.side
                 WHERE space = $1 AND ($2::BYTEA IS NULL OR ({s}.p(key) >= {s}.p($2) AND key > $2))
                 ORDER BY {s}.p(key), key LIMIT $3",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = c
            .query(&stmt, &[&space(space_), &after.map(str::as_bytes), &take])
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| Ok((id_col(r, 0)?, Bytes::from(col::<Vec<u8>>(r, 1)?))))
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
                 WHERE revision > 0 AND ($1::BYTEA IS NULL
                    OR ({s}.p(workspace) >= {s}.p($1) AND workspace > $1))
                 ORDER BY {s}.p(workspace), workspace LIMIT $2",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = c
            .query(&stmt, &[&after.map(str::as_bytes), &take])
            .await
            .map_err(backend)?;
        rows.iter().map(|r| id_col(r, 0)).collect()
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
                "SELECT revision, bytes FROM {s}.watch WHERE {s}.k(workspace) = {s}.k($1) AND revision > $2
                 ORDER BY revision LIMIT $3",
            ))
            .await
            .map_err(backend)?;
        let take = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows = c
            .query(&stmt, &[&ws.as_bytes(), &int(after)?, &take])
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
