//! # narad-core
//!
//! The Narad v1 wire model and its structural validation: one Rust type per
//! record kind ([`AuthorityEvent`], [`WatchEvent`], [`HydrateRecord`],
//! [`ControlMessage`]), typed payloads for every core and profile type, a
//! [registry] mapping each type to its class and profile, and a
//! [`Validator`] that agrees with the published JSON Schemas (and, where they
//! fall short, with the spec prose; see `conformance/NOTES.md`).
//!
//! **Architecture invariant:** this crate does no IO, spawns nothing, reads
//! no clock and draws no randomness. Everything here is a pure function of
//! its input.
//!
//! ```
//! use narad_core::{Parsed, Record, Validator, model::AuthorityPayload};
//! let line = br#"{"type":"tool.call.started","protocolVersion":"narad/v1","eventId":"e2","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":2,"rootRunId":"r","runId":"r","sequence":2,"toolCallId":"t1","toolName":"search","executor":"backend","args":{"q":"narad"}}"#;
//! match Validator::default().parse(line)? {
//!     Parsed::Record { record: Record::Authority(ev), .. } => {
//!         assert_eq!(ev.envelope.session_sequence, 2);
//!         assert!(matches!(ev.payload, AuthorityPayload::ToolCallStarted { .. }));
//!     }
//!     other => unreachable!("{other:?}"),
//! }
//! # Ok::<(), narad_core::ValidationError>(())
//! ```

pub mod checker;
pub mod error;
mod fast;
mod fingerprint;
pub mod graph;
pub mod json;
pub mod limits;
pub mod model;
pub mod record;
pub mod registry;
mod small_map;
pub mod timestamp;
pub mod validate;

pub use error::{ValidationCode, ValidationError};
pub use limits::Limits;
pub use model::{AuthorityEvent, ControlMessage, HydrateRecord, WatchEvent, Wire};
pub use record::{IgnoredAuthority, Parsed, Record};
pub use registry::{Profile, ProfileSet, RecordClass, RecordKind};
pub use validate::{Validator, ValidatorConfig, Verdict, PROTOCOL_VERSION};
