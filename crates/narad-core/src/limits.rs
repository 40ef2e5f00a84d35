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
        let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
        while let Some((v, depth)) = stack.pop() {
            match v {
                Value::String(s) => self.check_string(s)?,
                Value::Array(items) => {
                    self.check_depth(depth)?;
                    if items.len() > self.max_array_len {
                        return Err(ValidationError::new(
                            ValidationCode::ArrayTooLong,
                            None,
                            format!("an array holds more than {} items", self.max_array_len),
                        ));
                    }
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
