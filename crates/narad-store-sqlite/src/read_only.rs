//! Opening a store for reading only: a file the process may not write (a
//! read-only mount, a file of another user, a backup) is read, and every
//! append is refused with [`StoreError::ReadOnly`].

use std::path::Path;
use std::sync::{Arc, Mutex};

use narad_store::group::{GroupCommit, ReadOnlyWriter};
use narad_store::StoreError;
use rusqlite::{Connection, OpenFlags};

use crate::{
    backend, holds_a_store, schema_version, sql, SqliteOptions, SqliteStore, SCHEMA_VERSION,
};

/// `path` as an SQLite URI filename with `query` (the characters a URI
/// gives meaning to escaped).
fn uri(path: &Path, query: &str) -> Result<String, StoreError> {
    let path = path
        .to_str()
        .ok_or_else(|| StoreError::Backend("the path is not UTF-8".into()))?;
    let mut out = String::from("file:");
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out.push('?');
    out.push_str(query);
    Ok(out)
}

/// A read-only connection to the existing file at `path`. A WAL database
/// in a directory this process cannot write has no `-shm` to share and
/// fails its first read; nobody can write it there either, so it is then
/// read as immutable.
pub(crate) fn open_ro(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    if !path.exists() {
        return Err(StoreError::NotFound {
            path: path.display().to_string(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open = |query: &str| -> Result<Connection, StoreError> {
        let conn = Connection::open_with_flags(uri(path, query)?, flags).map_err(sql)?;
        conn.busy_timeout(options.busy_timeout).map_err(sql)?;
        Ok(conn)
    };
    let readable = |conn: &Connection| {
        conn.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0))
            .map_err(sql)
    };
    let conn = open("mode=ro")?;
    if readable(&conn).is_ok() {
        return Ok(conn);
    }
    let conn = open("mode=ro&immutable=1")?;
    readable(&conn)?;
    Ok(conn)
}

/// A read-only connection to a store of this build's layout.
fn connect(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let conn = open_ro(path, options)?;
    holds_a_store(&conn, path, false)?;
    let found = u64::try_from(schema_version(&conn).map_err(sql)?).unwrap_or(u64::MAX);
    narad_store::read_only_layout(found, SCHEMA_VERSION as u32)?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens an existing store for reading only: every read is served, and
    /// every append is refused with [`StoreError::ReadOnly`]. An older
    /// layout, which only a writable open migrates, is
    /// [`StoreError::OlderSchema`].
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), narad_store::StoreError> {
    /// use narad_store::Store;
    /// let store = narad_store_sqlite::SqliteStore::open_read_only("/mnt/backup/narad.db").await?;
    /// let sessions = store.list_sessions(None, 100).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open_read_only(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || {
            let open = || -> Result<Self, StoreError> {
                let conn = connect(&path, &SqliteOptions::default())?;
                let group = GroupCommit::start("narad-sqlite-read-only", ReadOnlyWriter)?;
                Ok(Self {
                    conn: Arc::new(Mutex::new(Some(conn))),
                    group: Arc::new(group),
                    path: Arc::from(path.as_path()),
                })
            };
            open().map_err(|e| e.at_path(&path))
        })
        .await
        .map_err(backend)?
    }
}

#[cfg(test)]
mod tests {
    use super::uri;
    use std::path::Path;

    #[test]
    fn a_path_becomes_a_uri_with_its_special_characters_escaped() {
        assert_eq!(
            uri(Path::new("/a b/50%?#.db"), "mode=ro").unwrap(),
            "file:/a b/50%25%3f%23.db?mode=ro"
        );
    }
}
