//! Parsing bytes into typed records.

use crate::error::{ValidationCode as C, ValidationError as E};
use crate::model::{
    AuthorityEnvelope, AuthorityEvent, AuthorityPayload, ControlMessage, ControlPayload,
    HydratePayload, HydrateRecord, WatchEnvelope, WatchEvent, WatchPayload, Wire,
};
use crate::registry::{Profile, RecordClass, RecordKind};
use crate::validate::{Validator, Verdict};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One validated Narad record of any of the four kinds.
// Authority events are the common case and the largest; boxing them would
// add an allocation per journal record to save space on the rare others.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Authority event.
    Authority(AuthorityEvent),
    /// Watch event.
    Watch(WatchEvent),
    /// Hydrate record.
    Hydrate(HydrateRecord),
    /// Control message.
    Control(ControlMessage),
}

impl Record {
    /// The record's kind.
    pub fn kind(&self) -> RecordKind {
        match self {
            Record::Authority(_) => RecordKind::Authority,
            Record::Watch(_) => RecordKind::Watch,
            Record::Hydrate(_) => RecordKind::Hydrate,
            Record::Control(_) => RecordKind::Control,
        }
    }

    /// The exact bytes and JSON object the record was parsed from.
    pub fn wire(&self) -> &Wire {
        match self {
            Record::Authority(r) => &r.wire,
            Record::Watch(r) => &r.wire,
            Record::Hydrate(r) => &r.wire,
            Record::Control(r) => &r.wire,
        }
    }

    /// The wire `type`.
    pub fn record_type(&self) -> &str {
        self.wire()
            .json()
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Serializes only the typed model (envelope and payload), without
    /// unknown fields. For a record whose fields are all known to the model
    /// this equals [`Record::to_json_value`]; tests use it to prove the typed
    /// model loses nothing the spec names.
    pub fn typed_json_value(&self) -> Result<Value, serde_json::Error> {
        let mut out = Map::new();
        let mut merge = |v: Value| {
            if let Value::Object(m) = v {
                out.extend(m);
            }
        };
        match self {
            Record::Authority(r) => {
                merge(serde_json::to_value(&r.envelope)?);
                merge(serde_json::to_value(&r.payload)?);
            }
            Record::Watch(r) => {
                merge(serde_json::to_value(&r.envelope)?);
                merge(serde_json::to_value(&r.payload)?);
            }
            Record::Hydrate(r) => {
                merge(
                    serde_json::json!({"protocolVersion": r.protocol_version, "timestamp": r.timestamp}),
                );
                merge(serde_json::to_value(&r.payload)?);
            }
            Record::Control(r) => {
                merge(serde_json::json!({"protocolVersion": r.protocol_version}));
                merge(serde_json::to_value(&r.payload)?);
            }
        }
        Ok(Value::Object(out))
    }

    /// Serializes the record: the JSON object it was parsed from, unknown
    /// fields included. Equal, as a JSON value, to the input.
    pub fn to_json_value(&self) -> Value {
        Value::Object(self.wire().json().clone())
    }
}

/// The result of parsing one record that is not an error.
#[allow(clippy::large_enum_variant)] // see `Record`
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A valid record.
    Record {
        /// The typed record.
        record: Record,
        /// Its effective class.
        class: RecordClass,
    },
    /// A record of a profile that is not active; carry on without it.
    Ignorable {
        /// Its `type`.
        record_type: String,
        /// The inactive profile.
        profile: Profile,
        /// For an authority event: its identity and ordering envelope,
        /// which still advance every cursor it carries (§2.1, §4.2).
        authority: Option<Box<IgnoredAuthority>>,
    },
}

/// An authority event of an inactive profile: its validated envelope and
/// its bytes, without a typed payload.
#[derive(Debug, Clone, PartialEq)]
pub struct IgnoredAuthority {
    /// Identity and ordering fields.
    pub envelope: AuthorityEnvelope,
    /// The exact bytes and JSON object.
    pub wire: Wire,
}

impl Validator {
    /// Parses and validates one record from JSON bytes (copied once into
    /// [`Bytes`]; use [`Validator::parse_bytes`] to avoid the copy).
    ///
    /// ```
    /// use narad_core::{Parsed, Record, Validator};
    /// let line = br#"{"type":"session.revision","protocolVersion":"narad/v1","eventId":"w1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","revision":3,"x-vendor":true}"#;
    /// let Parsed::Record { record: Record::Watch(w), .. } = Validator::default().parse(line).unwrap() else { panic!() };
    /// assert_eq!(w.envelope.revision, 3);
    /// assert_eq!(&w.wire.bytes()[..], &line[..]);          // bytes kept exactly
    /// assert_eq!(w.wire.json()["x-vendor"], true);         // unknown fields preserved
    /// ```
    pub fn parse(&self, bytes: &[u8]) -> Result<Parsed, E> {
        if bytes.len() > self.config().limits.max_record_bytes {
            return Err(too_large(self));
        }
        self.parse_bytes(Bytes::copy_from_slice(bytes))
    }

    /// Parses and validates one record, keeping `bytes` as the record's
    /// identity without copying. The hot authority types take a one-pass
    /// fast path; anything it is not sure of is decided by the strict slow
    /// path, so verdicts and messages do not depend on the path. The parse is strict
    /// ([`crate::json::from_slice_strict`]): an object that repeats a member
    /// name, at any depth, is refused with `duplicate_key`.
    pub fn parse_bytes(&self, bytes: Bytes) -> Result<Parsed, E> {
        if bytes.len() > self.config().limits.max_record_bytes {
            return Err(too_large(self));
        }
        match self.parse_fast_owned(bytes) {
            Ok(parsed) => Ok(parsed),
            Err(bytes) => self.parse_slow(bytes),
        }
    }

    /// The strict slow path alone: a `Value` of the whole record, validated
    /// field by field, then the typed model read from it. It decides every
    /// record the fast path declines; tests compare the two.
    #[doc(hidden)]
    pub fn parse_slow(&self, bytes: Bytes) -> Result<Parsed, E> {
        if bytes.len() > self.config().limits.max_record_bytes {
            return Err(too_large(self));
        }
        let value = crate::json::from_slice_strict(&bytes)
            .map_err(|e| self.config().limits.json_error(e))?;
        let verdict = self.check(&value)?;
        let Value::Object(json) = value else {
            return Err(E::new(
                C::NotAnObject,
                None,
                "a record must be a JSON object",
            ));
        };
        match verdict {
            Verdict::Ignorable { profile } => {
                let record_type = json
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let authority = ignored_authority(&record_type, bytes, json)
                    .map_err(|e| e.with_type(&record_type))?;
                Ok(Parsed::Ignorable {
                    record_type,
                    profile,
                    authority,
                })
            }
            Verdict::Valid { info, class } => {
                let record =
                    build(class.kind(), bytes, json).map_err(|e| e.with_type(info.name))?;
                Ok(Parsed::Record { record, class })
            }
        }
    }
}

fn too_large(v: &Validator) -> E {
    E::new(
        C::RecordTooLarge,
        None,
        format!(
            "record larger than {} bytes",
            v.config().limits.max_record_bytes
        ),
    )
}

/// The envelope of an ignorable record that is authority: a known type of
/// an authority class, or an unknown type that carries `sessionSequence`
/// (watch, hydrate and control records never do).
fn ignored_authority(
    ty: &str,
    bytes: Bytes,
    json: Map<String, Value>,
) -> Result<Option<Box<IgnoredAuthority>>, E> {
    let authority = match crate::registry::lookup(ty) {
        Some(info) => info.kind() == RecordKind::Authority,
        None => json.contains_key("sessionSequence"),
    };
    if !authority {
        return Ok(None);
    }
    crate::validate::check_ignored_envelope(&json)?;
    let envelope: AuthorityEnvelope = typed(&json)?;
    Ok(Some(Box::new(IgnoredAuthority {
        envelope,
        wire: Wire::new(bytes, json),
    })))
}

fn typed<'a, T: Deserialize<'a>>(json: &'a Map<String, Value>) -> Result<T, E> {
    T::deserialize(json).map_err(|e| {
        // Reached only if the validator and the typed model disagree.
        E::new(
            C::ModelMismatch,
            None,
            format!("typed model could not represent a valid record: {e}"),
        )
    })
}

fn build(kind: RecordKind, bytes: Bytes, json: Map<String, Value>) -> Result<Record, E> {
    Ok(match kind {
        RecordKind::Authority => {
            let envelope: AuthorityEnvelope = typed(&json)?;
            let payload: AuthorityPayload = typed(&json)?;
            Record::Authority(AuthorityEvent {
                envelope,
                payload,
                wire: Wire::new(bytes, json),
            })
        }
        RecordKind::Watch => {
            let envelope: WatchEnvelope = typed(&json)?;
            let payload: WatchPayload = typed(&json)?;
            Record::Watch(WatchEvent {
                envelope,
                payload,
                wire: Wire::new(bytes, json),
            })
        }
        RecordKind::Hydrate => {
            let payload: HydratePayload = typed(&json)?;
            let (protocol_version, timestamp) = envelope_strings(&json);
            Record::Hydrate(HydrateRecord {
                protocol_version,
                timestamp,
                payload,
                wire: Wire::new(bytes, json),
            })
        }
        RecordKind::Control => {
            let payload: ControlPayload = typed(&json)?;
            let (protocol_version, _) = envelope_strings(&json);
            Record::Control(ControlMessage {
                protocol_version,
                payload,
                wire: Wire::new(bytes, json),
            })
        }
    })
}

#[derive(serde::Serialize)]
struct Ordered<'a> {
    #[serde(rename = "type")]
    ty: &'a Value,
    #[serde(flatten)]
    envelope: &'a AuthorityEnvelope,
    #[serde(flatten)]
    body: &'a Map<String, Value>,
}

fn envelope_strings(json: &Map<String, Value>) -> (String, String) {
    let get = |k: &str| {
        json.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (get("protocolVersion"), get("timestamp"))
}

impl AuthorityEvent {
    /// Builds an authority event from its typed parts, serializes it once and
    /// validates the result, so a built event is exactly as valid as a parsed
    /// one and its [`Wire`] bytes are the bytes to append.
    ///
    /// ```
    /// use narad_core::model::{AuthorityEnvelope, AuthorityEvent, AuthorityPayload};
    /// let env = AuthorityEnvelope {
    ///     protocol_version: "narad/v1".into(), event_id: "e1".into(),
    ///     timestamp: "2026-08-05T00:00:00Z".into(), session_id: "s1".into(), session_sequence: 1,
    ///     workflow_id: None, workflow_sequence: None, root_run_id: Some("r1".into()),
    ///     run_id: Some("r1".into()), sequence: Some(1), parent_run_id: None,
    ///     parent_tool_call_id: None, node_id: None,
    /// };
    /// let ev = AuthorityEvent::new(env.clone(), AuthorityPayload::RunStarted { client_executor_id: None })?;
    /// assert!(std::str::from_utf8(ev.wire.bytes()).unwrap().contains(r#""type":"run.started""#));
    /// // Breaking a structural rule is refused at build time.
    /// let bad = AuthorityEnvelope { root_run_id: None, ..env };
    /// assert!(AuthorityEvent::new(bad, AuthorityPayload::RunStarted { client_executor_id: None }).is_err());
    /// # Ok::<(), narad_core::ValidationError>(())
    /// ```
    pub fn new(envelope: AuthorityEnvelope, payload: AuthorityPayload) -> Result<Self, E> {
        let mismatch =
            |e: serde_json::Error| E::new(C::ModelMismatch, None, format!("cannot serialize: {e}"));
        let Value::Object(mut body) = serde_json::to_value(&payload).map_err(mismatch)? else {
            return Err(E::new(
                C::ModelMismatch,
                None,
                "payload did not serialize to an object",
            ));
        };
        let ty = body.remove("type").unwrap_or(Value::Null);
        // Written in a fixed, readable order: `type`, the envelope in its
        // declaration order, then the body.
        let bytes = serde_json::to_vec(&Ordered {
            ty: &ty,
            envelope: &envelope,
            body: &body,
        })
        .map_err(mismatch)?;
        match Validator::default().parse_bytes(Bytes::from(bytes))? {
            Parsed::Record {
                record: Record::Authority(ev),
                ..
            } => Ok(ev),
            _ => Err(E::new(
                C::ModelMismatch,
                None,
                "built record is not an authority event",
            )),
        }
    }
}
