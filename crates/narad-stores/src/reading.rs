//! Opening a store for commands that only read: writable when the file
//! allows it (so redb repairs a file its last writer left unclean), else
//! read-only, so a store on a read-only mount, a file of another user or a
//! backup can still be listed, shown, exported, verified and migrated from.

#[cfg(any(feature = "redb", feature = "sqlite"))]
use crate::{classify, Path};
use crate::{open_existing_with, AnyStore, OpenError, OpenOptions, StoreUrl};
#[cfg(feature = "redb")]
use narad_store_redb::RedbStore;
#[cfg(feature = "sqlite")]
use narad_store_sqlite::SqliteStore;

/// Opens an existing store for reading only: reads are served and every
/// append is refused with [`narad_store::StoreError::ReadOnly`]. A
/// PostgreSQL store opens as [`crate::open_existing`] does (its server
/// decides who may write).
///
/// ```no_run
/// # async fn demo() -> Result<(), narad_stores::OpenError> {
/// use narad_store::Store;
/// let options = narad_stores::OpenOptions::default();
/// let store = narad_stores::open_read_only_with("redb:/mnt/backup/narad.redb", &options).await?;
/// let first = store.list_sessions(None, 10).await;
/// # Ok(()) }
/// ```
#[allow(unused_variables)] // `options` holds only redb's when redb is left out
pub async fn open_read_only_with(url: &str, options: &OpenOptions) -> Result<AnyStore, OpenError> {
    Ok(match StoreUrl::parse(url)? {
        #[cfg(feature = "redb")]
        StoreUrl::Redb(p) => AnyStore::Redb(
            RedbStore::open_read_only_with(&p, options.redb())
                .await
                .map_err(|e| classify(Path::new(&p), "redb", e))?,
        ),
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(p) => AnyStore::Sqlite(
            SqliteStore::open_read_only(&p)
                .await
                .map_err(|e| classify(Path::new(&p), "sqlite", e))?,
        ),
        _ => return open_existing_with(url, options).await,
    })
}

/// Opens an existing store for a command that only reads: as
/// [`open_existing_with`] does, and if that fails, read-only
/// ([`open_read_only_with`]). When neither opens it, the writable open's
/// error is the answer (the read-only open's would hide why, e.g. a lock).
///
/// ```no_run
/// # async fn demo() -> Result<(), narad_stores::OpenError> {
/// let options = narad_stores::OpenOptions::default();
/// let store = narad_stores::open_for_reading_with("sqlite:narad.db", &options).await?;
/// # Ok(()) }
/// ```
pub async fn open_for_reading_with(
    url: &str,
    options: &OpenOptions,
) -> Result<AnyStore, OpenError> {
    let first = match open_existing_with(url, options).await {
        Ok(store) => return Ok(store),
        Err(
            e @ (OpenError::InvalidUrl { .. }
            | OpenError::NotFound { .. }
            | OpenError::Locked { .. }),
        ) => return Err(e),
        Err(e) => e,
    };
    match StoreUrl::parse(url)? {
        StoreUrl::Postgres(..) => Err(first),
        _ => open_read_only_with(url, options).await.map_err(|_| first),
    }
}
