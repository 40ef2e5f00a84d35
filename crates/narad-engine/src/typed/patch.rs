//! RFC 6902 patches as a typed value, for state, UI and view deltas.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One RFC 6902 operation. `path` and `from` are JSON pointers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOp {
    /// Adds `value` at `path`.
    Add {
        /// Target.
        path: String,
        /// Value.
        value: Value,
    },
    /// Removes `path`.
    Remove {
        /// Target.
        path: String,
    },
    /// Replaces `path` with `value`.
    Replace {
        /// Target.
        path: String,
        /// Value.
        value: Value,
    },
    /// Moves `from` to `path`.
    Move {
        /// Source.
        from: String,
        /// Target.
        path: String,
    },
    /// Copies `from` to `path`.
    Copy {
        /// Source.
        from: String,
        /// Target.
        path: String,
    },
    /// Fails the patch unless `path` holds `value`.
    Test {
        /// Target.
        path: String,
        /// Expected value.
        value: Value,
    },
}

/// An RFC 6902 patch: operations applied in order.
///
/// ```
/// use narad_engine::Patch;
/// let p = Patch::new().replace("/status", "done").add("/items/-", 3);
/// assert_eq!(
///     serde_json::to_value(&p).unwrap(),
///     serde_json::json!([{"op": "replace", "path": "/status", "value": "done"},
///                        {"op": "add", "path": "/items/-", "value": 3}])
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Patch(pub Vec<PatchOp>);

impl Patch {
    /// An empty patch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `add`.
    pub fn add(mut self, path: impl Into<String>, value: impl Into<Value>) -> Self {
        self.0.push(PatchOp::Add {
            path: path.into(),
            value: value.into(),
        });
        self
    }

    /// Appends `remove`.
    pub fn remove(mut self, path: impl Into<String>) -> Self {
        self.0.push(PatchOp::Remove { path: path.into() });
        self
    }

    /// Appends `replace`.
    pub fn replace(mut self, path: impl Into<String>, value: impl Into<Value>) -> Self {
        self.0.push(PatchOp::Replace {
            path: path.into(),
            value: value.into(),
        });
        self
    }

    /// Appends `move`.
    pub fn move_to(mut self, from: impl Into<String>, path: impl Into<String>) -> Self {
        self.0.push(PatchOp::Move {
            from: from.into(),
            path: path.into(),
        });
        self
    }

    /// Appends `copy`.
    pub fn copy(mut self, from: impl Into<String>, path: impl Into<String>) -> Self {
        self.0.push(PatchOp::Copy {
            from: from.into(),
            path: path.into(),
        });
        self
    }

    /// Appends `test`.
    pub fn test(mut self, path: impl Into<String>, value: impl Into<Value>) -> Self {
        self.0.push(PatchOp::Test {
            path: path.into(),
            value: value.into(),
        });
        self
    }

    /// The wire array.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Array(Vec::new()))
    }
}
