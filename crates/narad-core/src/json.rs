//! Strict JSON parsing: RFC 8259 text with the I-JSON rule of RFC 7493 §2.3,
//! object member names MUST NOT repeat, at any depth.
//!
//! `serde_json::Value` silently keeps the last of two equal names, so a
//! consumer that keeps the first would see a different record than the
//! engine did. Every record parse goes through [`from_slice_strict`], which
//! refuses the repeat while building the value: one pass, no second parse.
//!
//! ```
//! use narad_core::json::{from_slice_strict, JsonError};
//! assert!(from_slice_strict(br#"{"a":{"b":1,"c":2}}"#).is_ok());
//! let err = from_slice_strict(br#"{"a":{"b":1,"b":2}}"#).unwrap_err();
//! assert_eq!(err, JsonError::DuplicateKey { object: "/a".into(), member: "/a/b".into() });
//! ```

use crate::error::{ValidationCode, ValidationError};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// Why bytes are not one strict JSON value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// Not one JSON value (syntax, trailing bytes).
    #[error("not one JSON value (line {line}, column {column})")]
    Invalid {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The bytes begin with a UTF-8 byte order mark, which JSON text must
    /// not (RFC 8259 §8.1): a file saved by some Windows editors.
    #[error("begins with a UTF-8 byte order mark, which JSON text must not carry (RFC 8259 §8.1)")]
    ByteOrderMark,
    /// JSON nested deeper than the parser follows ([`MAX_PARSE_DEPTH`]
    /// arrays and objects, serde_json's limit).
    #[error("nesting deeper than {MAX_PARSE_DEPTH} (line {line}, column {column})")]
    TooDeep {
        /// 1-based line where the limit was passed.
        line: usize,
        /// 1-based column where the limit was passed.
        column: usize,
    },
    /// An object repeats a member name (RFC 7493 §2.3).
    #[error("{} repeats a member name (RFC 7493 §2.3)", describe(.object))]
    DuplicateKey {
        /// JSON Pointer (RFC 6901) of the object; empty for the top level.
        object: String,
        /// JSON Pointer of the repeated member.
        member: String,
    },
}

fn describe(object: &str) -> String {
    if object.is_empty() {
        "the top-level object".to_owned()
    } else {
        format!("the object at {object}")
    }
}

impl JsonError {
    /// The stable code: [`ValidationCode::InvalidJson`],
    /// [`ValidationCode::NestingTooDeep`] or [`ValidationCode::DuplicateKey`].
    pub const fn code(&self) -> ValidationCode {
        match self {
            Self::Invalid { .. } | Self::ByteOrderMark => ValidationCode::InvalidJson,
            Self::TooDeep { .. } => ValidationCode::NestingTooDeep,
            Self::DuplicateKey { .. } => ValidationCode::DuplicateKey,
        }
    }
}

impl From<JsonError> for ValidationError {
    fn from(e: JsonError) -> Self {
        let field = match &e {
            JsonError::Invalid { .. } | JsonError::ByteOrderMark | JsonError::TooDeep { .. } => {
                None
            }
            JsonError::DuplicateKey { member, .. } => Some(member.clone()),
        };
        ValidationError::new(e.code(), field, e.to_string())
    }
}

/// Parses exactly one JSON value from `bytes`, refusing any object that
/// repeats a member name at any depth. Otherwise equal to
/// `serde_json::from_slice::<Value>` (same numbers, same nesting limit).
pub fn from_slice_strict(bytes: &[u8]) -> Result<Value, JsonError> {
    let trail = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict(&trail)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    parsed.map_err(|e| match trail.into_inner() {
        Some(mut segments) => {
            // Segments were pushed innermost first, while the error unwound.
            segments.reverse();
            let member: String = segments.iter().map(|s| format!("/{s}")).collect();
            let object_len = member.len() - segments.last().map_or(0, |s| s.len() + 1);
            JsonError::DuplicateKey {
                object: member[..object_len].to_owned(),
                member,
            }
        }
        None if bytes.starts_with(b"\xEF\xBB\xBF") => JsonError::ByteOrderMark,
        // Deep nesting is well-formed JSON, not a syntax error: its own
        // code. serde_json reports it as a syntax error whose message is
        // the only mark (pinned by a test below).
        None if e.to_string().starts_with("recursion limit exceeded") => JsonError::TooDeep {
            line: e.line(),
            column: e.column(),
        },
        None => JsonError::Invalid {
            line: e.line(),
            column: e.column(),
        },
    })
}

/// How deeply nested arrays and objects [`from_slice_strict`] follows
/// (serde_json's recursion limit of 128 counts down to zero, so 127
/// levels parse); deeper is [`JsonError::TooDeep`].
pub const MAX_PARSE_DEPTH: usize = 127;

/// A JSON value parsed strictly (no repeated member names at any depth) as
/// a member of a larger document; the error carries no pointer, so it is
/// only for a caller that falls back to [`from_slice_strict`] to report.
pub(crate) struct StrictValue(pub(crate) Value);

impl<'de> de::Deserialize<'de> for StrictValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let trail = RefCell::new(None);
        Strict(&trail).deserialize(d).map(StrictValue)
    }
}

/// The pointer segments of a repeated member, innermost first; `None`
/// unless a repeat was found. Written only on the error path.
type Trail = RefCell<Option<Vec<String>>>;

#[derive(Clone, Copy)]
struct Strict<'t>(&'t Trail);

impl Strict<'_> {
    /// Adds the enclosing segment to a repeat that is unwinding.
    fn enclose(self, segment: impl FnOnce() -> String) {
        if let Some(segments) = self.0.borrow_mut().as_mut() {
            segments.push(segment());
        }
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            match seq.next_element_seed(self) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => return Ok(Value::Array(items)),
                Err(e) => {
                    let i = items.len();
                    self.enclose(|| i.to_string());
                    return Err(e);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match map.next_value_seed(self) {
                Ok(v) => v,
                Err(e) => {
                    self.enclose(|| escape(&key));
                    return Err(e);
                }
            };
            match out.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(slot) => {
                    *self.0.borrow_mut() = Some(vec![escape(slot.key())]);
                    return Err(de::Error::custom("repeated member name"));
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_named() {
        let err = from_slice_strict(b"\xEF\xBB\xBF{\"a\":1}").unwrap_err();
        assert_eq!(err, JsonError::ByteOrderMark);
        assert_eq!(err.code(), ValidationCode::InvalidJson);
        assert!(err.to_string().contains("byte order mark"), "{err}");
    }

    #[test]
    fn nesting_past_the_parse_limit_is_too_deep_not_invalid() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(from_slice_strict(nested(MAX_PARSE_DEPTH).as_bytes()).is_ok());
        let deep = from_slice_strict(nested(MAX_PARSE_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(
            matches!(deep, JsonError::TooDeep { line: 1, .. }),
            "{deep:?}"
        );
        assert_eq!(deep.code(), ValidationCode::NestingTooDeep);
        let objects = format!("{}1{}", r#"{"a":"#.repeat(500), "}".repeat(500));
        assert_eq!(
            from_slice_strict(objects.as_bytes()).unwrap_err().code(),
            ValidationCode::NestingTooDeep
        );
        // A syntax error inside deep nesting is still a syntax error.
        let broken = format!("{}x", "[".repeat(10));
        assert_eq!(
            from_slice_strict(broken.as_bytes()).unwrap_err().code(),
            ValidationCode::InvalidJson
        );
    }

    fn dup(bytes: &[u8]) -> (String, String) {
        match from_slice_strict(bytes) {
            Err(JsonError::DuplicateKey { object, member }) => (object, member),
            other => panic!("expected a duplicate key, got {other:?}"),
        }
    }

    #[test]
    fn equals_serde_json_on_unique_names() {
        for text in [
            r#"{"a":[1,-2,3.5,1e400,null,true,"x\u0000y",{"b":{}}],"c":"\ud83d\ude00"}"#,
            "[]",
            "12345678901234567890",
            r#""~/""#,
        ] {
            let ours = from_slice_strict(text.as_bytes()).ok();
            let theirs = serde_json::from_slice::<Value>(text.as_bytes()).ok();
            assert_eq!(ours, theirs, "{text}");
        }
    }

    #[test]
    fn repeated_names_are_refused_at_every_depth() {
        assert_eq!(dup(br#"{"a":1,"a":1}"#), ("".into(), "/a".into()));
        assert_eq!(
            dup(br#"{"x":[0,{"y":{"k/~":1,"k/~":2}}]}"#),
            ("/x/1/y".into(), "/x/1/y/k~1~0".into())
        );
        // Equal after unescaping is equal.
        assert_eq!(dup(br#"{"a":1,"\u0061":2}"#), ("".into(), "/a".into()));
    }

    #[test]
    fn the_message_names_the_object_never_a_value() {
        let err = from_slice_strict(br#"{"p":{"secret":"hunter2","secret":"x"}}"#).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/p") && !text.contains("hunter2"), "{text}");
        let v: ValidationError = err.into();
        assert_eq!(v.code, ValidationCode::DuplicateKey);
        assert_eq!(v.field.as_deref(), Some("/p/secret"));
    }

    #[test]
    fn syntax_errors_stay_invalid_json() {
        for text in ["{", r#"{"a":1}x"#, "", r#"{"a":1,"a""#] {
            let err = from_slice_strict(text.as_bytes()).unwrap_err();
            assert_eq!(err.code(), ValidationCode::InvalidJson, "{text}");
        }
    }
}
