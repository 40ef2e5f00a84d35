//! A session's host metadata: its active profiles, workspace, creation
//! time, labels, archive flag, fork origin and creation key, kept as a
//! side record beside its journal (`SideSpace::Session`).

use std::collections::BTreeMap;

use narad_core::{ProfileSet, PROTOCOL_VERSION};
use serde_json::Value;

use crate::error::EngineError;

/// Host metadata kept as a side record beside the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meta {
    pub profiles: ProfileSet,
    pub workspace_id: Option<String>,
    /// When the session was created (RFC 3339); absent in metadata
    /// written before the session index.
    pub created_at: Option<String>,
    /// Host labels ([`crate::Engine::set_labels`]).
    pub labels: BTreeMap<String, String>,
    /// Archived: read-only ([`crate::Engine::archive`]).
    pub archived: bool,
    /// The session and `sessionSequence` it was forked from
    /// ([`crate::Engine::fork`]).
    pub origin: Option<(String, u64)>,
    /// The idempotency key the session was created with: its record
    /// (`create:{key}`) is deleted with the session.
    pub create_key: Option<String>,
}

impl Meta {
    pub fn encode(&self) -> Vec<u8> {
        let ids: Vec<&str> = self.profiles.iter().map(|p| p.id()).collect();
        let mut v =
            serde_json::json!({ "profiles": ids.join(","), "workspaceId": self.workspace_id });
        // Only what is set, so metadata written before these fields
        // existed keeps its exact bytes.
        if let Some(o) = v.as_object_mut() {
            if let Some(c) = &self.created_at {
                o.insert("createdAt".into(), Value::from(c.clone()));
            }
            if !self.labels.is_empty() {
                o.insert("labels".into(), serde_json::json!(self.labels));
            }
            if self.archived {
                o.insert("archived".into(), Value::Bool(true));
            }
            if let Some((sid, seq)) = &self.origin {
                o.insert(
                    "forkedFrom".into(),
                    serde_json::json!({ "sessionId": sid, "sessionSequence": seq }),
                );
            }
            if let Some(k) = &self.create_key {
                o.insert("createKey".into(), Value::from(k.clone()));
            }
        }
        v.to_string().into_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, EngineError> {
        let bad = || {
            EngineError::Store(narad_store::StoreError::Backend(
                "session metadata is unreadable".into(),
            ))
        };
        let v: Value = serde_json::from_slice(bytes).map_err(|_| bad())?;
        let list = v.get("profiles").and_then(Value::as_str).ok_or_else(bad)?;
        // The core id is listed too; ProfileSet::parse knows only optional ones.
        let optional: Vec<&str> = list.split(',').filter(|p| *p != PROTOCOL_VERSION).collect();
        let profiles = ProfileSet::parse(&optional.join(",")).map_err(|_| bad())?;
        let workspace_id = v
            .get("workspaceId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let created_at = v
            .get("createdAt")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let labels = match v.get("labels") {
            None => BTreeMap::new(),
            Some(l) => serde_json::from_value(l.clone()).map_err(|_| bad())?,
        };
        let archived = match v.get("archived") {
            None => false,
            Some(a) => a.as_bool().ok_or_else(bad)?,
        };
        let origin = match v.get("forkedFrom") {
            None => None,
            Some(o) => Some((
                o.get("sessionId")
                    .and_then(Value::as_str)
                    .ok_or_else(bad)?
                    .to_owned(),
                o.get("sessionSequence")
                    .and_then(Value::as_u64)
                    .ok_or_else(bad)?,
            )),
        };
        let create_key = match v.get("createKey") {
            None => None,
            Some(k) => Some(k.as_str().ok_or_else(bad)?.to_owned()),
        };
        Ok(Self {
            profiles,
            workspace_id,
            created_at,
            labels,
            archived,
            origin,
            create_key,
        })
    }
}
