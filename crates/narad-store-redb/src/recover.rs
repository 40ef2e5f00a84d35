//! The store's handle on its redb file (writable, or read-only when the
//! file could be opened only for reading), and reopening that file after a
//! failed write.
//!
//! redb refuses every write after one failed with an I/O error (a full
//! disk, say) with "Previous I/O error occurred. Please close and re-open
//! the database", so without a reopen a long-running host stayed unable to
//! write after the disk had room again. The writer reopens the file after
//! such a failure; if that fails too (the disk is still full), the next
//! append tries again, and reads meanwhile report why.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use narad_store::StoreError;
use redb::{Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, TransactionError};

use crate::{guarded, rerr, RedbOptions};

/// The open file.
pub(crate) enum Db {
    Write(Database),
    Read(ReadOnlyDatabase),
}

impl Db {
    pub(crate) fn begin_read(&self) -> Result<ReadTransaction, TransactionError> {
        match self {
            Self::Write(db) => db.begin_read(),
            Self::Read(db) => db.begin_read(),
        }
    }

    /// The database to write; [`StoreError::ReadOnly`] for a read-only one.
    pub(crate) fn writable(&self) -> Result<&Database, StoreError> {
        match self {
            Self::Write(db) => Ok(db),
            Self::Read(_) => Err(StoreError::ReadOnly),
        }
    }
}

/// What the store's reads find.
enum State {
    Open(Arc<Db>),
    Closed,
    /// A reopen after a failed write failed; the next append tries again.
    Failed(StoreError),
}

/// The store's handle on the file, shared by readers and the writer.
pub(crate) struct Slot(RwLock<State>);

impl Slot {
    pub(crate) fn new(db: Arc<Db>) -> Self {
        Self(RwLock::new(State::Open(db)))
    }

    /// The open database, or why there is none.
    pub(crate) fn get(&self) -> Result<Arc<Db>, StoreError> {
        match &*self.0.read().map_err(|_| StoreError::Closed)? {
            State::Open(db) => Ok(Arc::clone(db)),
            State::Closed => Err(StoreError::Closed),
            State::Failed(e) => Err(e.clone()),
        }
    }

    /// Drops the store's handle: the file is released once in-flight
    /// reads finish.
    pub(crate) fn close(&self) {
        if let Ok(mut s) = self.0.write() {
            *s = State::Closed;
        }
    }
}

/// How long a reopen waits for in-flight reads to drop their handles.
const READS_DRAIN: Duration = Duration::from_secs(5);

/// The writer's handle: the database it writes, and how to reopen it.
pub(crate) struct Handle {
    db: Option<Arc<Db>>,
    slot: Arc<Slot>,
    path: Arc<Path>,
    options: RedbOptions,
}

impl Handle {
    pub(crate) fn new(db: Arc<Db>, slot: Arc<Slot>, path: Arc<Path>, options: RedbOptions) -> Self {
        Self {
            db: Some(db),
            slot,
            path,
            options,
        }
    }

    /// The file, named in damage reports.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The database to write, reopening the file first if the last reopen
    /// failed.
    pub(crate) fn db(&mut self) -> Result<Arc<Db>, StoreError> {
        match &self.db {
            Some(db) => Ok(Arc::clone(db)),
            None => self.reopen(),
        }
    }

    /// After a failed write: reopens the file if redb now refuses every
    /// write (an I/O error poisoned the handle). `db` is the writer's
    /// clone, dropped first.
    pub(crate) fn after_failure(&mut self, db: Arc<Db>) {
        let poisoned = db.writable().is_ok_and(|db| {
            matches!(
                db.try_begin_write(),
                Err(TransactionError::Storage(redb::StorageError::PreviousIo))
            )
        });
        drop(db);
        if poisoned {
            tracing::warn!(
                path = %self.path.display(),
                "a write to the redb file failed; reopening it"
            );
            let _ = self.reopen();
        }
    }

    /// Drops every handle on the file (waiting for in-flight reads), then
    /// opens it again. New reads wait meanwhile; on failure they get the
    /// reason until a later append reopens it.
    fn reopen(&mut self) -> Result<Arc<Db>, StoreError> {
        let mut state = self.slot.0.write().map_err(|_| StoreError::Closed)?;
        if matches!(*state, State::Closed) {
            return Err(StoreError::Closed);
        }
        let old = match std::mem::replace(&mut *state, State::Closed) {
            State::Open(db) => Some(db),
            _ => None,
        };
        let mut old = self.db.take().or(old);
        let start = std::time::Instant::now();
        while let Some(db) = old {
            // The slot's handle is gone; only in-flight reads hold others.
            match Arc::try_unwrap(db) {
                Ok(db) => {
                    drop(db);
                    old = None;
                }
                Err(_) if start.elapsed() > READS_DRAIN => {
                    let e = StoreError::Backend(
                        "a write failed and the file could not be reopened: reads still hold it"
                            .into(),
                    );
                    *state = State::Failed(e.clone());
                    return Err(e);
                }
                Err(db) => {
                    old = Some(db);
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        let opened = guarded(&self.path, || {
            self.options
                .builder()
                .create(&self.path)
                .map(|db| Arc::new(Db::Write(db)))
                .map_err(rerr)
        });
        match opened {
            Ok(db) => {
                *state = State::Open(Arc::clone(&db));
                self.db = Some(Arc::clone(&db));
                Ok(db)
            }
            Err(e) => {
                *state = State::Failed(e.clone());
                Err(e)
            }
        }
    }
}
