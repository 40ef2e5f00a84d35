//! Typed validation errors with stable machine codes.

use std::fmt;

/// A stable, machine-readable reason a record was refused.
///
/// The string form ([`ValidationCode::as_str`]) is part of the public contract:
/// it never changes for an existing variant.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValidationCode {
    /// The record's bytes exceed [`crate::Limits::max_record_bytes`].
    RecordTooLarge,
    /// JSON nesting exceeds [`crate::Limits::max_depth`].
    NestingTooDeep,
    /// A string exceeds [`crate::Limits::max_string_bytes`].
    StringTooLong,
    /// An array exceeds [`crate::Limits::max_array_len`].
    ArrayTooLong,
    /// The bytes are not one JSON value.
    InvalidJson,
    /// An object repeats a member name (RFC 7493 §2.3), at any depth.
    DuplicateKey,
    /// The record is not a JSON object.
    NotAnObject,
    /// A required field is absent.
    MissingField,
    /// A field has the wrong JSON type.
    WrongType,
    /// A field has a value outside its allowed set or range.
    InvalidValue,
    /// `type` is not `dotted.lowercase`.
    InvalidTypeName,
    /// `protocolVersion` is not `narad/v1`.
    UnsupportedProtocolVersion,
    /// A timestamp is not an ISO-8601 / RFC 3339 UTC date-time.
    InvalidTimestamp,
    /// A field is present that this record class or scope forbids.
    ForbiddenField,
    /// A field is present without the field it depends on.
    DependentFieldMissing,
    /// The type is not defined by the core or by an active profile.
    UnknownType,
    /// A JSON Patch operation is malformed (RFC 6902).
    InvalidPatch,
    /// `revision` does not equal `baseRevision + 1`.
    RevisionMismatch,
    /// A watch cursor is malformed.
    InvalidCursor,
    /// An array that must hold unique items holds a duplicate.
    DuplicateItems,
    /// The typed model could not represent a record the validator accepted.
    /// This is a defect in narad-core, reported instead of panicking.
    ModelMismatch,
}

impl ValidationCode {
    /// The stable machine code, e.g. `missing_field`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RecordTooLarge => "record_too_large",
            Self::NestingTooDeep => "nesting_too_deep",
            Self::StringTooLong => "string_too_long",
            Self::ArrayTooLong => "array_too_long",
            Self::InvalidJson => "invalid_json",
            Self::DuplicateKey => "duplicate_key",
            Self::NotAnObject => "not_an_object",
            Self::MissingField => "missing_field",
            Self::WrongType => "wrong_type",
            Self::InvalidValue => "invalid_value",
            Self::InvalidTypeName => "invalid_type_name",
            Self::UnsupportedProtocolVersion => "unsupported_protocol_version",
            Self::InvalidTimestamp => "invalid_timestamp",
            Self::ForbiddenField => "forbidden_field",
            Self::DependentFieldMissing => "dependent_field_missing",
            Self::UnknownType => "unknown_type",
            Self::InvalidPatch => "invalid_patch",
            Self::RevisionMismatch => "revision_mismatch",
            Self::InvalidCursor => "invalid_cursor",
            Self::DuplicateItems => "duplicate_items",
            Self::ModelMismatch => "model_mismatch",
        }
    }
}

impl fmt::Display for ValidationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one record was refused: the record's type (when known), the field
/// (a JSON Pointer into the record, when one field is at fault), a stable
/// [`ValidationCode`] and a sanitized message.
///
/// Messages never echo field *values*, only names, so they are safe to show
/// to any caller.
///
/// ```
/// use narad_core::{Validator, ValidationCode};
/// let err = Validator::default()
///     .parse(br#"{"type":"run.started","protocolVersion":"narad/v2"}"#)
///     .unwrap_err();
/// assert_eq!(err.code, ValidationCode::UnsupportedProtocolVersion);
/// assert_eq!(err.field.as_deref(), Some("/protocolVersion"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ValidationError {
    /// Stable machine code.
    pub code: ValidationCode,
    /// The record's `type`, when it was readable.
    pub record_type: Option<String>,
    /// JSON Pointer of the offending field, when one field is at fault.
    pub field: Option<String>,
    /// Sanitized human-readable explanation.
    pub message: String,
}

impl ValidationError {
    pub(crate) fn new(
        code: ValidationCode,
        field: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code,
            record_type: None,
            field,
            message: message.into(),
        }
    }

    pub(crate) fn at(code: ValidationCode, field: &str, message: impl Into<String>) -> Self {
        Self::new(code, Some(format!("/{field}")), message)
    }

    pub(crate) fn with_type(mut self, ty: &str) -> Self {
        if self.record_type.is_none() {
            self.record_type = Some(ty.to_owned());
        }
        self
    }
}
