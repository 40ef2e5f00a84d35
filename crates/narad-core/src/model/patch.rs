use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One RFC 6902 JSON Patch operation, as carried by `state.delta`,
/// `ui.state.delta`, `view.updated` and `graph.delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchOp {
    /// The operation.
    pub op: PatchOpKind,
    /// Target location (JSON Pointer).
    pub path: String,
    /// Source location for `move` and `copy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Value for `add`, `replace` and `test` (may be JSON `null`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::present"
    )]
    pub value: Option<Value>,
}

/// RFC 6902 operation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatchOpKind {
    /// `add`
    Add,
    /// `remove`
    Remove,
    /// `replace`
    Replace,
    /// `move`
    Move,
    /// `copy`
    Copy,
    /// `test`
    Test,
}
