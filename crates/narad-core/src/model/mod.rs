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

/// The exact bytes of a record and the JSON object they encode.
#[derive(Debug, Clone, PartialEq)]
pub struct Wire {
    bytes: Bytes,
    json: Map<String, Value>,
}

impl Wire {
    pub(crate) fn new(bytes: Bytes, json: Map<String, Value>) -> Self {
        Self { bytes, json }
    }

    /// The bytes exactly as received or appended.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The JSON object, unknown fields included.
    pub fn json(&self) -> &Map<String, Value> {
        &self.json
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
