//! # narad-stores
//!
//! Opens any store backend from a URL, so tools and examples choose the
//! backend at run time while the code above stays the same:
//!
//! | URL | backend |
//! |---|---|
//! | `redb:PATH` | [`narad_store_redb::RedbStore`] (the embedded default) |
//! | `sqlite:PATH` | `narad_store_sqlite::SqliteStore` (feature `sqlite`) |
//! | `postgres://…[?schema=NAME]` | `narad_store_postgres::PostgresStore` (feature `postgres`; schema `narad` by default) |
//!
//! A bare path (no scheme) is refused: the backend is never guessed.
//! Failures to open are an [`OpenError`] that names the path.
//!
//! Each backend is a cargo feature: `redb` (default), `sqlite` and
//! `postgres`. A redb-only embedder compiles neither rusqlite nor the
//! PostgreSQL client stack; a URL naming a backend left out is refused with
//! [`StoreError::Backend`] saying which feature to enable.
//!
//! ```no_run
//! # async fn demo() -> Result<(), narad_store::StoreError> {
//! use narad_store::Store;
//! let store = narad_stores::open("sqlite:narad.sqlite").await?;
//! println!("{} sessions", store.list_sessions(None, usize::MAX).await?.len());
//! # Ok(()) }
//! ```

use async_trait::async_trait;
use bytes::Bytes;
use narad_store::{
    Appended, Batch, HistoryQuery, Page, SideSpace, Store, StoreError, StoredEvent, Subscription,
    WatchPage,
};
#[cfg(feature = "postgres")]
use narad_store_postgres::PostgresStore;
#[cfg(feature = "redb")]
use narad_store_redb::RedbStore;
#[cfg(feature = "sqlite")]
use narad_store_sqlite::SqliteStore;
#[cfg(any(feature = "redb", feature = "sqlite"))]
use std::path::Path;

mod open_error;
mod reading;
#[cfg(any(feature = "redb", feature = "sqlite"))]
use open_error::classify;
pub use open_error::{OpenError, SCHEMES};
pub use reading::{open_for_reading_with, open_read_only_with};

#[cfg(not(any(feature = "redb", feature = "sqlite", feature = "postgres")))]
compile_error!("narad-stores needs at least one backend feature: redb, sqlite or postgres");

/// Any backend, chosen by URL.
#[derive(Debug, Clone)]
pub enum AnyStore {
    /// redb.
    #[cfg(feature = "redb")]
    Redb(RedbStore),
    /// SQLite.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteStore),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(PostgresStore),
}

/// The refusal for a URL whose backend this build leaves out.
#[allow(dead_code)] // unused when every backend feature is on
fn not_compiled(feature: &str) -> StoreError {
    StoreError::Backend(format!(
        "the {feature} backend is not compiled in (enable the narad-stores feature `{feature}`)"
    ))
}

/// What a store URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `redb:PATH`
    Redb(String),
    /// `sqlite:PATH`
    Sqlite(String),
    /// `postgres://…` (connection URL, schema)
    Postgres(String, String),
}

impl StoreUrl {
    /// Parses `redb:PATH`, `sqlite:PATH` or `postgres://…`.
    ///
    /// ```
    /// use narad_stores::StoreUrl;
    /// assert_eq!(StoreUrl::parse("sqlite:a.db").unwrap(), StoreUrl::Sqlite("a.db".into()));
    /// assert!(StoreUrl::parse("x.sqlite").is_err()); // no scheme: refused
    /// assert!(StoreUrl::parse("sqlite::memory:").is_err());
    /// assert_eq!(
    ///     StoreUrl::parse("postgres://h/db?schema=agents").unwrap(),
    ///     StoreUrl::Postgres("postgres://h/db".into(), "agents".into())
    /// );
    /// assert!(StoreUrl::parse("mysql://h/db").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<Self, OpenError> {
        let bad = |why: &'static str| OpenError::InvalidUrl {
            url: url.to_owned(),
            why,
        };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (base, query) = url.split_once('?').unwrap_or((url, ""));
            let mut schema = "narad".to_owned();
            let mut rest = Vec::new();
            for kv in query.split('&').filter(|s| !s.is_empty()) {
                match kv.split_once('=') {
                    Some(("schema", v)) => schema = v.to_owned(),
                    _ => rest.push(kv),
                }
            }
            let conn = if rest.is_empty() {
                base.to_owned()
            } else {
                format!("{base}?{}", rest.join("&"))
            };
            return Ok(Self::Postgres(conn, schema));
        }
        match url.split_once(':') {
            Some(("sqlite", p)) if p == ":memory:" || p.starts_with(":memory") => Err(bad(
                "an in-memory SQLite store is not supported (each pooled connection \
                 would see its own empty database); use sqlite:PATH",
            )),
            Some(("redb", p)) if !p.is_empty() => Ok(Self::Redb(p.to_owned())),
            Some(("sqlite", p)) if !p.is_empty() => Ok(Self::Sqlite(p.to_owned())),
            Some(("redb" | "sqlite", _)) => Err(bad("the path is empty")),
            Some((scheme, _)) if !scheme.contains('/') && scheme.len() > 1 => {
                Err(bad("unsupported scheme"))
            }
            _ if url.is_empty() => Err(bad("empty")),
            _ => Err(bad("no scheme (a bare path is not opened as any backend)")),
        }
    }
}

impl StoreUrl {
    /// The backend's name, which is also its cargo feature.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Redb(_) => "redb",
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(..) => "postgres",
        }
    }

    /// Whether two URLs name one store: one existing file however either
    /// spells its path (`a.db`, `./a.db`, an absolute path, a link), or
    /// one PostgreSQL connection URL and schema. A copy from a store onto
    /// itself would copy nothing and then verify the store against
    /// itself, so `narad migrate` refuses it.
    ///
    /// ```
    /// use narad_stores::StoreUrl;
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = dir.path().join("a.db");
    /// std::fs::write(&file, b"").unwrap();
    /// let a = StoreUrl::parse(&format!("sqlite:{}", file.display())).unwrap();
    /// let b = StoreUrl::parse(&format!("sqlite:{}/./a.db", dir.path().display())).unwrap();
    /// assert!(a.same_store(&b));
    /// let c = StoreUrl::parse(&format!("sqlite:{}/b.db", dir.path().display())).unwrap();
    /// assert!(!a.same_store(&c)); // b.db does not exist: not the same store
    /// ```
    pub fn same_store(&self, other: &StoreUrl) -> bool {
        match (self, other) {
            (Self::Postgres(a, s), Self::Postgres(b, t)) => a == b && s == t,
            (Self::Redb(a) | Self::Sqlite(a), Self::Redb(b) | Self::Sqlite(b)) => same_file(a, b),
            _ => false,
        }
    }
}

/// Whether two paths name one existing file.
fn same_file(a: &str, b: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// Opens (or creates) the store a URL names. For commands that write.
///
/// ```
/// # async fn demo() {
/// let err = narad_stores::open("narad.redb").await.unwrap_err(); // no scheme
/// assert_eq!(err.code(), "invalid_url");
/// assert!(err.to_string().contains("sqlite:PATH"));
/// # }
/// ```
pub async fn open(url: &str) -> Result<AnyStore, OpenError> {
    open_with(url, &OpenOptions::default()).await
}

/// How [`open_with`] and [`open_existing_with`] open a store, beyond
/// what its URL says. Options of a backend the URL does not name are
/// ignored, so one set serves any URL.
///
/// ```
/// let reader = narad_stores::OpenOptions::default().redb_cache_bytes(8 << 20);
/// assert_eq!(reader.redb_cache(), Some(8 << 20));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    redb_cache_bytes: Option<usize>,
}

impl OpenOptions {
    /// Caps a redb store's page cache at `bytes` (redb's default is a
    /// ceiling of 1 GiB, which a one-shot reader of a large file fills
    /// with every page it reads).
    #[must_use]
    pub fn redb_cache_bytes(mut self, bytes: usize) -> Self {
        self.redb_cache_bytes = Some(bytes);
        self
    }

    /// The redb page cache cap, when one is set.
    pub fn redb_cache(&self) -> Option<usize> {
        self.redb_cache_bytes
    }

    #[cfg(feature = "redb")]
    fn redb(&self) -> narad_store_redb::RedbOptions {
        let d = narad_store_redb::RedbOptions::default();
        self.redb_cache_bytes.map_or(d, |b| d.cache_bytes(b))
    }
}

/// [`open`] with `options`.
#[allow(unused_variables)] // `options` holds only redb's when redb is left out
pub async fn open_with(url: &str, options: &OpenOptions) -> Result<AnyStore, OpenError> {
    Ok(match StoreUrl::parse(url)? {
        #[cfg(feature = "redb")]
        StoreUrl::Redb(p) => AnyStore::Redb(
            RedbStore::open_with(&p, options.redb())
                .await
                .map_err(|e| classify(Path::new(&p), "redb", e))?,
        ),
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(p) => AnyStore::Sqlite(
            SqliteStore::open(&p)
                .await
                .map_err(|e| classify(Path::new(&p), "sqlite", e))?,
        ),
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url, schema) => AnyStore::Postgres(
            PostgresStore::open(&url, &schema)
                .await
                .map_err(OpenError::Store)?,
        ),
        #[allow(unreachable_patterns)]
        other => return Err(OpenError::Store(not_compiled(other.backend()))),
    })
}

/// Opens the store a URL names only if it exists: a missing file (or a
/// PostgreSQL schema without a store) is [`StoreError::NotFound`] naming
/// it, and nothing is created. For commands that only read, so a typo'd
/// path fails instead of reading an empty new store.
///
/// ```no_run
/// # async fn demo() {
/// let err = narad_stores::open_existing("sqlite:/no/such.sqlite").await.unwrap_err();
/// assert_eq!(err.code(), "not_found");
/// # }
/// ```
pub async fn open_existing(url: &str) -> Result<AnyStore, OpenError> {
    open_existing_with(url, &OpenOptions::default()).await
}

/// [`open_existing`] with `options`.
///
/// ```no_run
/// # async fn demo() -> Result<(), narad_stores::OpenError> {
/// let small = narad_stores::OpenOptions::default().redb_cache_bytes(8 << 20);
/// let store = narad_stores::open_existing_with("redb:narad.redb", &small).await?;
/// # Ok(()) }
/// ```
#[allow(unused_variables)] // `options` holds only redb's when redb is left out
pub async fn open_existing_with(url: &str, options: &OpenOptions) -> Result<AnyStore, OpenError> {
    Ok(match StoreUrl::parse(url)? {
        #[cfg(feature = "redb")]
        StoreUrl::Redb(p) => AnyStore::Redb(
            RedbStore::open_existing_with(&p, options.redb())
                .await
                .map_err(|e| classify(Path::new(&p), "redb", e))?,
        ),
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(p) => AnyStore::Sqlite(
            SqliteStore::open_existing(&p)
                .await
                .map_err(|e| classify(Path::new(&p), "sqlite", e))?,
        ),
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url, schema) => {
            match PostgresStore::open_existing(&url, &schema).await {
                Ok(s) => AnyStore::Postgres(s),
                Err(StoreError::NotFound { path }) => {
                    return Err(OpenError::NotFound { path: path.into() })
                }
                Err(e) => return Err(OpenError::Store(e)),
            }
        }
        #[allow(unreachable_patterns)]
        other => return Err(OpenError::Store(not_compiled(other.backend()))),
    })
}

/// Runs the backend's own integrity check over the store a URL names,
/// which must not be open in this process: redb's `check_integrity`, or
/// SQLite's `PRAGMA quick_check`. `Some(true)` when it passed,
/// `Some(false)` when it found damage that the backend repaired (redb),
/// [`StoreError::Corrupt`] when the damage remains, `None` when the
/// backend has no such check (PostgreSQL checks its own pages).
pub async fn check_integrity(url: &str) -> Result<Option<bool>, StoreError> {
    Ok(match StoreUrl::parse(url)? {
        #[cfg(feature = "redb")]
        StoreUrl::Redb(p) => Some(RedbStore::check_integrity(p).await?),
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(p) => Some(SqliteStore::check_integrity(p).await?),
        StoreUrl::Postgres(..) => None,
        #[allow(unreachable_patterns)]
        other => return Err(not_compiled(other.backend())),
    })
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            #[cfg(feature = "redb")]
            AnyStore::Redb($s) => $e,
            #[cfg(feature = "sqlite")]
            AnyStore::Sqlite($s) => $e,
            #[cfg(feature = "postgres")]
            AnyStore::Postgres($s) => $e,
        }
    };
}

#[async_trait]
impl Store for AnyStore {
    async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        each!(self, s => s.append(batch).await)
    }
    async fn head(&self, session_id: &str) -> Result<u64, StoreError> {
        each!(self, s => s.head(session_id).await)
    }
    async fn read_session(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        each!(self, s => s.read_session(session_id, after, limit).await)
    }
    async fn find_events(
        &self,
        session_id: &str,
        event_ids: &[&str],
    ) -> Result<Vec<StoredEvent>, StoreError> {
        each!(self, s => s.find_events(session_id, event_ids).await)
    }
    async fn read_run(
        &self,
        session_id: &str,
        root: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        each!(self, s => s.read_run(session_id, root, after, limit).await)
    }
    async fn read_workflow(
        &self,
        session_id: &str,
        wf: &str,
        after: u64,
        limit: usize,
    ) -> Result<Page, StoreError> {
        each!(self, s => s.read_workflow(session_id, wf, after, limit).await)
    }
    async fn list_sessions(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        each!(self, s => s.list_sessions(after, limit).await)
    }
    async fn side(&self, space: SideSpace, key: &str) -> Result<Option<Bytes>, StoreError> {
        each!(self, s => s.side(space, key).await)
    }
    async fn list_side(
        &self,
        space: SideSpace,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, StoreError> {
        each!(self, s => s.list_side(space, after, limit).await)
    }
    async fn list_workspaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        each!(self, s => s.list_workspaces(after, limit).await)
    }
    async fn read_watch(
        &self,
        ws: &str,
        after: u64,
        limit: usize,
    ) -> Result<WatchPage, StoreError> {
        each!(self, s => s.read_watch(ws, after, limit).await)
    }
    async fn read_history(&self, session_id: &str, q: &HistoryQuery) -> Result<Page, StoreError> {
        each!(self, s => s.read_history(session_id, q).await)
    }
    fn subscribe(&self) -> Subscription {
        each!(self, s => s.subscribe())
    }
    async fn close(&self) -> Result<(), StoreError> {
        each!(self, s => s.close().await)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// Run per feature set (`.ci/run` does): every backend left out of the
    /// build refuses its URL, naming the feature to enable, and creates
    /// nothing.
    #[tokio::test]
    async fn a_backend_left_out_is_refused_naming_its_feature() {
        let dir = tempfile::tempdir().unwrap();
        let redb = format!("redb:{}", dir.path().join("x.redb").display());
        let sqlite = format!("sqlite:{}", dir.path().join("x.sqlite").display());
        let cases = [
            ("redb", redb, cfg!(feature = "redb")),
            ("sqlite", sqlite, cfg!(feature = "sqlite")),
            (
                "postgres",
                "postgres://127.0.0.1:1/db".to_owned(),
                cfg!(feature = "postgres"),
            ),
        ];
        for (feature, url, compiled) in cases {
            if compiled {
                continue;
            }
            let err = crate::open(&url).await.unwrap_err();
            assert_eq!(err.code(), "backend", "{url}");
            assert!(err.to_string().contains(&format!("`{feature}`")), "{err}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
