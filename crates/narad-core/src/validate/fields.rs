//! The `Fields` accessor: typed reads of one JSON object's fields, each error naming its field.

use super::syntax::is_json_pointer;
use crate::error::{ValidationCode as C, ValidationError as E};
use crate::timestamp::is_utc_timestamp;
use serde_json::{Map, Value};

/// Prefixes the field pointer of `e` with `parent`, for a check made inside
/// a nested object.
pub(super) fn nest(mut e: E, parent: &str) -> E {
    e.field = Some(match e.field {
        Some(f) => format!("/{parent}{f}"),
        None => format!("/{parent}"),
    });
    e
}

/// Checked reads of one JSON object's fields; each error names its field.
pub(super) struct Fields<'a>(pub(super) &'a Map<String, Value>);

impl<'a> Fields<'a> {
    pub(super) fn req(&self, k: &str) -> Result<&'a Value, E> {
        self.0
            .get(k)
            .ok_or_else(|| E::at(C::MissingField, k, format!("{k} is required")))
    }

    pub(super) fn req_present(&self, k: &str) -> Result<(), E> {
        self.req(k).map(drop)
    }

    fn text(k: &str, v: &'a Value) -> Result<&'a str, E> {
        v.as_str()
            .ok_or_else(|| E::at(C::WrongType, k, format!("{k} must be a string")))
    }

    fn non_empty(k: &str, s: &'a str) -> Result<&'a str, E> {
        if s.is_empty() {
            return Err(E::at(C::InvalidValue, k, format!("{k} must not be empty")));
        }
        Ok(s)
    }

    /// Required string, possibly empty.
    pub(super) fn req_text(&self, k: &str) -> Result<&'a str, E> {
        Self::text(k, self.req(k)?)
    }

    /// Required non-empty string.
    pub(super) fn req_str(&self, k: &str) -> Result<&'a str, E> {
        Self::non_empty(k, self.req_text(k)?)
    }

    pub(super) fn opt_text(&self, k: &str) -> Result<Option<&'a str>, E> {
        self.0.get(k).map(|v| Self::text(k, v)).transpose()
    }

    pub(super) fn opt_str(&self, k: &str) -> Result<Option<&'a str>, E> {
        self.opt_text(k)?.map(|s| Self::non_empty(k, s)).transpose()
    }

    fn uint(k: &str, v: &Value, min: u64) -> Result<u64, E> {
        let Value::Number(n) = v else {
            return Err(E::at(C::WrongType, k, format!("{k} must be an integer")));
        };
        match (n.as_u64(), n.is_i64()) {
            (Some(x), _) if x >= min => Ok(x),
            (Some(_), _) | (None, true) => Err(E::at(
                C::InvalidValue,
                k,
                format!("{k} must be at least {min}"),
            )),
            (None, false) => Err(E::at(C::WrongType, k, format!("{k} must be an integer"))),
        }
    }

    pub(super) fn req_uint(&self, k: &str, min: u64) -> Result<u64, E> {
        Self::uint(k, self.req(k)?, min)
    }

    pub(super) fn opt_uint(&self, k: &str, min: u64) -> Result<Option<u64>, E> {
        self.0.get(k).map(|v| Self::uint(k, v, min)).transpose()
    }

    fn one_of(k: &str, v: &'a Value, allowed: &[&str]) -> Result<&'a str, E> {
        match v.as_str() {
            Some(s) if allowed.contains(&s) => Ok(s),
            _ => Err(E::at(
                C::InvalidValue,
                k,
                format!("{k} must be one of {}", allowed.join(", ")),
            )),
        }
    }

    pub(super) fn req_enum(&self, k: &str, allowed: &[&str]) -> Result<&'a str, E> {
        Self::one_of(k, self.req(k)?, allowed)
    }

    pub(super) fn opt_enum(&self, k: &str, allowed: &[&str]) -> Result<Option<&'a str>, E> {
        self.0
            .get(k)
            .map(|v| Self::one_of(k, v, allowed))
            .transpose()
    }

    fn ts(k: &str, v: &'a Value) -> Result<(), E> {
        let s = Self::text(k, v)?;
        if !is_utc_timestamp(s) {
            return Err(E::at(
                C::InvalidTimestamp,
                k,
                format!("{k} must be an ISO-8601 UTC date-time"),
            ));
        }
        Ok(())
    }

    pub(super) fn req_ts(&self, k: &str) -> Result<(), E> {
        Self::ts(k, self.req(k)?)
    }

    pub(super) fn opt_ts(&self, k: &str) -> Result<(), E> {
        self.0.get(k).map_or(Ok(()), |v| Self::ts(k, v))
    }

    pub(super) fn forbid(&self, k: &str, why: &str) -> Result<(), E> {
        if self.0.contains_key(k) {
            return Err(E::at(C::ForbiddenField, k, why.to_owned()));
        }
        Ok(())
    }

    pub(super) fn depends(&self, k: &str, needs: &str) -> Result<(), E> {
        if self.0.contains_key(k) && !self.0.contains_key(needs) {
            return Err(E::at(
                C::DependentFieldMissing,
                needs,
                format!("{k} requires {needs}"),
            ));
        }
        Ok(())
    }

    pub(super) fn req_array(&self, k: &str) -> Result<&'a Vec<Value>, E> {
        self.req(k)?
            .as_array()
            .ok_or_else(|| E::at(C::WrongType, k, format!("{k} must be an array")))
    }

    fn str_array(k: &str, v: &'a Value, min: usize, unique: bool) -> Result<(), E> {
        let items = v
            .as_array()
            .ok_or_else(|| E::at(C::WrongType, k, format!("{k} must be an array")))?;
        if items.len() < min {
            return Err(E::at(
                C::InvalidValue,
                k,
                format!("{k} must hold at least {min} item(s)"),
            ));
        }
        // A set, not a scan of the earlier items: 10,000 items stay linear.
        let mut seen =
            std::collections::HashSet::with_capacity(if unique { items.len() } else { 0 });
        for (i, item) in items.iter().enumerate() {
            let Some(text) = item.as_str().filter(|s| !s.is_empty()) else {
                let at = format!("{k}/{i}");
                return Err(match item {
                    Value::String(_) => {
                        E::at(C::InvalidValue, &at, format!("{at} must not be empty"))
                    }
                    _ => E::at(C::WrongType, &at, format!("{at} must be a string")),
                });
            };
            if unique && !seen.insert(text) {
                return Err(E::at(
                    C::DuplicateItems,
                    &format!("{k}/{i}"),
                    format!("{k} must not repeat an item"),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn req_str_array(&self, k: &str, min: usize, unique: bool) -> Result<(), E> {
        Self::str_array(k, self.req(k)?, min, unique)
    }

    pub(super) fn opt_str_array(&self, k: &str, min: usize, unique: bool) -> Result<(), E> {
        self.0
            .get(k)
            .map_or(Ok(()), |v| Self::str_array(k, v, min, unique))
    }

    /// RFC 6902 patch: an array of operations, each with a known `op`, a
    /// JSON Pointer `path`, `from` for move/copy and `value` for add/replace/test.
    pub(super) fn req_patch(&self, k: &str) -> Result<(), E> {
        let ops = self.req_array(k)?;
        for (i, op) in ops.iter().enumerate() {
            let at = format!("{k}/{i}");
            let bad = |msg: &str| E::at(C::InvalidPatch, &at, msg.to_owned());
            let o = op
                .as_object()
                .ok_or_else(|| bad("a patch operation must be an object"))?;
            let name = match o.get("op").and_then(Value::as_str) {
                Some(n @ ("add" | "remove" | "replace" | "move" | "copy" | "test")) => n,
                _ => return Err(bad("op must be add, remove, replace, move, copy or test")),
            };
            for key in ["path", "from"] {
                match o.get(key) {
                    Some(Value::String(p)) if is_json_pointer(p) => {}
                    None if key == "from" => {}
                    _ => return Err(bad(&format!("{key} must be a JSON Pointer"))),
                }
            }
            if matches!(name, "move" | "copy") && !o.contains_key("from") {
                return Err(bad("move and copy require from"));
            }
            if matches!(name, "add" | "replace" | "test") && !o.contains_key("value") {
                return Err(bad("add, replace and test require value"));
            }
        }
        Ok(())
    }
}
