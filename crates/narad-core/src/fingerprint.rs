//! The content fingerprint of a record (§4.1 dedup): a stable 64-bit hash
//! of a walk of the JSON object, members in key order (`serde_json::Map` order,
//! which is sorted), so a re-encoded redelivery of the same fact matches
//! while any changed field does not. The fast parse path feeds the same
//! walk from its typed fields, without building the object.

use serde_json::{Map, Value};

/// The fingerprint of a parsed JSON object. Walks it in place: no clone,
/// no re-serialization.
pub(crate) fn of_map(map: &Map<String, Value>) -> u64 {
    let mut h = Walk::new();
    h.object(map);
    h.finish()
}

/// The hash of an id (the dedup set's eventId key): the same
/// word-at-a-time hash, under its own seed.
pub(crate) fn of_id(id: &str) -> u64 {
    let mut h = Walk(ID_SEED);
    h.tagged(b'i', id.as_bytes());
    h.finish()
}

/// One top-level member's value, as the fast path holds it.
#[derive(Clone, Copy)]
pub(crate) enum Item<'a> {
    Str(&'a str),
    Uint(u64),
    Strs(&'a [String]),
    Json(&'a Value),
}

/// The walk of an object fed member by member, in key order, without
/// building it: [`Members::new`] with the count of members present, then
/// [`Members::member`] for each, then [`Members::finish`]; equal to
/// [`of_map`] of the object they form.
pub(crate) struct Members(Walk);

impl Members {
    pub(crate) fn new(present: usize) -> Self {
        let mut h = Walk::new();
        h.tagged(b'{', &(present as u64).to_le_bytes());
        Self(h)
    }

    /// The member whose name has the [`key_word`] `k`.
    pub(crate) fn member(&mut self, k: u64, v: Item<'_>) {
        let h = &mut self.0;
        h.word(k);
        match v {
            Item::Str(s) => h.tagged(b's', s.as_bytes()),
            Item::Uint(u) => h.tagged(b'u', &u.to_le_bytes()),
            Item::Strs(items) => {
                h.tagged(b'[', &(items.len() as u64).to_le_bytes());
                items.iter().for_each(|s| h.tagged(b's', s.as_bytes()));
            }
            Item::Json(v) => h.value(v),
        }
    }

    pub(crate) fn finish(self) -> u64 {
        self.0.finish()
    }
}

/// The fingerprint of an object given as its possible members in key
/// order, each with its [`key_word`], `None` for an absent one.
#[cfg(test)]
fn of_sorted(members: &[(&str, u64, Option<Item<'_>>)]) -> u64 {
    assert!(members.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(members.iter().all(|(k, w, _)| key_word(k) == *w));
    let present = members.iter().filter(|(_, _, v)| v.is_some()).count();
    let mut h = Members::new(present);
    for (_, k, v) in members {
        if let Some(v) = v {
            h.member(*k, *v);
        }
    }
    h.finish()
}

/// A word-at-a-time hash of the canonical walk: each 8-byte word is
/// folded into the state by a 64×64→128-bit multiply whose halves are
/// xored (the mixing step of foldhash), where FNV-1a took one multiply
/// per byte. Fixed constants, so a fingerprint never depends on the
/// process.
struct Walk(u64);

const SEED: u64 = 0x243f_6a88_85a3_08d3;
const ID_SEED: u64 = 0x082e_fa98_ec4e_6c89;
const MUL: u64 = 0x1319_8a2e_0370_7344 | 1;
const FIN: u64 = 0xa409_3822_299f_31d0 | 1;

const fn fold_mul(a: u64, b: u64) -> u64 {
    let p = (a as u128) * (b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

const KEY_SEED: u64 = 0x4528_21e6_38d0_1377;

/// A member name's own hash, fed to the walk as one word in place of the
/// name's bytes. A const fn, so the fast path's names are hashed at
/// compile time.
pub(crate) const fn key_word(k: &str) -> u64 {
    let b = k.as_bytes();
    let mut h = KEY_SEED ^ (b.len() as u64);
    let mut i = 0;
    while i < b.len() {
        let mut w = 0u64;
        let mut j = 0;
        while j < 8 && i + j < b.len() {
            w |= (b[i + j] as u64) << (8 * j);
            j += 1;
        }
        h = fold_mul(h ^ w, MUL);
        i += 8;
    }
    fold_mul(h ^ KEY_SEED, FIN)
}

impl Walk {
    fn new() -> Self {
        Self(SEED)
    }

    fn word(&mut self, w: u64) {
        self.0 = fold_mul(self.0 ^ w, MUL);
    }

    fn finish(&self) -> u64 {
        fold_mul(self.0 ^ SEED, FIN)
    }

    /// The length is fed by the caller first, so padding the last word
    /// with zeros is unambiguous.
    fn bytes(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w));
        }
    }

    fn tagged(&mut self, tag: u8, b: &[u8]) {
        self.word(u64::from(tag) | ((b.len() as u64) << 8));
        self.bytes(b);
    }

    fn object(&mut self, map: &Map<String, Value>) {
        self.tagged(b'{', &(map.len() as u64).to_le_bytes());
        for (k, v) in map {
            self.word(key_word(k));
            self.value(v);
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.tagged(b'n', &[]),
            Value::Bool(b) => self.tagged(b'b', &[u8::from(*b)]),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => self.tagged(b'u', &u.to_le_bytes()),
                (None, Some(i), _) => self.tagged(b'i', &i.to_le_bytes()),
                (None, None, f) => {
                    self.tagged(b'f', &f.unwrap_or(f64::NAN).to_bits().to_le_bytes())
                }
            },
            Value::String(s) => self.tagged(b's', s.as_bytes()),
            Value::Array(items) => {
                self.tagged(b'[', &(items.len() as u64).to_le_bytes());
                items.iter().for_each(|i| self.value(i));
            }
            Value::Object(m) => self.object(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_hash_like_the_object_they_form() {
        let v = serde_json::json!({"b": "x", "a": 3, "c": ["p", "q"], "d": {"z": null, "y": 1.5}});
        let Value::Object(map) = &v else { panic!() };
        let strs = vec!["p".to_owned(), "q".to_owned()];
        let members = [
            ("a", key_word("a"), Some(Item::Uint(3))),
            ("aa", key_word("aa"), None),
            ("b", key_word("b"), Some(Item::Str("x"))),
            ("c", key_word("c"), Some(Item::Strs(&strs))),
            ("cc", key_word("cc"), None),
            ("d", key_word("d"), Some(Item::Json(&map["d"]))),
        ];
        assert_eq!(of_sorted(&members), of_map(map));
    }
}
