//! The durable queue of top-level starts (§3.1 `queue_if_busy`): one side
//! record per queued start in [`SideSpace::Queue`], keyed
//! `{sessionId}/{seq:020}` so that byte order is queue order.
//!
//! A start is queued by a head-guarded side-only batch that writes the
//! record at the next sequence (`Expect::Absent`). The batch that frees the
//! session slot starts the head of the queue and deletes its record
//! (`Expect::Equals`) in the same batch, so it starts exactly once; when
//! the queue is empty it guards the key a concurrent queuer would write,
//! so a start queued while the slot was freeing is never stranded.

use bytes::Bytes;
use narad_store::{Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::command_loop::strip_nulls;
use crate::command_types::StartRun;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::journal::{At, Draft, Journal};

/// The stored form of a queued start (versioned).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct QueuedStart {
    /// Layout version of this record.
    pub v: u32,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_executor_id: Option<String>,
}

const VERSION: u32 = 1;

impl QueuedStart {
    pub fn new(run_id: String, start: &StartRun) -> Self {
        Self {
            v: VERSION,
            run_id,
            workflow_id: start.workflow_id.clone(),
            client_executor_id: start.client_executor_id.clone(),
        }
    }

    fn decode(bytes: &[u8]) -> Result<Self, EngineError> {
        match serde_json::from_slice::<Self>(bytes) {
            Ok(q) if q.v == VERSION => Ok(q),
            _ => Err(EngineError::Store(StoreError::Backend(
                "queued start record is unreadable".into(),
            ))),
        }
    }
}

/// One stored queue entry of a session.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: String,
    pub seq: u64,
    pub bytes: Bytes,
    pub start: QueuedStart,
}

impl Entry {
    /// Deletes this entry if it is still exactly what was read.
    pub fn take(&self) -> SideWrite {
        SideWrite {
            space: SideSpace::Queue,
            key: self.key.clone(),
            expect: Expect::Equals(self.bytes.clone()),
            value: None,
        }
    }
}

/// The key of a session's queue entry `seq`.
pub(crate) fn key(session_id: &str, seq: u64) -> String {
    format!("{session_id}/{seq:020}")
}

/// The sequence a key names for this session, if it is one of its keys.
fn seq_of(session_id: &str, key: &str) -> Option<u64> {
    let rest = key.strip_prefix(session_id)?.strip_prefix('/')?;
    if rest.len() != 20 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// A session's queue, in order.
pub(crate) async fn list<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
) -> Result<Vec<Entry>, EngineError> {
    let prefix = format!("{session_id}/");
    let mut after = prefix.clone();
    let mut out = Vec::new();
    loop {
        let page = store.list_side(SideSpace::Queue, Some(&after), 256).await?;
        let Some((last, _)) = page.last() else {
            return Ok(out);
        };
        if last.as_str() <= after.as_str() {
            // The listing did not advance: a damaged backend answer.
            return Err(StoreError::corrupt(
                narad_store::Damage::CursorStalled,
                Some(session_id),
                None,
            )
            .into());
        }
        after = last.clone();
        let full = page.len() == 256;
        for (k, bytes) in page {
            if !k.starts_with(&prefix) {
                return Ok(out);
            }
            // Keys of a session whose id extends this one's (`a/b/…`) are
            // not this session's.
            if let Some(seq) = seq_of(session_id, &k) {
                let start = QueuedStart::decode(&bytes)?;
                out.push(Entry {
                    key: k,
                    seq,
                    bytes,
                    start,
                });
            }
        }
        if !full {
            return Ok(out);
        }
    }
}

/// The key the next queued start of this session takes.
pub(crate) fn next_key(session_id: &str, queue: &[Entry]) -> String {
    let seq = queue.iter().map(|e| e.seq).max().unwrap_or(0) + 1;
    key(session_id, seq)
}

/// Writes `start` at the next key; fails if another writer took it.
pub(crate) fn push(
    session_id: &str,
    queue: &[Entry],
    start: &QueuedStart,
) -> Result<SideWrite, EngineError> {
    let value = serde_json::to_vec(start)
        .map_err(|e| EngineError::InvalidCommand(format!("queued start: {e}")))?;
    Ok(SideWrite {
        space: SideSpace::Queue,
        key: next_key(session_id, queue),
        expect: Expect::Absent,
        value: Some(Bytes::from(value)),
    })
}

/// Asserts (without writing) that nobody queued after `queue` was read.
pub(crate) fn guard_empty_tail(session_id: &str, queue: &[Entry]) -> SideWrite {
    SideWrite {
        space: SideSpace::Queue,
        key: next_key(session_id, queue),
        expect: Expect::Absent,
        value: None,
    }
}

/// Whether a batch touches the queue (a conflict on it means: read again).
pub(crate) fn touches(side: &[SideWrite]) -> bool {
    side.iter().any(|w| w.space == SideSpace::Queue)
}

impl<S: Store + 'static> Engine<S> {
    /// In a batch that leaves the slot free: starts the first queued start
    /// the checker accepts (its `run.started` joins `events`) and answers
    /// the side writes that take it (and drop refused ones) from the queue.
    /// When nothing starts and the batch appends events, it guards the
    /// queue's next key instead, so a start queued meanwhile makes this
    /// batch read again rather than wait behind a free slot.
    ///
    /// Every event of the batch is authorized for the principal that sends
    /// it: when `p` may not append `run.started`, nothing is started and the
    /// queue waits for a later pass ([`Engine::drain_queue`]).
    pub(crate) async fn start_queued(
        &self,
        p: &Principal,
        j: &mut Journal,
        events: &mut Vec<StoredEvent>,
        now: &str,
    ) -> Result<Vec<SideWrite>, EngineError> {
        if self
            .authorize_writes(p, &j.session_id, ["run.started"])
            .is_err()
        {
            tracing::warn!(
                session_id = j.session_id.as_str(),
                "the principal that freed the slot may not start runs; the queue waits"
            );
            return Ok(Vec::new());
        }
        let queue = list(&*self.inner.store, &j.session_id).await?;
        let mut writes = Vec::new();
        for entry in &queue {
            let q = &entry.start;
            let draft = Draft::new(
                "run.started",
                At::Run {
                    run: q.run_id.clone(),
                    root: q.run_id.clone(),
                    workflow: q.workflow_id.clone(),
                },
                strip_nulls(json!({ "clientExecutorId": q.client_executor_id })),
            );
            writes.push(entry.take());
            let names = crate::closed_history::drafts_name(j, std::slice::from_ref(&draft));
            crate::closed_history::recall(&*self.inner.store, j, &names).await?;
            match j.apply_after(events.len() as u64, vec![draft], &*self.inner.ids, now) {
                Ok(started) => {
                    events.extend(started);
                    return Ok(writes);
                }
                // One draft: a refusal leaves the checker unchanged.
                Err((e, false)) => {
                    tracing::warn!(
                        session_id = j.session_id.as_str(),
                        code = e.code(),
                        "queued start refused when its slot freed; dropped from the queue"
                    );
                }
                Err((e, true)) => return Err(e),
            }
        }
        if !events.is_empty() {
            writes.push(guard_empty_tail(&j.session_id, &queue));
        }
        Ok(writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_queue_order_and_belong_to_one_session() {
        assert!(key("s", 9) < key("s", 10));
        assert_eq!(seq_of("s", &key("s", 42)), Some(42));
        assert_eq!(seq_of("s", &key("s/x", 1)), None);
        assert_eq!(seq_of("s/x", &key("s", 1)), None);
    }

    #[test]
    fn a_record_of_another_version_is_refused() {
        let q = QueuedStart::new("r".into(), &StartRun::default());
        let mut v = serde_json::to_value(&q).unwrap_or_default();
        v["v"] = 2.into();
        let bytes = serde_json::to_vec(&v).unwrap_or_default();
        assert!(QueuedStart::decode(&bytes).is_err());
        let ok = serde_json::to_vec(&q).unwrap_or_default();
        assert_eq!(QueuedStart::decode(&ok).ok(), Some(q));
    }
}
