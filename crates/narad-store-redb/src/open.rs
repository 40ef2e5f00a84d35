//! Opening, checking and compacting a store file.

use std::path::Path;
use std::sync::Arc;

use narad_store::group::GroupCommit;
use narad_store::StoreError;
use redb::{Database, ReadableDatabase, ReadableTable, TableHandle};

use crate::{
    backend, guarded, recover, rerr, RedbOptions, RedbStore, Writer, META, MIGRATIONS,
    SCHEMA_VERSION,
};

/// The page cache of [`RedbStore::check_integrity`].
const CHECK_CACHE_BYTES: usize = 16 << 20;

impl RedbStore {
    /// Opens (or creates) the store file at `path`. A file written by a newer
    /// layout is refused with [`StoreError::NewerSchema`].
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, RedbOptions::default()).await
    }

    /// [`RedbStore::open`] with `options` (e.g. a smaller page cache).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), narad_store::StoreError> {
    /// use narad_store_redb::{RedbOptions, RedbStore};
    /// let store = RedbStore::open_with("narad.redb", RedbOptions::default().cache_bytes(64 << 20)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: RedbOptions,
    ) -> Result<Self, StoreError> {
        Self::open_mode(path.as_ref(), true, options).await
    }

    /// Opens the store file at `path` only if it exists: a missing file is
    /// [`StoreError::NotFound`] naming the path, and nothing is created.
    /// For commands that only read.
    pub async fn open_existing(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_existing_with(path, RedbOptions::default()).await
    }

    /// [`RedbStore::open_existing`] with `options`.
    pub async fn open_existing_with(
        path: impl AsRef<Path>,
        options: RedbOptions,
    ) -> Result<Self, StoreError> {
        Self::open_mode(path.as_ref(), false, options).await
    }

    async fn open_mode(
        path: &Path,
        create: bool,
        options: RedbOptions,
    ) -> Result<Self, StoreError> {
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || {
            guarded(&path, || Self::open_blocking(&path, create, options))
        })
        .await
        .map_err(backend)?
    }

    /// Runs redb's own integrity check over the file at `path` (which no
    /// store may hold open): `Ok(true)` when it passed, `Ok(false)` when it
    /// failed and redb repaired the file, [`StoreError::Corrupt`] when it
    /// could not be repaired, [`StoreError::NotFound`] when there is no file.
    /// It reads the file through a 16 MiB page cache, whatever its size.
    pub async fn check_integrity(path: impl AsRef<Path>) -> Result<bool, StoreError> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            guarded(&path, || {
                if !path.exists() {
                    return Err(StoreError::NotFound {
                        path: path.display().to_string(),
                    });
                }
                // The check reads each page once: redb's default cache
                // would keep the whole file in memory.
                let mut db = RedbOptions::default()
                    .cache_bytes(CHECK_CACHE_BYTES)
                    .builder()
                    .set_check_integrity_on_open(true)
                    .open(&path)
                    .map_err(rerr)?;
                db.check_integrity().map_err(rerr)
            })
        })
        .await
        .map_err(backend)?
    }

    /// Compacts the file at `path` with redb's `Database::compact`, giving
    /// the pages of deleted records back to the file system. It needs the
    /// file to itself: close every store open on it first.
    pub async fn compact(path: impl AsRef<Path>) -> Result<(), StoreError> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            guarded(&path, || {
                if !path.exists() {
                    return Err(StoreError::NotFound {
                        path: path.display().to_string(),
                    });
                }
                let mut db = Database::open(&path).map_err(rerr)?;
                // `compact` reports whether it moved anything; repeat
                // until it has nothing left to move.
                while db.compact().map_err(backend)? {}
                Ok(())
            })
            .map_err(|e| e.at_path(&path))
        })
        .await
        .map_err(backend)?
    }

    fn open_blocking(path: &Path, create: bool, options: RedbOptions) -> Result<Self, StoreError> {
        let db = if create {
            options.builder().create(path)
        } else if path.exists() {
            empty_file_refused(path)?;
            options.builder().open(path)
        } else {
            return Err(StoreError::NotFound {
                path: path.display().to_string(),
            });
        };
        let db = db.map_err(rerr)?;
        // Before the first write transaction, which would add this
        // layout's tables to another application's database.
        holds_a_store(&db.begin_read().map_err(rerr)?, path, create)?;
        let tx = db.begin_write().map_err(rerr)?;
        {
            let mut meta = tx.open_table(META).map_err(rerr)?;
            let found = meta
                .get("schema_version")
                .map_err(rerr)?
                .map_or(0, |v| v.value());
            if found > SCHEMA_VERSION {
                return Err(StoreError::NewerSchema {
                    found: u32::try_from(found).unwrap_or(u32::MAX),
                    supported: SCHEMA_VERSION as u32,
                });
            }
            for step in MIGRATIONS.iter().skip(found as usize) {
                step(&tx).map_err(rerr)?;
            }
            if found != SCHEMA_VERSION {
                meta.insert("schema_version", SCHEMA_VERSION)
                    .map_err(rerr)?;
            }
        }
        tx.commit().map_err(rerr)?;
        let db = Arc::new(recover::Db::Write(db));
        let slot = Arc::new(recover::Slot::new(Arc::clone(&db)));
        let path: Arc<Path> = Arc::from(path);
        let group = GroupCommit::start(
            "narad-redb",
            Writer {
                handle: recover::Handle::new(db, Arc::clone(&slot), Arc::clone(&path), options),
            },
        )?;
        Ok(Self {
            db: slot,
            group: Arc::new(group),
            path,
        })
    }

    /// Opens an existing store for reading only, as a file the process may
    /// not write (a read-only mount, a file of another user, a backup) must
    /// be opened: every read is served, and every append is refused with
    /// [`StoreError::ReadOnly`]. A file whose last writer did not close it
    /// cleanly needs a writable open to be repaired first, and an older
    /// layout one to be migrated ([`StoreError::OlderSchema`]).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), narad_store::StoreError> {
    /// use narad_store::Store;
    /// let store = narad_store_redb::RedbStore::open_read_only("/mnt/backup/narad.redb").await?;
    /// let sessions = store.list_sessions(None, 100).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_read_only_with(path, RedbOptions::default()).await
    }

    /// [`RedbStore::open_read_only`] with `options`.
    pub async fn open_read_only_with(
        path: impl AsRef<Path>,
        options: RedbOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            guarded(&path, || Self::open_read_only_blocking(&path, options))
        })
        .await
        .map_err(backend)?
    }

    fn open_read_only_blocking(path: &Path, options: RedbOptions) -> Result<Self, StoreError> {
        if !path.exists() {
            return Err(StoreError::NotFound {
                path: path.display().to_string(),
            });
        }
        empty_file_refused(path)?;
        let db = options.builder().open_read_only(path).map_err(rerr)?;
        let tx = db.begin_read().map_err(rerr)?;
        holds_a_store(&tx, path, false)?;
        let found = match tx.open_table(META) {
            Ok(meta) => meta
                .get("schema_version")
                .map_err(rerr)?
                .map_or(0, |v| v.value()),
            Err(redb::TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(rerr(e)),
        };
        drop(tx);
        narad_store::read_only_layout(found, SCHEMA_VERSION as u32)?;
        let slot = Arc::new(recover::Slot::new(Arc::new(recover::Db::Read(db))));
        let group = GroupCommit::start("narad-redb-read-only", narad_store::group::ReadOnlyWriter)?;
        Ok(Self {
            db: slot,
            group: Arc::new(group),
            path: Arc::from(path),
        })
    }
}

fn not_a_store(path: &Path) -> StoreError {
    StoreError::NotAStore {
        path: path.display().to_string(),
    }
}

/// An empty file is no store to read (redb's own open would answer with
/// its message, not the path).
fn empty_file_refused(path: &Path) -> Result<(), StoreError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() == 0 => Err(not_a_store(path)),
        _ => Ok(()),
    }
}

/// Refuses, unwritten, a file that holds another application's database,
/// or none where an existing store was asked for (`create` false): the
/// rule is [`narad_store::holds_a_store`], from the file's tables.
fn holds_a_store(tx: &redb::ReadTransaction, path: &Path, create: bool) -> Result<(), StoreError> {
    let names: Vec<String> = tx
        .list_tables()
        .map_err(rerr)?
        .map(|t| t.name().to_owned())
        .collect();
    let meta = names.iter().any(|n| n == META.name());
    let tables = !names.is_empty() || tx.list_multimap_tables().map_err(rerr)?.next().is_some();
    narad_store::holds_a_store(meta, tables, create, &path.display().to_string())
}
