//! Structural validation of single records (§5, §7–§11 and the schemas).
//!
//! The checks mirror the published JSON Schemas field for field; the few
//! rules the prose states and the schemas do not are listed, with their
//! reasons, in `conformance/NOTES.md`. Lifecycle and ordering rules that need
//! more than one record belong to the reducer, not here.
//!
//! This module holds the entry point ([`Validator`]) and the dispatch by
//! record class; each class's rules live in their own submodule (`core_authority`,
//! `profile`, `watch`, `hydrate`, `control`), over the shared `envelope`
//! field groups, the `fields` accessor and the string `syntax` checks.

mod control;
mod core_authority;
mod envelope;
mod fields;
mod hydrate;
mod profile;
mod syntax;
mod watch;

pub(crate) use envelope::check_ignored_envelope;
pub(crate) use syntax::is_extension_name;
pub use syntax::{is_dotted_lowercase, is_json_pointer};

use control::check_control;
use core_authority::check_core_authority;
use fields::Fields;
use hydrate::check_hydrate;
use profile::check_profile_authority;
use watch::check_watch;

use crate::error::{ValidationCode as C, ValidationError as E};
use crate::limits::Limits;
use crate::registry::{self, Profile, ProfileSet, RecordClass, TypeInfo};
use serde_json::{Map, Value};

/// The only protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "narad/v1";

/// What a [`Validator`] accepts: limits and active profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ValidatorConfig {
    /// Bounds against hostile input.
    pub limits: Limits,
    /// Negotiated profiles; events of other profiles are [`Verdict::Ignorable`].
    pub profiles: ProfileSet,
}

/// The outcome of validating one record that is not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Structurally valid; `class` is the record's effective class.
    Valid {
        /// Registry entry of the type.
        info: &'static TypeInfo,
        /// Effective class (refined by `scope` where the type has one).
        class: RecordClass,
    },
    /// The record belongs to a profile that is not active: ignore it.
    Ignorable {
        /// The inactive profile.
        profile: Profile,
    },
}

/// Validates records against Narad v1's structural rules.
///
/// ```
/// use narad_core::{Validator, Verdict};
/// let v = Validator::default();
/// let event = serde_json::json!({
///     "type": "run.started", "protocolVersion": "narad/v1", "eventId": "e1",
///     "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s1", "sessionSequence": 1,
///     "rootRunId": "r1", "runId": "r1", "sequence": 1
/// });
/// assert!(matches!(v.check(&event), Ok(Verdict::Valid { .. })));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Validator {
    config: ValidatorConfig,
}

impl Validator {
    /// A validator with the given configuration.
    pub const fn new(config: ValidatorConfig) -> Self {
        Self { config }
    }

    /// The configuration.
    pub const fn config(&self) -> &ValidatorConfig {
        &self.config
    }

    /// Validates one parsed JSON value. Limits apply too.
    pub fn check(&self, value: &Value) -> Result<Verdict, E> {
        self.config.limits.check_value(value)?;
        let map = value
            .as_object()
            .ok_or_else(|| E::new(C::NotAnObject, None, "a record must be a JSON object"))?;
        self.check_object(map)
    }

    /// Validates one JSON object, limits excepted (see [`Limits::check_value`]).
    pub fn check_object(&self, map: &Map<String, Value>) -> Result<Verdict, E> {
        let f = Fields(map);
        let ty = f.req_text("type")?;
        if !is_dotted_lowercase(ty) {
            return Err(
                E::at(C::InvalidTypeName, "type", "type must be dotted.lowercase").with_type(ty),
            );
        }
        check_protocol_version(&f).map_err(|e| e.with_type(ty))?;
        let Some(info) = registry::lookup(ty) else {
            let profile = Profile::of_family(ty);
            if !self.config.profiles.contains(profile) {
                return Ok(Verdict::Ignorable { profile });
            }
            return Err(E::at(
                C::UnknownType,
                "type",
                format!("unknown type under active profile {profile}"),
            )
            .with_type(ty));
        };
        if !self.config.profiles.contains(info.profile) {
            return Ok(Verdict::Ignorable {
                profile: info.profile,
            });
        }
        let class = check_type(info, &f).map_err(|e| e.with_type(ty))?;
        Ok(Verdict::Valid { info, class })
    }
}

fn check_protocol_version(f: &Fields<'_>) -> Result<(), E> {
    match f.0.get("protocolVersion") {
        None => Err(E::at(
            C::MissingField,
            "protocolVersion",
            "protocolVersion is required",
        )),
        Some(Value::String(s)) if s == PROTOCOL_VERSION => Ok(()),
        Some(Value::String(_)) => Err(E::at(
            C::UnsupportedProtocolVersion,
            "protocolVersion",
            "unsupported protocolVersion; this implementation speaks narad/v1",
        )),
        Some(_) => Err(E::at(
            C::WrongType,
            "protocolVersion",
            "protocolVersion must be a string",
        )),
    }
}

fn check_type(info: &TypeInfo, f: &Fields<'_>) -> Result<RecordClass, E> {
    use RecordClass as K;
    let ty = info.name;
    match info.class {
        K::Hydrate => {
            check_hydrate(ty, f)?;
            return Ok(K::Hydrate);
        }
        K::Control => {
            check_control(ty, f)?;
            return Ok(K::Control);
        }
        _ => {}
    }
    f.req_str("eventId")?;
    f.req_ts("timestamp")?;
    match info.class {
        K::SessionWatch | K::RunWatch | K::WorkflowWatch | K::NodeWatch | K::WorkspaceWatch => {
            check_watch(ty, f)?;
            Ok(info.class)
        }
        _ if info.profile == Profile::Core => check_core_authority(ty, f),
        _ => check_profile_authority(ty, f),
    }
}
