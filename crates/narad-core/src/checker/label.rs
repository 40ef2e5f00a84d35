//! [`Label`]: a transcript message's role or scope, which is nearly always
//! one of a few words, held without an allocation when it is.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Deref;

/// The words a role or a scope usually is. A restored transcript of 100k
/// messages allocated 200k copies of them.
const KNOWN: [&str; 6] = ["user", "assistant", "system", "session", "run", "workflow"];

/// A message's role (`user`, `assistant`, `system`) or scope (`session`,
/// `run`, `workflow`): a string, compared and printed as one. A known word
/// is held as a `&'static str`; anything else (a `messages.snapshot` may
/// carry another role) is owned.
///
/// ```
/// use narad_core::checker::Label;
/// let role = Label::from("assistant");
/// assert_eq!(role, "assistant");
/// assert_eq!(role.as_str(), "assistant");
/// assert_eq!(Label::from(String::from("narrator")).len(), 8);
/// ```
#[derive(Clone)]
pub struct Label(Repr);

#[derive(Clone)]
enum Repr {
    Known(&'static str),
    Other(Box<str>),
}

impl Label {
    /// The label `s`, without an allocation when it is a known word.
    pub fn new(s: &str) -> Self {
        Self::known(s).unwrap_or_else(|| Self(Repr::Other(s.into())))
    }

    /// `s` as a known word, if it is one.
    fn known(s: &str) -> Option<Self> {
        KNOWN
            .iter()
            .find(|k| **k == s)
            .map(|k| Self(Repr::Known(k)))
    }

    /// The label as a string.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Known(s) => s,
            Repr::Other(s) => s,
        }
    }
}

impl Deref for Label {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Label {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Label {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for Label {
    fn from(s: String) -> Self {
        // An unknown word keeps the string's own allocation.
        Self::known(&s).unwrap_or_else(|| Self(Repr::Other(s.into_boxed_str())))
    }
}

impl From<Label> for String {
    fn from(l: Label) -> Self {
        l.as_str().to_owned()
    }
}

impl PartialEq for Label {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Label {}

impl PartialEq<str> for Label {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Label {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Label {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Label {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_the_string_it_was_made_from() {
        for s in [
            "user",
            "assistant",
            "system",
            "session",
            "run",
            "workflow",
            "",
            "narrator",
            "User",
        ] {
            let (a, b) = (Label::from(s), Label::from(s.to_owned()));
            assert_eq!((a.as_str(), b.as_str()), (s, s));
            assert_eq!(a, b);
            assert_eq!(format!("{a}|{a:?}"), format!("{s}|{s:?}"));
            assert_eq!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(s).unwrap()
            );
            let back: Label = serde_json::from_str(&serde_json::to_string(s).unwrap()).unwrap();
            assert_eq!(back, s);
        }
        assert!(matches!(Label::from("run").0, Repr::Known(_)));
        assert!(matches!(Label::from("Run").0, Repr::Other(_)));
        assert_ne!(Label::from("run"), Label::from("runs"));
    }
}
