//! Closed history in the store: the engine's checker leaves its closed
//! runs and tool calls out of the session's snapshot
//! ([`narad_core::checker::Checker::leave_closed_to_store`]), so a long
//! session's snapshot follows its open work. Each record it leaves out is
//! a [`SideSpace::Closed`] record written in the batch of that snapshot
//! ([`Journal::snapshot_write`]); a record closed since stays in the
//! checker (and in the journal's tail, which a hydrate replays).
//!
//! A journal restored from such a snapshot gives its checker back what it
//! needs before it decides: before a replayed or imported record
//! ([`recall_for`]), before a command's drafts ([`drafts_name`]), for a
//! command's plan that read a run it does not hold ([`Journal::misses`]),
//! and all of it before a read of the whole state ([`recall_all`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use narad_core::checker::{ClosedKey, ClosedKind};
use narad_store::{Expect, SideSpace, SideWrite, Store, StoreError};
use serde_json::Value;

use crate::error::EngineError;
use crate::journal::{At, Draft, Journal};

/// Closed records a command's snapshot batch carries at most; the rest
/// stay in the snapshot until a later one (a session replayed in full, or
/// restored from an earlier layout, hands its closed history over in
/// steps). Between two snapshots a session closes far fewer.
pub(crate) const PER_BATCH: usize = 4096;

/// Closed records one batch of [`crate::Engine::write_snapshot`] carries
/// at most: it stores snapshots until all are handed over.
pub(crate) const PER_SNAPSHOT_CALL: usize = 65_536;

/// The store key of `key`'s record in `session_id`.
pub(crate) fn store_key(session_id: &str, key: &ClosedKey) -> String {
    format!("{}{}{}", prefix(session_id), key.kind.tag(), key.id)
}

/// The prefix every closed record of `session_id` starts with.
fn prefix(session_id: &str) -> String {
    crate::session_side::session_prefix(session_id)
}

/// The layout of a stored closed record: this version byte, the head of
/// the batch that wrote it (u64, big-endian), then the record as the
/// checker handed it over.
const VERSION: u8 = 1;

/// A stored closed record, decoded.
struct Stored<'a> {
    /// The session head once the batch that wrote it was stored: the
    /// record describes the session at or before it.
    head: u64,
    bytes: &'a [u8],
}

impl<'a> Stored<'a> {
    fn encode(head: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + bytes.len());
        out.push(VERSION);
        out.extend_from_slice(&head.to_be_bytes());
        out.extend_from_slice(bytes);
        out
    }

    fn decode(b: &'a [u8]) -> Option<Self> {
        let (&version, rest) = b.split_first()?;
        let (head, bytes) = rest.split_first_chunk::<8>()?;
        (version == VERSION).then(|| Self {
            head: u64::from_be_bytes(*head),
            bytes,
        })
    }
}

/// The side writes of up to `limit` closed records `j`'s checker has not
/// handed over yet, for the batch of a snapshot that leaves them out and
/// takes the session to `head`.
pub(crate) fn take_writes(j: &mut Journal, head: u64, limit: usize) -> Vec<SideWrite> {
    let sid = j.session_id.clone();
    j.checker
        .take_closed(&sid, limit)
        .into_iter()
        .map(|r| SideWrite {
            space: SideSpace::Closed,
            key: store_key(&sid, &r.key),
            expect: Expect::Any,
            value: Some(Stored::encode(head, &r.bytes).into()),
        })
        .collect()
}

/// Another writer moved the session past `j` (it stored a snapshot, and
/// closed records with it, after the events `j` holds): `j` is reloaded,
/// as after any head conflict.
fn moved_past(j: &Journal, head: u64) -> EngineError {
    EngineError::Store(StoreError::HeadConflict {
        expected: j.head,
        current: head,
    })
}

/// The checker's bytes of a stored closed record of `j`'s session, if it
/// describes the session at or before `j`'s head (see [`moved_past`]).
fn usable<'a>(j: &Journal, key: &ClosedKey, value: &'a [u8]) -> Result<&'a [u8], EngineError> {
    let stored = Stored::decode(value).ok_or_else(|| corrupt(&j.session_id, key))?;
    if stored.head > j.head {
        return Err(moved_past(j, stored.head));
    }
    Ok(stored.bytes)
}

/// What a command's plan read of closed history `j`'s checker does not
/// hold: looked up and given back before the plan runs again.
#[derive(Debug, Default)]
pub(crate) struct Misses {
    keys: Mutex<Vec<ClosedKey>>,
    /// The plan read every run (a whole-state read).
    all: AtomicBool,
}

impl Misses {
    /// Notes that the plan looked `id` up, if the checker may have left it
    /// to the store.
    pub(crate) fn note(&self, j: &Journal, kind: ClosedKind, id: &str) {
        if j.checker.closed_unknown(&j.session_id, kind, id) {
            if let Ok(mut m) = self.keys.lock() {
                m.push(key_of(kind, id));
            }
        }
    }

    /// Notes that the plan reads all closed history, if the checker may
    /// have left some to the store.
    pub(crate) fn note_all(&self, j: &Journal) {
        if !j.checker.holds_closed_history(&j.session_id) {
            self.all.store(true, Ordering::Relaxed);
        }
    }

    /// The noted keys, and whether all was read; cleared.
    pub(crate) fn take(&self) -> (Vec<ClosedKey>, bool) {
        let keys = self
            .keys
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        (keys, self.all.swap(false, Ordering::Relaxed))
    }
}

/// The store key of closed record `kind` that holds `id`: the id's own,
/// but the one transcript record for a message id.
fn key_of(kind: ClosedKind, id: &str) -> ClosedKey {
    ClosedKey {
        kind,
        id: match kind {
            ClosedKind::Transcript => String::new(),
            _ => id.to_owned(),
        },
    }
}

/// The runs, tool calls and messages `drafts` name that `j`'s checker may
/// have left to the store: the ids [`narad_core::checker`]'s gate reads
/// (`runId`, `rootRunId`, `parentRunId`, a stop's target, a tool call's
/// id, a message id).
pub(crate) fn drafts_name(j: &Journal, drafts: &[Draft]) -> Vec<ClosedKey> {
    if j.checker.holds_closed_history(&j.session_id) {
        return Vec::new();
    }
    let mut keys = Vec::new();
    let mut add = |kind, id: &str| {
        if j.checker.closed_unknown(&j.session_id, kind, id) {
            keys.push(key_of(kind, id));
        }
    };
    for d in drafts {
        if let At::Run { run, root, .. } = &d.at {
            add(ClosedKind::Run, run);
            add(ClosedKind::Run, root);
        }
        for (field, kind) in [
            ("parentRunId", ClosedKind::Run),
            ("targetRunId", ClosedKind::Run),
            ("toolCallId", ClosedKind::ToolCall),
            ("messageId", ClosedKind::Transcript),
        ] {
            if let Some(Value::String(id)) = d.body.get(field) {
                add(kind, id);
            }
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// Gives `j`'s checker the stored records of `keys` (`None` for one the
/// store does not hold), one point read each. A record written after
/// `j`'s head is a [`StoreError::HeadConflict`]: `j` is stale.
pub(crate) async fn recall<S: Store + ?Sized>(
    store: &S,
    j: &mut Journal,
    keys: &[ClosedKey],
) -> Result<(), EngineError> {
    let sid = j.session_id.clone();
    for key in keys {
        let value = store.side(SideSpace::Closed, &store_key(&sid, key)).await?;
        if key.kind == ClosedKind::Transcript {
            recall_transcript(j, value).await?;
            continue;
        }
        let bytes = match &value {
            Some(v) => Some(usable(j, key, v)?),
            None => None,
        };
        // Bytes that are not such a record are not taken: refused as
        // damaged rather than decided without them.
        if !j.checker.recall_closed(&sid, key, bytes)
            && j.checker.closed_unknown(&sid, key.kind, &key.id)
        {
            return Err(corrupt(&sid, key));
        }
    }
    Ok(())
}

/// What the checker's last [`narad_core::checker::CLOSED_RECALL`] refusal
/// asked for, given back from the store.
pub(crate) async fn recall_for<S: Store + ?Sized>(
    store: &S,
    j: &mut Journal,
) -> Result<(), EngineError> {
    let sid = j.session_id.clone();
    let needed = j.checker.closed_needed(&sid);
    if needed.is_empty() {
        return Err(EngineError::Store(StoreError::Backend(
            "the checker asked for closed history and named none".into(),
        )));
    }
    recall(store, j, &needed).await
}

/// Every closed record the store holds of `j`'s session given back to its
/// checker, for a read of the whole state (a no-op when it holds all).
pub(crate) async fn recall_all<S: Store + ?Sized>(
    store: &S,
    j: &mut Journal,
) -> Result<(), EngineError> {
    let sid = j.session_id.clone();
    if j.checker.holds_closed_history(&sid) {
        return Ok(());
    }
    for (key, value) in list(store, &sid).await? {
        if key.kind == ClosedKind::Transcript {
            recall_transcript(j, Some(value)).await?;
            continue;
        }
        let bytes = usable(j, &key, &value)?;
        // A record the checker holds already is not taken again.
        let _ = j.checker.recall_closed(&sid, &key, Some(bytes));
    }
    // The transcript the checker was restored without, when the store
    // holds no record of it.
    recall_transcript(j, None).await
}

/// Gives `j`'s checker back the transcript messages it was restored
/// without ([`narad_core::checker::ClosedKind::Transcript`]), from `value`,
/// the session's stored record (a no-op when none are away). A record of
/// another head than the one the checker's snapshot names is another
/// writer's (a head conflict: `j` reloads); one of that head that the
/// checker does not take, or none, is damage.
pub(crate) async fn recall_transcript(
    j: &mut Journal,
    value: Option<bytes::Bytes>,
) -> Result<(), EngineError> {
    let sid = j.session_id.clone();
    let Some(wanted) = j.checker.transcript_wanted(&sid) else {
        return Ok(());
    };
    let at = wanted.at();
    let key = key_of(ClosedKind::Transcript, "");
    let value = value.ok_or_else(|| corrupt(&sid, &key))?;
    let len = usable(j, &key, &value)?.len();
    // Kept in place: a buffer of its own, not one a store shares (a
    // layout 2 redb file's large value holds its read transaction open).
    let start = value.len().saturating_sub(len);
    let record = match value.is_unique() {
        true => value.slice(start..),
        false => bytes::Bytes::copy_from_slice(value.get(start..).unwrap_or_default()),
    };
    // A long transcript's check is milliseconds of CPU: on the blocking
    // pool, as a snapshot's restore is.
    let checked = match record.len() < crate::journal::OFF_THREAD_BYTES {
        true => wanted.check(record),
        false => crate::journal::off_thread(move || wanted.check(record))
            .await
            .flatten(),
    };
    if checked.is_some_and(|c| j.checker.install_transcript(&sid, c)) {
        return Ok(());
    }
    match Stored::decode(&value) {
        Some(s) if s.head > at => Err(moved_past(j, s.head.max(j.head + 1))),
        _ => Err(corrupt(&sid, &key)),
    }
}

/// Gives `j`'s checker its transcript back before a snapshot when so many
/// messages came since it was handed over that the snapshot should not
/// carry them all ([`narad_core::checker::Checker::transcript_recall_wanted`]):
/// it is then handed over whole again.
pub(crate) async fn before_snapshot<S: Store + ?Sized>(
    store: &S,
    j: &mut Journal,
) -> Result<(), EngineError> {
    if !j.checker.transcript_recall_wanted(&j.session_id) {
        return Ok(());
    }
    let key = key_of(ClosedKind::Transcript, "");
    recall(store, j, &[key]).await
}

/// Every closed record of `session_id` in the store, by key.
pub(crate) async fn list<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
) -> Result<Vec<(ClosedKey, bytes::Bytes)>, EngineError> {
    let prefix = prefix(session_id);
    let records = crate::session_side::records(store, SideSpace::Closed, session_id).await?;
    records
        .into_iter()
        .map(|(k, bytes)| {
            let rest = k.get(prefix.len()..).unwrap_or_default();
            let mut chars = rest.chars();
            let kind = match chars.next() {
                Some('r') => ClosedKind::Run,
                Some('t') => ClosedKind::ToolCall,
                Some('m') => ClosedKind::Transcript,
                _ => {
                    return Err(EngineError::CorruptRecord {
                        space: "closed",
                        key: k.clone(),
                    })
                }
            };
            let id = chars.as_str().to_owned();
            Ok((ClosedKey { kind, id }, bytes))
        })
        .collect()
}

/// The store keys of every closed record of `session_id` (deleted with it).
pub(crate) async fn keys<S: Store + ?Sized>(
    store: &S,
    session_id: &str,
) -> Result<Vec<String>, EngineError> {
    Ok(list(store, session_id)
        .await?
        .into_iter()
        .map(|(k, _)| store_key(session_id, &k))
        .collect())
}

/// A stored closed record that is not one.
fn corrupt(session_id: &str, key: &ClosedKey) -> EngineError {
    EngineError::CorruptRecord {
        space: "closed",
        key: store_key(session_id, key),
    }
}
