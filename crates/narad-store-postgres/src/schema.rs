//! The store's layout in its PostgreSQL schema: the forward migrations and
//! the step that applies them under an advisory lock.

use deadpool_postgres::Pool;
use narad_store::StoreError;

use crate::{backend, col, SCHEMA_VERSION};

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
pub(crate) fn valid_schema(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 48
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

pub(crate) async fn migrate(pool: &Pool, schema: &str) -> Result<(), StoreError> {
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
