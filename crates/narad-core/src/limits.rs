//! Limits against hostile input.

use crate::error::{ValidationCode, ValidationError};
use serde_json::Value;

/// Bounds applied to every record before any other check.
///
/// Defaults follow the upstream client (event 512,000 bytes, JSON depth 64)
/// and add string and array bounds so a single record cannot make a reader
/// allocate without limit.
///
/// ```
/// use narad_core::{Limits, Validator, ValidatorConfig, ValidationCode};
/// let tight = Validator::new(ValidatorConfig { limits: Limits { max_record_bytes: 16, ..Limits::default() }, ..ValidatorConfig::default() });
/// let err = tight.parse(br#"{"type":"run.started","protocolVersion":"narad/v1"}"#).unwrap_err();
/// assert_eq!(err.code, ValidationCode::RecordTooLarge);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted record, in bytes of its JSON text.
    pub max_record_bytes: usize,
    /// Deepest accepted nesting of arrays and objects (the record itself is depth 1).
    pub max_depth: usize,
    /// Longest accepted string (keys included), in bytes.
    pub max_string_bytes: usize,
    /// Longest accepted array, in elements.
    pub max_array_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_record_bytes: 512_000,
            max_depth: 64,
            max_string_bytes: 256_000,
            max_array_len: 10_000,
        }
    }
}

impl Limits {
    /// Checks a parsed value against the depth, string and array bounds.
    ///
    /// Iterative, so hostile nesting cannot overflow the stack. (serde_json
    /// itself refuses nesting past 128 while parsing.)
    pub fn check_value(&self, value: &Value) -> Result<(), ValidationError> {
        match self.check_flat(value) {
            Some(checked) => checked,
            None => self.check_stacked(value),
        }
    }

    /// [`Self::check_value`] of any value, with a stack.
    fn check_stacked(&self, value: &Value) -> Result<(), ValidationError> {
        let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
        while let Some((v, depth)) = stack.pop() {
            match v {
                Value::String(s) => self.check_string(s)?,
                Value::Array(items) => {
                    self.check_depth(depth)?;
                    self.check_len(items.len())?;
                    stack.extend(items.iter().map(|i| (i, depth + 1)));
                }
                Value::Object(map) => {
                    self.check_depth(depth)?;
                    for (k, item) in map {
                        self.check_string(k)?;
                        stack.push((item, depth + 1));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// [`Self::check_value`] of a scalar, or of a container that holds only
    /// scalars (most payloads), without the stack: its members in the
    /// stack's order (the last first), so the same violation is named
    /// first. `None` for a deeper value.
    fn check_flat(&self, value: &Value) -> Option<Result<(), ValidationError>> {
        let scalar = |v: &Value| !matches!(v, Value::Array(_) | Value::Object(_));
        let check = |v: &Value| match v {
            Value::String(s) => self.check_string(s),
            _ => Ok(()),
        };
        match value {
            Value::Array(items) if items.iter().all(scalar) => Some((|| {
                self.check_depth(1)?;
                self.check_len(items.len())?;
                items.iter().rev().try_for_each(check)
            })()),
            Value::Object(map) if map.values().all(scalar) => Some((|| {
                self.check_depth(1)?;
                // The keys are checked as the object is met, then its
                // members as they leave the stack, the last first.
                map.keys().try_for_each(|k| self.check_string(k))?;
                map.values().rev().try_for_each(check)
            })()),
            Value::Array(_) | Value::Object(_) => None,
            v => Some(check(v)),
        }
    }

    /// The error for JSON nested past what the parser follows
    /// ([`crate::json::MAX_PARSE_DEPTH`]): past this limit too, which it
    /// names when it is the lower one.
    ///
    /// ```
    /// use narad_core::{Limits, ValidationCode};
    /// let e = Limits::default().too_deep();
    /// assert_eq!((e.code, e.message.as_str()), (ValidationCode::NestingTooDeep, "nesting deeper than 64"));
    /// ```
    pub fn too_deep(&self) -> ValidationError {
        ValidationError::new(
            ValidationCode::NestingTooDeep,
            None,
            format!(
                "nesting deeper than {}",
                self.max_depth.min(crate::json::MAX_PARSE_DEPTH)
            ),
        )
    }

    /// A record's parse error under these limits: nesting past what the
    /// parser follows is [`Limits::too_deep`], naming this limit as the
    /// depth check does; any other error as it is.
    pub fn json_error(&self, e: crate::json::JsonError) -> ValidationError {
        match e {
            crate::json::JsonError::TooDeep { .. } => self.too_deep(),
            e => e.into(),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), ValidationError> {
        if depth > self.max_depth {
            return Err(ValidationError::new(
                ValidationCode::NestingTooDeep,
                None,
                format!("nesting deeper than {}", self.max_depth),
            ));
        }
        Ok(())
    }

    fn check_len(&self, len: usize) -> Result<(), ValidationError> {
        if len > self.max_array_len {
            return Err(ValidationError::new(
                ValidationCode::ArrayTooLong,
                None,
                format!("an array holds more than {} items", self.max_array_len),
            ));
        }
        Ok(())
    }

    fn check_string(&self, s: &str) -> Result<(), ValidationError> {
        if s.len() > self.max_string_bytes {
            return Err(ValidationError::new(
                ValidationCode::StringTooLong,
                None,
                format!("a string is longer than {} bytes", self.max_string_bytes),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The stackless path names the same violation as the stack walk, for
    /// flat values holding several violations at once, and deeper ones.
    #[test]
    fn flat_values_are_checked_as_the_stack_checks_them() {
        let tight = Limits {
            max_record_bytes: 512,
            max_depth: 2,
            max_string_bytes: 3,
            max_array_len: 2,
        };
        let long = "long";
        let values = [
            json!(long),
            json!(7),
            json!(null),
            json!({}),
            json!([]),
            json!({"a": long, "b": 1}),
            json!({"long": "x", "b": long}),
            json!({"a": "x", "long": 1}),
            json!([long, 1, 2]),
            json!(["x", long]),
            json!([1, 2, 3]),
            json!({"a": [long], "b": long}),
            json!({"a": {"b": {"c": 1}}}),
            json!([[1, 2, 3], long]),
        ];
        for limits in [tight, Limits::default()] {
            for v in &values {
                assert_eq!(limits.check_value(v), limits.check_stacked(v), "{v}");
            }
        }
        let flat = values.iter().filter(|v| tight.check_flat(v).is_some());
        assert!(flat.count() >= 10, "most cases take the stackless path");
        assert!(tight.check_value(&values[6]).is_err());
    }
}
