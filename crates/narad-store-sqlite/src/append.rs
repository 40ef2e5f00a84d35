//! The write path: the writer thread's group commit, and one batch
//! planned by [`plan_batch`] and written inside its transaction. Every
//! statement is prepared once per connection (`prepare_cached`).

use narad_store::group::GroupWriter;
use narad_store::SideWrite;
use narad_store::{
    plan_batch, Appended, Batch, Plan, Scope, StoreError, StoredEvent, View, WatchWrite,
};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::{head_of, int, side_of, space, sql, uint};

/// The write path, owned by the writer thread.
pub(crate) struct Writer {
    pub(crate) conn: Connection,
}

impl GroupWriter for Writer {
    fn commit_group(
        &mut self,
        batches: &[Batch],
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        // IMMEDIATE takes the write lock up front: another process's writer
        // waits (busy timeout) instead of failing at commit.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let mut outcomes = Vec::with_capacity(batches.len());
        for batch in batches {
            outcomes.push(apply(&tx, batch)?);
        }
        tx.commit().map_err(sql)?;
        Ok(outcomes)
    }
}

/// Reads for [`plan_batch`] inside the write transaction.
struct TxView<'a, 'c>(&'a rusqlite::Transaction<'c>);

impl View for TxView<'_, '_> {
    fn head(&mut self, sid: &str) -> Result<u64, StoreError> {
        head_of(self.0, sid)
    }

    fn event(&mut self, sid: &str, ev: &StoredEvent) -> Result<Option<(u64, bool)>, StoreError> {
        let stored: Option<(i64, Vec<u8>)> = self
            .0
            .prepare_cached("SELECT seq, bytes FROM events WHERE session = ?1 AND event_id = ?2")
            .map_err(sql)?
            .query_row(params![sid, ev.event_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(sql)?;
        stored
            .map(|(seq, bytes)| Ok((uint(seq)?, bytes == ev.bytes.as_ref())))
            .transpose()
    }

    fn scope_head(&mut self, sid: &str, scope: Scope, id: &str) -> Result<u64, StoreError> {
        match scope {
            Scope::Run => scope_head(self.0, "root", "rseq", sid, id),
            Scope::Workflow => scope_head(self.0, "wf", "wseq", sid, id),
        }
    }

    fn side(&mut self, w: &SideWrite) -> Result<Option<Vec<u8>>, StoreError> {
        side_of(self.0, w.space, &w.key)
    }

    fn watch(&mut self, w: &WatchWrite) -> Result<Option<bool>, StoreError> {
        let stored: Option<Vec<u8>> = self
            .0
            .prepare_cached("SELECT bytes FROM watch WHERE workspace = ?1 AND event_id = ?2")
            .map_err(sql)?
            .query_row(params![w.workspace_id, w.event.event_id], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        Ok(stored.map(|b| b == w.event.bytes.as_ref()))
    }

    fn watch_head(&mut self, ws: &str) -> Result<u64, StoreError> {
        let v: Option<i64> = self
            .0
            .prepare_cached("SELECT MAX(revision) FROM watch WHERE workspace = ?1")
            .map_err(sql)?
            .query_row([ws], |r| r.get(0))
            .map_err(sql)?;
        v.map(uint).transpose().map(|v| v.unwrap_or(0))
    }
}

/// Plans one batch and, if accepted, writes it. The outer `Err` is a
/// failure of the transaction; the inner one a refused batch (nothing of it
/// written).
fn apply(
    tx: &rusqlite::Transaction<'_>,
    batch: &Batch,
) -> Result<Result<Appended, StoreError>, StoreError> {
    let (fresh, fresh_watch, appended, purge) = match plan_batch(batch, &mut TxView(tx)) {
        Ok(Plan::Redelivered(done)) => return Ok(Ok(done)),
        Ok(Plan::Write {
            fresh,
            fresh_watch,
            appended,
            purge,
        }) => (fresh, fresh_watch, appended, purge),
        Err(StoreError::Backend(e)) => return Err(StoreError::Backend(e)),
        Err(refused) => return Ok(Err(refused)),
    };
    let sid = batch.session_id.as_str();
    if purge {
        // The run-tree and workflow indexes are columns of `events`.
        tx.execute("DELETE FROM events WHERE session = ?1", params![sid])
            .map_err(sql)?;
        tx.execute("DELETE FROM heads WHERE session = ?1", params![sid])
            .map_err(sql)?;
    }
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (session, seq, event_id, bytes, root, rseq, wf, wseq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(sql)?;
        for ev in &fresh {
            let (root, rseq) = match &ev.position.run {
                Some((r, s)) => (Some(r.as_str()), Some(int(*s)?)),
                None => (None, None),
            };
            let (wf, wseq) = match &ev.position.workflow {
                Some((w, s)) => (Some(w.as_str()), Some(int(*s)?)),
                None => (None, None),
            };
            insert
                .execute(params![
                    sid,
                    int(ev.position.session_sequence)?,
                    ev.event_id,
                    ev.bytes.as_ref(),
                    root,
                    rseq,
                    wf,
                    wseq
                ])
                .map_err(sql)?;
        }
    }
    for w in fresh_watch {
        tx.prepare_cached(
            "INSERT INTO watch (workspace, revision, event_id, bytes) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(sql)?
        .execute(params![
            w.workspace_id,
            int(w.event.revision)?,
            w.event.event_id,
            w.event.bytes.as_ref()
        ])
        .map_err(sql)?;
    }
    for w in &batch.side {
        match &w.value {
            Some(v) => tx
                .prepare_cached(
                    "INSERT INTO side (space, key, value) VALUES (?1, ?2, ?3)
                     ON CONFLICT (space, key) DO UPDATE SET value = excluded.value",
                )
                .map_err(sql)?
                .execute(params![space(w.space), w.key, v.as_ref()]),
            None => tx
                .prepare_cached("DELETE FROM side WHERE space = ?1 AND key = ?2")
                .map_err(sql)?
                .execute(params![space(w.space), w.key]),
        }
        .map_err(sql)?;
    }
    if !fresh.is_empty() {
        tx.prepare_cached(
            "INSERT INTO heads (session, head) VALUES (?1, ?2)
             ON CONFLICT (session) DO UPDATE SET head = excluded.head",
        )
        .map_err(sql)?
        .execute(params![sid, int(appended.head)?])
        .map_err(sql)?;
    }
    Ok(Ok(appended))
}

/// Last stored sequence of a run tree or workflow (`col`/`seq_col` are
/// fixed column names from this file, never input).
fn scope_head(
    tx: &rusqlite::Transaction<'_>,
    col: &str,
    seq_col: &str,
    sid: &str,
    scope: &str,
) -> Result<u64, StoreError> {
    let query = format!("SELECT MAX({seq_col}) FROM events WHERE session = ?1 AND {col} = ?2");
    let v: Option<i64> = tx
        .prepare_cached(&query)
        .map_err(sql)?
        .query_row(params![sid, scope], |r| r.get(0))
        .map_err(sql)?;
    v.map(uint).transpose().map(|v| v.unwrap_or(0))
}
