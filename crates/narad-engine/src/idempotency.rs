//! Idempotency keys: a command given a caller's key records, in the same
//! batch as its events, a [`SideSpace::Idempotency`] record holding a
//! digest of the request and the command's original result. A retry with
//! the same key finds the record, appends nothing and answers that result
//! (its events re-read from the journal); a retry with another request is
//! refused as `idempotency_conflict`.
//!
//! Records are keyed `{len}:{sessionId}/{key}` (the session id's byte
//! length first, so one session's keys are exactly one key prefix, never
//! another session's), and `create:{key}` for `create_session`, whose
//! session is not known before the record is read; that key is kept in the
//! session's metadata so that deleting the session deletes it too.

use bytes::Bytes;
use narad_store::{Damage, Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::session_side::session_prefix;

/// The longest key a caller may give, in bytes.
pub(crate) const MAX_KEY: usize = 256;

/// The key and request digest a keyed command runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keyed {
    /// The caller's key.
    pub key: String,
    /// The command, e.g. `message`.
    pub command: &'static str,
    /// Hex SHA-256 of the request's canonical JSON.
    pub digest: String,
}

impl Keyed {
    /// `key` for `command` with the request `request` (serialized to JSON
    /// and hashed: the record keeps no request content).
    pub fn new(
        key: &str,
        command: &'static str,
        request: &impl Serialize,
    ) -> Result<Self, EngineError> {
        if key.is_empty() || key.len() > MAX_KEY || key.chars().any(char::is_control) {
            return Err(EngineError::InvalidCommand(format!(
                "an idempotency key must be 1 to {MAX_KEY} bytes without control characters"
            )));
        }
        let bytes = serde_json::to_vec(&(command, request)).map_err(|_| {
            EngineError::InvalidCommand("the request does not serialize to JSON".into())
        })?;
        let digest = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Self {
            key: key.to_owned(),
            command,
            digest,
        })
    }

    /// The key of a caller-chosen id (`kind` e.g. `toolCallId`): it
    /// starts with a control character, which a caller's key never holds,
    /// so the two never meet.
    pub fn for_id(
        kind: &str,
        id: &str,
        command: &'static str,
        request: &impl Serialize,
    ) -> Result<Self, EngineError> {
        if id.is_empty() || id.len() > MAX_KEY {
            return Err(EngineError::InvalidCommand(format!(
                "a {kind} must be 1 to {MAX_KEY} bytes"
            )));
        }
        let mut keyed = Self::new("id", command, request)?;
        keyed.key = format!("\u{1}{kind}/{id}");
        Ok(keyed)
    }

    /// The store key of this key in `session_id`.
    pub fn store_key(&self, session_id: &str) -> String {
        format!("{}{}", session_prefix(session_id), self.key)
    }

    /// The store key of this key for `create_session`.
    pub fn create_key(&self) -> String {
        create_key(&self.key)
    }
}

/// The store key of a `create_session` key.
pub(crate) fn create_key(key: &str) -> String {
    format!("create:{key}")
}

const VERSION: u32 = 1;

/// The stored record of a key (versioned).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct KeyRecord<T = serde_json::Value> {
    pub v: u32,
    /// The session the command wrote.
    pub session_id: String,
    pub command: String,
    pub digest: String,
    /// The types the command appended: a retry is authorized for them.
    pub types: Vec<String>,
    /// `sessionSequence` of the command's first event (0: none).
    pub first: u64,
    /// How many events the command appended.
    pub count: u64,
    /// The command's result.
    pub result: T,
}

/// The record of `keyed` for a command of `session_id` that appended
/// `own` (of `types`) and answers `result`, as a side write that must be new.
pub(crate) fn write_record(
    keyed: &Keyed,
    store_key: String,
    session_id: &str,
    own: &[StoredEvent],
    types: Vec<String>,
    result: &serde_json::Value,
) -> Result<SideWrite, EngineError> {
    let rec = KeyRecord {
        v: VERSION,
        session_id: session_id.to_owned(),
        command: keyed.command.to_owned(),
        digest: keyed.digest.clone(),
        types,
        first: own.first().map_or(0, |e| e.position.session_sequence),
        count: own.len() as u64,
        result,
    };
    let bytes = serde_json::to_vec(&rec).map_err(|_| {
        EngineError::InvalidCommand("the command's result does not serialize".into())
    })?;
    Ok(SideWrite {
        space: SideSpace::Idempotency,
        key: store_key,
        expect: Expect::Absent,
        value: Some(Bytes::from(bytes)),
    })
}

impl KeyRecord {
    fn decode(key: &str, bytes: &[u8]) -> Result<Self, EngineError> {
        match serde_json::from_slice::<Self>(bytes) {
            Ok(r) if r.v == VERSION => Ok(r),
            _ => Err(EngineError::CorruptRecord {
                space: "idempotency",
                key: key.to_owned(),
            }),
        }
    }
}

impl<S: Store + 'static> Engine<S> {
    /// The original answer of the keyed command this engine runs, when its
    /// key was recorded: `None` when it was not (run the command);
    /// refused when the key was used by another request or session.
    pub(crate) async fn recorded(
        &self,
        p: &Principal,
        store_key: &str,
        session_id: Option<&str>,
    ) -> Result<Option<(serde_json::Value, Vec<StoredEvent>)>, EngineError> {
        let Some(keyed) = self.keyed.as_deref() else {
            return Ok(None);
        };
        let store = &*self.inner.store;
        let Some(bytes) = store.side(SideSpace::Idempotency, store_key).await? else {
            return Ok(None);
        };
        let rec = KeyRecord::decode(store_key, &bytes)?;
        let same = rec.command == keyed.command
            && rec.digest == keyed.digest
            && session_id.is_none_or(|s| s == rec.session_id);
        if !same {
            return Err(EngineError::IdempotencyConflict {
                what: format!("idempotency key {}", keyed.key),
            });
        }
        // Whoever retries must be allowed what the original appended.
        self.authorize_writes(p, &rec.session_id, rec.types.iter().map(String::as_str))?;
        let mut events = Vec::new();
        if rec.count > 0 {
            let count = usize::try_from(rec.count).unwrap_or(usize::MAX);
            let page = store
                .read_session(&rec.session_id, rec.first.saturating_sub(1), count)
                .await?;
            events = page.events;
            if events.len() != count {
                return Err(StoreError::corrupt(Damage::File, Some(&rec.session_id), None).into());
            }
        }
        Ok(Some((rec.result, events)))
    }

    /// Whether this engine's key is recorded now (a lost race with another
    /// writer of the same key).
    pub(crate) async fn key_taken(&self, store_key: &Option<String>) -> Result<bool, EngineError> {
        let Some(store_key) = store_key else {
            return Ok(false);
        };
        Ok(self
            .inner
            .store
            .side(SideSpace::Idempotency, store_key)
            .await?
            .is_some())
    }

    /// Every key record of `session_id` (for deleting it).
    pub(crate) async fn key_records(&self, session_id: &str) -> Result<Vec<String>, EngineError> {
        let store = &*self.inner.store;
        let records = crate::session_side::records(store, SideSpace::Idempotency, session_id);
        Ok(records.await?.into_iter().map(|(k, _)| k).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One session's keys are exactly one prefix: no other session's key
    /// (even one whose id extends it) shares it.
    #[test]
    fn a_sessions_keys_never_collide_with_anothers() {
        let k = |key: &str| Keyed::new(key, "message", &"x").unwrap();
        assert_ne!(k("b/c").store_key("a"), k("c").store_key("a/b"));
        assert!(!k("c").store_key("a/b").starts_with(&session_prefix("a")));
        assert!(k("c").store_key("a").starts_with(&session_prefix("a")));
        assert_ne!(k("c").create_key(), k("c").store_key(""));
    }

    /// The digest covers the command and the whole request.
    #[test]
    fn the_digest_tells_requests_apart() {
        let d = |cmd, req: &str| Keyed::new("k", cmd, &req).unwrap().digest;
        assert_eq!(d("message", "a"), d("message", "a"));
        assert_ne!(d("message", "a"), d("message", "b"));
        assert_ne!(d("message", "a"), d("stop", "a"));
        assert!(Keyed::new("", "message", &"a").is_err());
        assert!(Keyed::new(&"k".repeat(MAX_KEY + 1), "message", &"a").is_err());
        assert!(Keyed::new("a\nb", "message", &"a").is_err());
    }
}
