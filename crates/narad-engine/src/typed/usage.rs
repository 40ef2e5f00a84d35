//! The typed `usage` object of the run terminals (§7.5).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::EngineError;

/// Token usage of a run, as the run terminals carry it (§7.5): the
/// counters of the schema plus `elapsedMs`, with any other key kept in
/// [`Usage::extra`]. A snake_case key (`input_tokens`) is refused when
/// the usage is recorded: the wire is camelCase.
///
/// ```
/// use narad_engine::Usage;
/// let u = Usage::tokens(120, 45).elapsed_ms(900);
/// assert_eq!(u.total_tokens, Some(165));
/// let v = serde_json::to_value(&u).unwrap();
/// assert_eq!(v["promptTokens"], 120);
/// assert!(Usage::from_value(&serde_json::json!({"input_tokens": 3})).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt (input) tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion (output) tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Wall time of the run, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Implementation-defined additive fields (camelCase keys).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Usage {
    /// Prompt and completion tokens, with their total.
    pub fn tokens(prompt: u64, completion: u64) -> Self {
        Self {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            total_tokens: prompt.checked_add(completion),
            ..Self::default()
        }
    }

    /// Sets `elapsedMs`.
    pub fn elapsed_ms(mut self, ms: u64) -> Self {
        self.elapsed_ms = Some(ms);
        self
    }

    /// Adds an implementation-defined field.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// The sum of two usages (counters added, absent counters kept absent
    /// only when both are; extra fields of `other` win).
    pub fn add(&self, other: &Usage) -> Usage {
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        let mut extra = self.extra.clone();
        extra.extend(other.extra.clone());
        Usage {
            prompt_tokens: sum(self.prompt_tokens, other.prompt_tokens),
            completion_tokens: sum(self.completion_tokens, other.completion_tokens),
            total_tokens: sum(self.total_tokens, other.total_tokens),
            elapsed_ms: sum(self.elapsed_ms, other.elapsed_ms),
            extra,
        }
    }

    /// Reads a journaled `usage` object; refuses snake_case keys and
    /// counters that are not unsigned integers.
    pub fn from_value(v: &Value) -> Result<Usage, EngineError> {
        check_usage(v)?;
        serde_json::from_value(v.clone()).map_err(|_| {
            EngineError::InvalidCommand("usage counters must be unsigned integers".into())
        })
    }

    /// The wire object.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

/// Refuses a `usage` value that is not an object or holds a snake_case
/// key, naming the camelCase key to use instead.
pub(crate) fn check_usage(v: &Value) -> Result<(), EngineError> {
    let Some(m) = v.as_object() else {
        return Err(EngineError::InvalidCommand(
            "usage must be an object".into(),
        ));
    };
    for k in m.keys() {
        if k.contains('_') {
            return Err(EngineError::InvalidCommand(format!(
                "usage key `{k}` is snake_case; the wire is camelCase (`{}`)",
                camel(k)
            )));
        }
    }
    Ok(())
}

fn camel(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let mut up = false;
    for c in k.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_are_kept_and_snake_case_is_flagged() {
        let u = Usage::from_value(&json!({"promptTokens": 1, "cachedTokens": 7})).unwrap();
        assert_eq!(u.prompt_tokens, Some(1));
        assert_eq!(u.extra["cachedTokens"], 7);
        assert_eq!(u.to_value(), json!({"promptTokens": 1, "cachedTokens": 7}));
        let e = Usage::from_value(&json!({"input_tokens": 3})).unwrap_err();
        assert!(e.to_string().contains("`inputTokens`"), "{e}");
        assert_eq!(e.code(), "invalid_command");
    }
}
