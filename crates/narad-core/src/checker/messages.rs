//! A transcript's messages: the list, its id index, and the messages a
//! snapshot restored, which stay packed until they are read.
//!
//! Messages a restore installed are positions `0..packed.len()` of the
//! list, held as the snapshot stored them ([`super::packed_messages`]), so
//! a long conversation restores without a string built per message. The
//! checker finds them by id and decodes one it changes (a delta, its
//! completion, a redaction), which is held decoded from then on. Reading
//! them as `&Message` ([`Messages::iter`], indexing) decodes them all once
//! and keeps that; serializing, comparing and snapshotting decode each in
//! turn and keep nothing.
//!
//! A long transcript may be kept in the host's store
//! ([`super::transcript_store`]): its first messages then are `away`
//! (positions `0..away`, not held) until the host gives them back.

use super::conversation::Message;
use super::id_index::IdIndex;
use super::packed_messages::{self, unreadable, Entry, Packed, Source};
use super::transcript_store::Stored;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// A transcript's messages in authority order.
///
/// ```
/// use narad_core::checker::Checker;
///
/// let mut c = Checker::default();
/// c.push_bytes(br#"{"protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":1,"type":"message.user.recorded","messageId":"u1","messageScope":"session","content":"Hi"}"#).unwrap();
/// let messages = &c.transcript("s").unwrap().messages;
/// assert_eq!(messages.len(), 1);
/// assert_eq!(messages[0].content, "Hi");
/// let ids: Vec<&str> = messages.iter().map(|m| m.message_id.as_str()).collect();
/// assert_eq!(ids, ["u1"]);
/// ```
#[derive(Clone, Default)]
pub struct Messages {
    /// Messages a snapshot restored: positions `0..packed.len()`.
    packed: Option<Packed>,
    /// The packed messages decoded (with `thawed` applied), once read as
    /// references; from then on they are changed here.
    decoded: OnceLock<Vec<Message>>,
    /// Packed messages changed while `decoded` is not built, by position.
    thawed: BTreeMap<usize, Message>,
    /// Messages after the packed ones.
    live: Vec<Message>,
    /// Positions in `live` by id.
    index: IdIndex,
    /// The messages handed to the host's store, when some were.
    pub(super) stored: Option<Box<Stored>>,
    /// How many messages at the front are not held (0: all are): a
    /// restore from a snapshot that left them to the store. `packed` is
    /// then `None`, and `stored` says what they are.
    away: usize,
}

/// A message's text as a part's size estimate and the handover threshold
/// count it: its id and content.
fn text_of(m: &Message) -> usize {
    m.message_id.len() + m.content.len()
}

/// The message id at each position of `m`.
fn ids<'a>(m: &'a [Message]) -> impl Fn(usize) -> Option<&'a str> + Copy + 'a {
    move |p| m.get(p).map(|m| m.message_id.as_str())
}

impl Messages {
    /// The messages a restore read.
    pub(super) fn restored(packed: Option<Packed>) -> Self {
        Self {
            packed,
            ..Self::default()
        }
    }

    /// The messages a restore read without the `stored` ones it left to
    /// the store: `since` holds the ones after them, decoded here.
    pub(super) fn restored_away(stored: Stored, since: Option<Packed>) -> Option<Self> {
        let mut out = Self {
            away: stored.count,
            stored: Some(Box::new(stored)),
            ..Self::default()
        };
        if let Some(p) = since {
            for i in 0..p.len() {
                out.push(p.message(i)?).ok()?;
            }
        }
        Some(out)
    }

    fn packed_len(&self) -> usize {
        self.packed.as_ref().map_or(0, Packed::len)
    }

    /// Positions before the live messages: packed or away.
    fn prefix_len(&self) -> usize {
        self.packed_len() + self.away
    }

    /// Whether the held messages' text (ids, content and the like) is at
    /// least `n` bytes; stops counting there.
    pub(super) fn text_reaches(&self, n: usize) -> bool {
        let mut bytes = self.packed.as_ref().map_or(0, Packed::text_len);
        bytes >= n
            || self.live.iter().any(|m| {
                bytes += text_of(m);
                bytes >= n
            })
    }

    /// How many messages at the front are not held (see the module docs).
    pub(super) fn away(&self) -> usize {
        self.away
    }

    /// How many messages, held or not.
    pub fn len(&self) -> usize {
        self.prefix_len() + self.live.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The packed messages, decoded once.
    fn decoded(&self) -> &[Message] {
        let Some(p) = &self.packed else {
            return &[];
        };
        self.decoded.get_or_init(|| {
            (0..p.len())
                .map(|i| match self.thawed.get(&i) {
                    Some(m) => m.clone(),
                    None => p.message(i).unwrap_or_else(unreadable),
                })
                .collect()
        })
    }

    /// The messages in order (of those held: all but right after a
    /// restore that left some to the store, which a host gives back first).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Message> + '_ {
        self.decoded().iter().chain(&self.live)
    }

    /// The message at position `i` (`None` past the end, and for one a
    /// restore left to the host's store and does not hold).
    pub fn get(&self, i: usize) -> Option<&Message> {
        match i.checked_sub(self.prefix_len()) {
            None => self.decoded().get(i),
            Some(j) => self.live.get(j),
        }
    }

    /// The ids of the held messages in order, a packed one's read in place
    /// (an id never changes, so a thawed or decoded copy has the same).
    pub(super) fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        let packed = self
            .packed
            .iter()
            .flat_map(|p| (0..p.len()).filter_map(|i| p.message_id(i)));
        packed.chain(self.live.iter().map(|m| m.message_id.as_str()))
    }

    /// The messages in order, each packed one decoded in turn and not kept.
    pub(super) fn each(&self) -> impl Iterator<Item = Cow<'_, Message>> + '_ {
        (0..self.packed_len())
            .map(|i| self.at(i).unwrap_or_else(|| Cow::Owned(unreadable())))
            .chain(self.live.iter().map(Cow::Borrowed))
    }

    /// The message at position `i`, a packed one decoded and not kept.
    pub(super) fn at(&self, i: usize) -> Option<Cow<'_, Message>> {
        if i >= self.prefix_len() {
            return self.live.get(i - self.prefix_len()).map(Cow::Borrowed);
        }
        if let Some(d) = self.decoded.get() {
            return d.get(i).map(Cow::Borrowed);
        }
        match self.thawed.get(&i) {
            Some(m) => Some(Cow::Borrowed(m)),
            None => self.packed.as_ref()?.message(i).map(Cow::Owned),
        }
    }

    /// The message at position `i`, to change (a packed one is decoded
    /// once and held from then on).
    pub(super) fn at_mut(&mut self, i: usize) -> Option<&mut Message> {
        if i < self.away {
            return None;
        }
        if let Some(s) = self.stored.as_deref_mut().filter(|s| i < s.count) {
            // The store's copy no longer matches: handed over again.
            s.stale = true;
        }
        if i >= self.prefix_len() {
            let j = i - self.prefix_len();
            return self.live.get_mut(j);
        }
        if let Some(d) = self.decoded.get_mut() {
            self.thawed.clear();
            return d.get_mut(i);
        }
        if !self.thawed.contains_key(&i) {
            let m = self.packed.as_ref()?.message(i)?;
            self.thawed.insert(i, m);
        }
        self.thawed.get_mut(&i)
    }

    /// The position of the message `id`.
    pub(super) fn find(&self, id: &str) -> Option<usize> {
        if let Some(p) = self.packed.as_ref().and_then(|p| p.find(id)) {
            return Some(p);
        }
        let i = self.index.get(id, ids(&self.live))?;
        Some(self.prefix_len() + i)
    }

    /// Appends `m`; if its id is taken, nothing changes and `m` is
    /// handed back.
    pub(super) fn push(&mut self, m: Message) -> Result<(), Box<Message>> {
        if self
            .packed
            .as_ref()
            .and_then(|p| p.find(&m.message_id))
            .is_some()
            || !self
                .index
                .insert(&m.message_id, self.live.len(), ids(&self.live))
        {
            return Err(Box::new(m));
        }
        self.live.push(m);
        Ok(())
    }

    /// Drops every message.
    pub(super) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Appends the snapshot part of the messages after the first `from`
    /// (at least as many as are packed or away: those handed to the store).
    pub(super) fn write_from(&self, from: usize, out: &mut Vec<u8>) {
        let skip = from.saturating_sub(self.prefix_len()).min(self.live.len());
        let live = self.live.get(skip..).unwrap_or_default();
        let src = Source {
            entries: live.iter().map(|m| Entry::Message(Cow::Borrowed(m))),
            count: live.len(),
            text: live.iter().map(text_of).sum(),
            base: None,
        };
        packed_messages::write(src, out);
    }

    /// Installs the first messages a restore left to the store, read back
    /// and checked as the ones `stored` describes; `false` (and no change)
    /// when none are away or they are not those.
    pub(super) fn recall(&mut self, checked: Packed, digest: u128) -> bool {
        let Some(s) = self.away_stored() else {
            return false;
        };
        if s.digest != digest || checked.len() != self.away {
            return false;
        }
        self.packed = Some(checked);
        self.away = 0;
        true
    }

    /// Appends the snapshot part of the messages: runs of packed ones that
    /// did not change are copied as they lie, not decoded, and the packed
    /// part's id table is kept while it has room. Of held messages only
    /// (none are away when a snapshot writes them all).
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        let mut entries = Vec::new();
        if let Some(p) = &self.packed {
            match self.decoded.get() {
                // Read as references since the restore: written from there.
                Some(d) => entries.extend(d.iter().map(|m| Entry::Message(Cow::Borrowed(m)))),
                None => {
                    let mut at = 0;
                    for (&i, m) in &self.thawed {
                        if at < i {
                            entries.push(Entry::Packed(p, at..i));
                        }
                        entries.push(Entry::Message(Cow::Borrowed(m)));
                        at = i + 1;
                    }
                    if at < p.len() {
                        entries.push(Entry::Packed(p, at..p.len()));
                    }
                }
            }
        }
        let text = self.packed.as_ref().map_or(0, Packed::text_len)
            + self.live.iter().map(text_of).sum::<usize>();
        let live = self.live.iter().map(|m| Entry::Message(Cow::Borrowed(m)));
        let src = Source {
            entries: entries.into_iter().chain(live),
            count: self.len(),
            text,
            base: self.packed.as_ref(),
        };
        packed_messages::write(src, out);
    }
}

impl std::ops::Index<usize> for Messages {
    type Output = Message;

    /// The message at position `i`; panics past the end, as a slice does.
    #[allow(clippy::panic)]
    fn index(&self, i: usize) -> &Message {
        match self.get(i) {
            Some(m) => m,
            None => panic!("message {i} of {}", self.len()),
        }
    }
}

impl<'a> IntoIterator for &'a Messages {
    type Item = &'a Message;
    type IntoIter = Box<dyn DoubleEndedIterator<Item = &'a Message> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// Equal when the messages are, however they are held.
impl PartialEq for Messages {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.each().eq(other.each())
    }
}

impl fmt::Debug for Messages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.each()).finish()
    }
}

/// A list of messages.
impl Serialize for Messages {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.each())
    }
}

/// A list of messages; a repeated messageId is refused.
impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Self::default();
        for m in Vec::<Message>::deserialize(d)? {
            if out.push(m).is_err() {
                return Err(serde::de::Error::custom("a messageId repeats"));
            }
        }
        Ok(out)
    }
}

impl From<Vec<Message>> for Messages {
    /// The messages of `v`; of a repeated id, the first is kept.
    fn from(v: Vec<Message>) -> Self {
        let mut out = Self::default();
        for m in v {
            let _ = out.push(m);
        }
        out
    }
}

impl From<Messages> for Vec<Message> {
    fn from(m: Messages) -> Self {
        match m.packed {
            None => m.live,
            Some(_) => m.each().map(Cow::into_owned).collect(),
        }
    }
}
