//! The typed wire model: one type per record kind, typed payloads per type.
//!
//! Every typed record keeps the exact bytes it was parsed from and the JSON
//! object they encode ([`Wire`]), so unknown optional fields survive and an
//! appended event's identity (its bytes) is never re-encoded.

mod authority;
mod control;
mod hydrate;
mod patch;
mod watch;

pub use authority::*;
pub use control::*;
pub use hydrate::*;
pub use patch::*;
pub use watch::*;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::OnceLock;

/// The exact bytes of a record and the JSON object they encode.
///
/// A record taken by the fast parse path builds its object only when
/// [`Wire::json`] is first called; its content fingerprint is computed
/// while parsing.
#[derive(Clone)]
pub struct Wire {
    bytes: Bytes,
    json: OnceLock<Map<String, Value>>,
    /// Known from the fast parse, else computed on first use: a plain
    /// field for the known case, since `OnceLock::from` runs a `Once`
    /// (about 1% of a record's reduce).
    known_fingerprint: Option<u64>,
    fingerprint: OnceLock<u64>,
}

impl Wire {
    pub(crate) fn new(bytes: Bytes, json: Map<String, Value>) -> Self {
        Self {
            bytes,
            json: OnceLock::from(json),
            known_fingerprint: None,
            fingerprint: OnceLock::new(),
        }
    }

    /// A record whose bytes were validated as a strict JSON object and
    /// whose fingerprint is known; the object is built on demand.
    pub(crate) fn lazy(bytes: Bytes, fingerprint: u64) -> Self {
        Self {
            bytes,
            json: OnceLock::new(),
            known_fingerprint: Some(fingerprint),
            fingerprint: OnceLock::new(),
        }
    }

    /// The bytes exactly as received or appended.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The JSON object, unknown fields included.
    pub fn json(&self) -> &Map<String, Value> {
        self.json.get_or_init(|| {
            // Only lazy wires reach this, and their bytes parsed as a strict
            // object already; an empty map is unreachable.
            match crate::json::from_slice_strict(&self.bytes) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            }
        })
    }

    /// The content fingerprint of the object, the dedup identity of its
    /// content (§4.1): equal for equal JSON values, however encoded.
    #[doc(hidden)]
    pub fn fingerprint(&self) -> u64 {
        self.known_fingerprint.unwrap_or_else(|| {
            *self
                .fingerprint
                .get_or_init(|| crate::fingerprint::of_map(self.json()))
        })
    }
}

impl PartialEq for Wire {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes && self.json() == other.json()
    }
}

impl fmt::Debug for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wire")
            .field("bytes", &self.bytes)
            .field("json", self.json())
            .finish()
    }
}

/// Which journal a scoped message, state or UI document belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The whole session.
    Session,
    /// One workflow (`workflowId`, `workflowSequence` required).
    Workflow,
    /// One run (`rootRunId`, `runId`, `sequence` required).
    Run,
}

/// Deserializes a present field (even `null`) as `Some`, so that `null` and
/// absence stay distinct through a round trip.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}
