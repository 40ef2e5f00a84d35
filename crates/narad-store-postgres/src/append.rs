//! One append: a transaction that locks the session's head row, reads
//! exactly what [`plan_batch`] declares, decides the batch there and writes it.

use std::collections::BTreeMap;

use narad_store::{
    plan_batch, Appended, Batch, Expect, Plan, Reads, Scope, ScopeKey, SideWrite, StoreError,
    StoredEvent, View, WatchWrite,
};

use crate::{backend, col, id_col, int, space, uint, PostgresStore};

/// The longest id a notice carries as it is (the payload's limit is 8,000
/// bytes); longer ones go by their index key, at most 2,112 hex digits.
const PLAIN_NOTICE_ID: usize = 4000;

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
    /// Queues the commit notice `kind` (`s` session, `w` workspace) for
    /// `id` at `n`, delivered on commit. A `NOTIFY` payload is text of at
    /// most 8,000 bytes, so an id that holds U+0000 or is long goes by its
    /// index key in hex, under the upper-case kind, and the listener looks
    /// the id up ([`crate::listen`]).
    async fn notify(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        channel: &str,
        kind: char,
        n: u64,
        id: &str,
    ) -> Result<(), StoreError> {
        if id.len() <= PLAIN_NOTICE_ID && !id.contains('\0') {
            let payload = format!("{kind}\t{n}\t{id}");
            tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
                .await
                .map_err(backend)?;
        } else {
            let head = format!("{}\t{n}\t", kind.to_ascii_uppercase());
            tx.execute(
                &self.sql("SELECT pg_notify($1, $2 || encode({s}.k($3), 'hex'))"),
                &[&channel, &head, &id.as_bytes()],
            )
            .await
            .map_err(backend)?;
        }
        Ok(())
    }

    pub(crate) async fn append_tx(
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
                         ON CONFLICT ({s}.k(session)) DO UPDATE SET head = {s}.heads.head RETURNING head",
                    ))
                    .await
                    .map_err(backend)?,
                    &[&sid.as_bytes()],
                )
                .await
                .map_err(backend)?;
            read.head = uint(col(&row, 0)?)?;
            let ids: Vec<&[u8]> = reads.events.iter().map(|id| id.as_bytes()).collect();
            for row in tx
                .query(
                    &tx.prepare_cached(&self.sql("SELECT event_id, seq, bytes FROM {s}.events WHERE {s}.k(session) = {s}.k($1)
                         AND {s}.k(event_id) = ANY(ARRAY(SELECT {s}.k(id) FROM unnest($2::BYTEA[]) AS id))")).await.map_err(backend)?,
                    &[&sid.as_bytes(), &ids],
                )
                .await
                .map_err(backend)?
            {
                read.events
                    .insert(id_col(&row, 0)?, (uint(col(&row, 1)?)?, col(&row, 2)?));
            }
            for &(tag, id) in &reads.scopes {
                let q = if tag == ScopeKey::Run {
                    "SELECT COALESCE(MAX(rseq), 0) FROM {s}.events WHERE {s}.k(session) = {s}.k($1) AND {s}.k(root) = {s}.k($2)"
                } else {
                    "SELECT COALESCE(MAX(wseq), 0) FROM {s}.events WHERE {s}.k(session) = {s}.k($1) AND {s}.k(wf) = {s}.k($2)"
                };
                let row = tx
                    .query_one(
                        &tx.prepare_cached(&self.sql(q)).await.map_err(backend)?,
                        &[&sid.as_bytes(), &id.as_bytes()],
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
                        .sql("SELECT value FROM {s}.side WHERE space = $1 AND {s}.k(key) = {s}.k($2) FOR UPDATE"),
                    &[&space(sp), &key.as_bytes()],
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
                &[&ws.as_bytes()],
            )
            .await
            .map_err(backend)?;
            let row = tx
                .query_one(
                    &tx.prepare_cached(&self.sql(
                        "SELECT revision FROM {s}.watch_heads WHERE {s}.k(workspace) = {s}.k($1) FOR UPDATE",
                    ))
                    .await
                    .map_err(backend)?,
                    &[&ws.as_bytes()],
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
                            "SELECT bytes FROM {s}.watch WHERE {s}.k(workspace) = {s}.k($1) AND {s}.k(event_id) = {s}.k($2)",
                        ),
                    )
                    .await
                    .map_err(backend)?,
                    &[&ws.as_bytes(), &event_id.as_bytes()],
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
                "DELETE FROM {s}.events WHERE {s}.k(session) = {s}.k($1)",
                "DELETE FROM {s}.heads WHERE {s}.k(session) = {s}.k($1)",
            ] {
                tx.execute(
                    &tx.prepare_cached(&self.sql(stmt)).await.map_err(backend)?,
                    &[&sid.as_bytes()],
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
                     SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BYTEA[], $4::BYTEA[],
                                              $5::BYTEA[], $6::BIGINT[], $7::BYTEA[], $8::BIGINT[])",
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
                cols.1.push(ev.event_id.as_bytes());
                cols.2.push(ev.bytes.as_ref());
                let (root, rseq) = match &ev.position.run {
                    Some((r, s)) => (Some(r.as_bytes()), Some(int(*s)?)),
                    None => (None, None),
                };
                let (wf, wseq) = match &ev.position.workflow {
                    Some((w, s)) => (Some(w.as_bytes()), Some(int(*s)?)),
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
                    &sid.as_bytes(),
                    &cols.0,
                    &cols.1,
                    &cols.2,
                    &cols.3,
                    &cols.4,
                    &cols.5,
                    &cols.6,
                ],
            )
            .await
            .map_err(backend)?;
        }
        for w in &batch.side {
            let (sp, key) = (space(w.space), w.key.as_bytes());
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
                                   ON CONFLICT (space, {s}.k(key)) DO UPDATE SET value = excluded.value")).await.map_err(backend)?,
                        &[&sp, &key, &v.as_ref()],
                    )
                    .await
                    .map_err(backend)?
                }
                (None, _) => {
                    tx.execute(&tx.prepare_cached(&self.sql("DELETE FROM {s}.side WHERE space = $1 AND {s}.k(key) = {s}.k($2)")).await.map_err(backend)?, &[&sp, &key])
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
                &[
                    &w.workspace_id.as_bytes(),
                    &rev,
                    &w.event.event_id.as_bytes(),
                    &w.event.bytes.as_ref(),
                ],
            )
            .await
            .map_err(backend)?;
            tx.execute(
                &tx.prepare_cached(&self.sql(
                    "UPDATE {s}.watch_heads SET revision = $2 WHERE {s}.k(workspace) = {s}.k($1)",
                ))
                .await
                .map_err(backend)?,
                &[&w.workspace_id.as_bytes(), &rev],
            )
            .await
            .map_err(backend)?;
            newest.insert(&w.workspace_id, w.event.revision);
        }
        let channel = format!("narad_{}", self.schema);
        if !fresh.is_empty() {
            tx.execute(
                &tx.prepare_cached(
                    &self.sql("UPDATE {s}.heads SET head = $2 WHERE {s}.k(session) = {s}.k($1)"),
                )
                .await
                .map_err(backend)?,
                &[&sid.as_bytes(), &int(appended.head)?],
            )
            .await
            .map_err(backend)?;
            self.notify(&tx, &channel, 's', appended.head, sid).await?;
        }
        for (ws, rev) in newest {
            self.notify(&tx, &channel, 'w', rev, ws).await?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(appended)
    }
}
