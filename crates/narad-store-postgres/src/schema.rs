//! The store's layout in its PostgreSQL schema: the forward migrations and
//! the step that applies them under an advisory lock.

use deadpool_postgres::Pool;
use narad_store::StoreError;

use crate::{backend, col, SCHEMA_VERSION};

/// Forward migrations; `{s}` is the schema. Step `i` takes layout `i` to `i + 1`.
///
/// Layout 3 holds every id (session, event, run, workflow, side key,
/// workspace) as its UTF-8 bytes (`BYTEA`), not `TEXT`: a `TEXT` cannot hold
/// U+0000, which the protocol allows in an id, and sorts in the database's
/// collation, while every backend lists in byte order. Ids are indexed by
/// `{s}.k(id)`: the id itself up to 1,024 bytes, else its first 1,024 bytes
/// and its SHA-256, since a btree entry holds at most 2,704 bytes and an id
/// may be far longer. Lookups go through `{s}.k`. Listings are in byte
/// order: by `{s}.p(id)`, the first 1,024 bytes (indexed), then by the
/// whole id, which is the id's own byte order.
const MIGRATIONS: [&str; 3] = [
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
    "CREATE FUNCTION {s}.k(id BYTEA) RETURNS BYTEA LANGUAGE SQL IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT CASE WHEN length(id) <= 1024 THEN id
                          ELSE substring(id FROM 1 FOR 1024) || sha256(id) END $$;
     CREATE FUNCTION {s}.p(id BYTEA) RETURNS BYTEA LANGUAGE SQL IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT substring(id FROM 1 FOR 1024) $$;
     ALTER TABLE {s}.events DROP CONSTRAINT events_pkey,
        DROP CONSTRAINT events_session_event_id_key;
     DROP INDEX {s}.events_run;
     DROP INDEX {s}.events_wf;
     ALTER TABLE {s}.events ALTER COLUMN session TYPE BYTEA USING convert_to(session, 'UTF8'),
        ALTER COLUMN event_id TYPE BYTEA USING convert_to(event_id, 'UTF8'),
        ALTER COLUMN root TYPE BYTEA USING convert_to(root, 'UTF8'),
        ALTER COLUMN wf TYPE BYTEA USING convert_to(wf, 'UTF8');
     CREATE UNIQUE INDEX events_seq ON {s}.events ({s}.k(session), seq);
     CREATE UNIQUE INDEX events_id ON {s}.events ({s}.k(session), {s}.k(event_id));
     CREATE UNIQUE INDEX events_run ON {s}.events ({s}.k(session), {s}.k(root), rseq)
        WHERE root IS NOT NULL;
     CREATE UNIQUE INDEX events_wf ON {s}.events ({s}.k(session), {s}.k(wf), wseq)
        WHERE wf IS NOT NULL;
     ALTER TABLE {s}.heads DROP CONSTRAINT heads_pkey;
     ALTER TABLE {s}.heads ALTER COLUMN session TYPE BYTEA USING convert_to(session, 'UTF8');
     CREATE UNIQUE INDEX heads_key ON {s}.heads ({s}.k(session));
     CREATE INDEX heads_order ON {s}.heads ({s}.p(session));
     ALTER TABLE {s}.side DROP CONSTRAINT side_pkey;
     ALTER TABLE {s}.side ALTER COLUMN key TYPE BYTEA USING convert_to(key, 'UTF8');
     CREATE UNIQUE INDEX side_key ON {s}.side (space, {s}.k(key));
     CREATE INDEX side_order ON {s}.side (space, {s}.p(key));
     ALTER TABLE {s}.watch DROP CONSTRAINT watch_pkey,
        DROP CONSTRAINT watch_workspace_event_id_key;
     ALTER TABLE {s}.watch ALTER COLUMN workspace TYPE BYTEA USING convert_to(workspace, 'UTF8'),
        ALTER COLUMN event_id TYPE BYTEA USING convert_to(event_id, 'UTF8');
     CREATE UNIQUE INDEX watch_rev ON {s}.watch ({s}.k(workspace), revision);
     CREATE UNIQUE INDEX watch_id ON {s}.watch ({s}.k(workspace), {s}.k(event_id));
     ALTER TABLE {s}.watch_heads DROP CONSTRAINT watch_heads_pkey;
     ALTER TABLE {s}.watch_heads
        ALTER COLUMN workspace TYPE BYTEA USING convert_to(workspace, 'UTF8');
     CREATE UNIQUE INDEX watch_heads_key ON {s}.watch_heads ({s}.k(workspace));
     CREATE INDEX watch_heads_order ON {s}.watch_heads ({s}.p(workspace));",
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
