//! A hydrate record's large top-level arrays split out, so that Python
//! parses them a slice at a time between loop turns. A long session's
//! `messages.snapshot` holds every message in one array: one `json.loads`
//! of it (11.5 MB at 100k messages) held the event loop for about 76 ms.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// From this many items on, an array is split out.
pub const SPLIT_ITEMS: usize = 512;

/// A record as Python rebuilds it: `base` is the JSON object with `null`
/// in place of each split array; each array is its key, its items' exact
/// bytes joined by commas (so any run of whole items, in brackets, is one
/// JSON array), and each item's end offset as a native-endian `u64`
/// (Python reads them with `memoryview(ends).cast("Q")`).
#[derive(Debug, PartialEq)]
pub struct Split {
    pub base: Vec<u8>,
    pub arrays: Vec<(String, Vec<u8>, Vec<u8>)>,
}

/// An object's members in their order, values as their exact text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = m.next_entry::<String, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// `raw` with its top-level arrays of [`SPLIT_ITEMS`] items or more split
/// out; `None` when it holds none, or is not a JSON object (Python then
/// parses `raw` itself, and meets any error there).
pub fn split(raw: &[u8]) -> Option<Split> {
    let Members(members) = serde_json::from_slice(raw).ok()?;
    let mut base = Vec::with_capacity(256);
    let mut arrays = Vec::new();
    base.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            base.push(b',');
        }
        serde_json::to_writer(&mut base, key).ok()?;
        base.push(b':');
        let text = value.get();
        let items = match text.starts_with('[') {
            true => serde_json::from_str::<Vec<&RawValue>>(text).ok(),
            false => None,
        };
        match items {
            Some(items) if items.len() >= SPLIT_ITEMS => {
                base.extend_from_slice(b"null");
                let mut blob = Vec::with_capacity(text.len());
                let mut ends = Vec::with_capacity(items.len() * 8);
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        blob.push(b',');
                    }
                    blob.extend_from_slice(item.get().as_bytes());
                    ends.extend_from_slice(&(blob.len() as u64).to_ne_bytes());
                }
                arrays.push((key.clone(), blob, ends));
            }
            _ => base.extend_from_slice(text.as_bytes()),
        }
    }
    base.push(b'}');
    (!arrays.is_empty()).then_some(Split { base, arrays })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The record Python rebuilds from a split.
    fn rebuild(s: &Split) -> Value {
        let mut v: Value = serde_json::from_slice(&s.base).unwrap_or_default();
        for (key, blob, ends) in &s.arrays {
            let mut start = 0;
            let mut items = Vec::new();
            for end in ends.chunks(8) {
                let end = u64::from_ne_bytes(end.try_into().unwrap_or_default()) as usize;
                items.push(serde_json::from_slice::<Value>(&blob[start..end]).unwrap_or_default());
                start = end + 1;
            }
            // Whole items in brackets are one array.
            let all = [b"[", &blob[..], b"]"].concat();
            assert_eq!(
                serde_json::from_slice::<Vec<Value>>(&all).ok().as_ref(),
                Some(&items)
            );
            v[key.as_str()] = Value::Array(items);
        }
        v
    }

    #[test]
    fn a_split_record_rebuilds_exactly_in_its_key_order() {
        let messages: Vec<Value> = (0..SPLIT_ITEMS + 3)
            .map(|i| json!({"messageId": format!("m{i}"), "content": "é \"q\" \\ \u{1F600}\n", "n": 1e300}))
            .collect();
        // Keys out of sorted order, as a record may hold them.
        let raw = format!(
            r#"{{"type":"messages.snapshot","messages":{},"small":[1,2,3],"after":{{"k":"v"}},"big":12345678901234567890}}"#,
            serde_json::to_string(&messages).unwrap_or_default()
        );
        let raw = raw.into_bytes();
        let record: Value = serde_json::from_slice(&raw).unwrap_or_default();
        let s = split(&raw).unwrap_or_else(|| panic!("a large array is split"));
        assert_eq!(s.arrays.len(), 1);
        assert_eq!(s.arrays[0].0, "messages");
        assert_eq!(rebuild(&s), record);
        // The base keeps every key in place, the split one as `null`.
        let base = String::from_utf8_lossy(&s.base);
        assert!(
            base.starts_with(r#"{"type":"messages.snapshot","messages":null,"small":[1,2,3]"#),
            "{base}"
        );
        // Each item is its exact text.
        let first = &s.arrays[0].1[..usize::try_from(u64::from_ne_bytes(
            s.arrays[0].2[..8].try_into().unwrap_or_default(),
        ))
        .unwrap_or(0)];
        assert_eq!(
            first,
            serde_json::to_vec(&messages[0])
                .unwrap_or_default()
                .as_slice()
        );
    }

    #[test]
    fn small_records_and_what_is_no_object_are_not_split() {
        assert_eq!(split(br#"{"type":"graph.snapshot","nodes":[1,2]}"#), None);
        assert_eq!(split(b"[1,2,3]"), None);
        assert_eq!(split(b"\xff not json"), None);
        assert_eq!(split(b"{\"a\":1} trailing"), None);
        let many = format!(r#"{{"a":[{}]}}"#, vec!["0"; SPLIT_ITEMS].join(","));
        assert!(split(many.as_bytes()).is_some());
        let fewer = format!(r#"{{"a":[{}]}}"#, vec!["0"; SPLIT_ITEMS - 1].join(","));
        assert_eq!(split(fewer.as_bytes()), None);
    }
}
