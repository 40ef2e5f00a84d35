//! A transcript's messages as a snapshot stores them, used where they lie:
//! a restore checks the part and keeps it (a slice of the snapshot, or
//! one copy of the part), with no string or record built per message.
//! Messages are decoded when read; the id index is stored with them.
//!
//! ```text
//! header  = count: u32 | strings: u32 | slots: u32 | overflow: u32 | text: u64
//! record  = first string: u32 | flags: u8 | role: u8 | scope: u8 | 0: u8
//!           (8 bytes, count of them)
//! ends    = the end of each string in text: u32
//! text    = every string, UTF-8, in order
//! slots   = the id table: a position, or u32::MAX for none: u32
//! overflow = positions whose id the table could not place, by id: u32
//! ```
//!
//! All numbers are little-endian. A message's strings are its messageId,
//! its role and scope when they are not a known word (code 255), its runId
//! and rootRunId when flagged, its content, its redacted text when flagged,
//! then its attachment ids (the strings left before the next message's
//! first). Text past 4 GiB is written so that it does not restore (the
//! host replays). The id table (1.5 slots a message) is open addressing
//! over the id's hash, its home slot the hash's high bits scaled to the
//! table, with at most
//! [`MAX_PROBE`] probes; an id that found no free slot in that many is in
//! `overflow`, sorted by id, so even ids crafted to share a hash cost a
//! bounded probe and a binary search, never a scan.
//!
//! A restore checks every record, string bound and position, so reading a
//! restored message never fails. It does not rehash every id to check the
//! table (that is the cost this layout saves): the table is trusted as the
//! rest of a snapshot is, which the engine guards with its body digest. A
//! wrong table can hide an id from a lookup; it cannot send one out of
//! bounds or panic.

use super::arena::by_bucket;
use super::conversation::Message;
use super::seen::id_hash;
use super::Label;
use bytes::Bytes;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::Range;

const COMPLETED: u8 = 1;
const RUN_ID: u8 = 2;
const ROOT_RUN_ID: u8 = 4;
const REDACTED: u8 = 8;
/// `redacted` is `Some(Some(text))`; with [`REDACTED`] alone it is hidden.
const REDACTED_TEXT: u8 = 16;
const KNOWN: u8 = COMPLETED | RUN_ID | ROOT_RUN_ID | REDACTED | REDACTED_TEXT;

const ROLES: [&str; 3] = ["user", "assistant", "system"];
const SCOPES: [&str; 3] = ["session", "workflow", "run"];
/// A role or scope that is not a known word: held as a string.
const OTHER: u8 = 255;

const HEADER: usize = 24;
const RECORD: usize = 8;
const EMPTY: u32 = u32::MAX;
/// Probes of the id table before a lookup turns to `overflow`.
const MAX_PROBE: usize = 32;

/// What a packed message that does not decode reads as. A restore checks
/// every message, so none is read; this keeps positions if one were.
pub(super) fn unreadable() -> Message {
    Message {
        message_id: String::new(),
        role: Label::new("assistant"),
        scope: Label::new("session"),
        run_id: None,
        root_run_id: None,
        content: String::new(),
        completed: true,
        redacted: None,
        attachment_ids: Vec::new(),
    }
}

/// The next string of a message.
fn next<'s>(it: &mut dyn Iterator<Item = Option<&'s str>>) -> Option<&'s str> {
    it.next().flatten()
}

/// The `i`-th little-endian u32 of `b`.
fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    let at = i.checked_mul(4)?;
    let w = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(w.try_into().ok()?))
}

/// Where string `k` begins in the text: where string `k - 1` ends (the
/// string ends `ends` hold).
fn start_of(ends: &[u8], k: usize) -> Option<usize> {
    match k.checked_sub(1) {
        None => Some(0),
        Some(j) => u32_at(ends, j).map(|e| e as usize),
    }
}

/// String `k` of `text`, whose string ends `ends` hold.
fn string_in<'t>(text: &'t [u8], ends: &[u8], k: usize) -> Option<&'t [u8]> {
    text.get(start_of(ends, k)?..u32_at(ends, k)? as usize)
}

fn code(s: &str, words: &[&str; 3]) -> u8 {
    words
        .iter()
        .position(|w| *w == s)
        .map_or(OTHER, |p| p as u8)
}

/// The home slot of hash `h` in a table of `n` slots.
fn home(h: u64, n: usize) -> usize {
    ((u128::from(h) * n as u128) >> 64) as usize
}

/// Slot `s` of a table of `n`, for `s` under `2n` (a probe past the end
/// goes on from the start).
fn wrap(s: usize, n: usize) -> usize {
    if s >= n {
        s - n
    } else {
        s
    }
}

/// One record, as read.
#[derive(Clone, Copy)]
struct Record {
    first: usize,
    flags: u8,
    role: u8,
    scope: u8,
}

impl Record {
    /// The strings every message of these flags holds (before attachments).
    fn fixed(self) -> usize {
        2 + usize::from(self.role == OTHER)
            + usize::from(self.scope == OTHER)
            + usize::from(self.flags & RUN_ID != 0)
            + usize::from(self.flags & ROOT_RUN_ID != 0)
            + usize::from(self.flags & REDACTED_TEXT != 0)
    }
}

/// Restored messages: see the module docs.
#[derive(Clone)]
pub(super) struct Packed {
    count: usize,
    strings: usize,
    records: Bytes,
    ends: Bytes,
    text: Bytes,
    slots: Bytes,
    overflow: Bytes,
}

impl Packed {
    /// How many messages.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The bytes of text its messages hold.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Whether its id table has room for `count` messages (at most four
    /// in five slots used).
    fn has_room(&self, count: usize) -> bool {
        (self.slots.len() / 4).saturating_mul(4) >= count.saturating_mul(5)
    }

    fn record(&self, i: usize) -> Option<Record> {
        let at = i.checked_mul(RECORD)?;
        let r = self.records.get(at..at.checked_add(RECORD)?)?;
        Some(Record {
            first: u32::from_le_bytes(r.get(..4)?.try_into().ok()?) as usize,
            flags: *r.get(4)?,
            role: *r.get(5)?,
            scope: *r.get(6)?,
        })
    }

    /// The first string index past message `i`.
    fn next_first(&self, i: usize) -> Option<usize> {
        match i + 1 < self.count {
            true => self.record(i + 1).map(|r| r.first),
            false => Some(self.strings),
        }
    }

    /// String `k`.
    fn string(&self, k: usize) -> Option<&str> {
        std::str::from_utf8(string_in(&self.text, &self.ends, k)?).ok()
    }

    /// The messageId at position `i`.
    pub fn message_id(&self, i: usize) -> Option<&str> {
        self.string(self.record(i)?.first)
    }

    /// The message at position `i`, decoded.
    pub fn message(&self, i: usize) -> Option<Message> {
        let r = self.record(i)?;
        let it = &mut (r.first..self.next_first(i)?).map(|k| self.string(k));
        let label =
            |c: u8, words: &[&str; 3], it: &mut dyn Iterator<Item = Option<&str>>| match words
                .get(usize::from(c))
            {
                Some(w) => Some(Label::new(w)),
                None => next(it).map(Label::new),
            };
        let message_id = next(it)?.to_owned();
        let role = label(r.role, &ROLES, it)?;
        let scope = label(r.scope, &SCOPES, it)?;
        let flagged = |bit: u8, it: &mut dyn Iterator<Item = Option<&str>>| match r.flags & bit != 0
        {
            true => next(it).map(|s| Some(s.to_owned())),
            false => Some(None),
        };
        let run_id = flagged(RUN_ID, it)?;
        let root_run_id = flagged(ROOT_RUN_ID, it)?;
        let content = next(it)?.to_owned();
        let redacted = match (r.flags & REDACTED != 0, r.flags & REDACTED_TEXT != 0) {
            (false, _) => None,
            (true, false) => Some(None),
            (true, true) => Some(Some(next(it)?.to_owned())),
        };
        let attachment_ids = it.map(|s| s.map(str::to_owned)).collect::<Option<_>>()?;
        Some(Message {
            message_id,
            role,
            scope,
            run_id,
            root_run_id,
            content,
            completed: r.flags & COMPLETED != 0,
            redacted,
            attachment_ids,
        })
    }

    /// The position of the message `id`.
    pub fn find(&self, id: &str) -> Option<usize> {
        let slots = self.slots.len() / 4;
        if slots > 0 {
            let at = home(id_hash(id), slots);
            for d in 0..MAX_PROBE.min(slots) {
                let p = u32_at(&self.slots, wrap(at + d, slots))?;
                if p == EMPTY {
                    return None;
                }
                if self.message_id(p as usize) == Some(id) {
                    return Some(p as usize);
                }
            }
        }
        let (mut lo, mut hi) = (0, self.overflow.len() / 4);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let p = u32_at(&self.overflow, mid)? as usize;
            match self.message_id(p)?.cmp(id) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(p),
            }
        }
        None
    }

    /// The messages [`write`] wrote, checked; `None` for any other bytes,
    /// and for no messages.
    pub fn read(part: Bytes) -> Option<Self> {
        let head = part.get(..HEADER)?;
        let word = |i: usize| u32_at(head, i).map(|w| w as usize);
        let (count, strings, slots, overflow) = (word(0)?, word(1)?, word(2)?, word(3)?);
        let text_len =
            usize::try_from(u64::from_le_bytes(head.get(16..24)?.try_into().ok()?)).ok()?;
        if count == 0 {
            return None;
        }
        let mut at = HEADER;
        let mut take = |n: usize| {
            let b = part.get(at..at.checked_add(n)?)?;
            let s = part.slice(at..at + b.len());
            at += n;
            Some(s)
        };
        let records = take(count.checked_mul(RECORD)?)?;
        let ends = take(strings.checked_mul(4)?)?;
        let text = take(text_len)?;
        let slots = take(slots.checked_mul(4)?)?;
        let overflow = take(overflow.checked_mul(4)?)?;
        if at != part.len() {
            return None;
        }
        let packed = Self {
            count,
            strings,
            records,
            ends,
            text,
            slots,
            overflow,
        };
        packed.check()?;
        Some(packed)
    }

    /// Every record, string bound and position in bounds; see [`Packed::read`].
    fn check(&self) -> Option<()> {
        let text = std::str::from_utf8(&self.text).ok()?;
        let (mut at, mut string) = (0usize, 0usize);
        for i in 0..self.count {
            let r = self.record(i)?;
            if r.first != string
                || r.flags & !KNOWN != 0
                || (r.flags & REDACTED_TEXT != 0 && r.flags & REDACTED == 0)
                || (usize::from(r.role) >= ROLES.len() && r.role != OTHER)
                || (usize::from(r.scope) >= SCOPES.len() && r.scope != OTHER)
            {
                return None;
            }
            let end = self.next_first(i)?;
            if end < r.first.checked_add(r.fixed())? {
                return None;
            }
            for k in r.first..end {
                let e = u32_at(&self.ends, k)? as usize;
                if e < at || !text.is_char_boundary(e) {
                    return None;
                }
                at = e;
            }
            string = end;
        }
        if at != text.len() || string != self.strings {
            return None;
        }
        let in_bounds = |b: &Bytes| {
            b.chunks_exact(4)
                .all(|w| matches!(w.try_into().map(u32::from_le_bytes), Ok(p) if p == EMPTY || (p as usize) < self.count))
        };
        if !in_bounds(&self.slots) || !in_bounds(&self.overflow) {
            return None;
        }
        // Overflow is sorted by id, strictly (no position twice, none empty).
        let mut prev: Option<&str> = None;
        for j in 0..self.overflow.len() / 4 {
            let id = self.message_id(u32_at(&self.overflow, j)? as usize)?;
            if prev.is_some_and(|p| p >= id) {
                return None;
            }
            prev = Some(id);
        }
        Some(())
    }
}

/// One message to write, or a run of packed ones as they were restored.
#[derive(Clone)]
pub(super) enum Entry<'a> {
    Message(Cow<'a, Message>),
    /// Positions `.1` of a packed part, copied without decoding.
    Packed(&'a Packed, Range<usize>),
}

/// What a part is written from.
pub(super) struct Source<'a, I> {
    /// The messages, in order.
    pub entries: I,
    /// How many messages they are (a run counts its messages).
    pub count: usize,
    /// About how many bytes of text they hold (room is made up front).
    pub text: usize,
    /// A packed part whose messages are the first ones written, at the
    /// same positions and with the same ids: its id table is kept and the
    /// later messages added to it, when it has room for them all.
    pub base: Option<&'a Packed>,
}

/// Appends the part of `src` (nothing for no messages).
pub(super) fn write<'a>(src: Source<'a, impl Iterator<Item = Entry<'a>>>, out: &mut Vec<u8>) {
    write_sized(src, None, out);
}

/// [`write`] with an id table of `slots` slots (tests use small ones to
/// fill it), or 1.5 a message.
fn write_sized<'a>(
    src: Source<'a, impl Iterator<Item = Entry<'a>>>,
    slots: Option<usize>,
    out: &mut Vec<u8>,
) {
    let count = src.count;
    let base = src.base.filter(|b| slots.is_none() && b.has_room(count));
    let mut w = Writer {
        base,
        slots: match base {
            Some(b) => b.slots.len() / 4,
            None => slots.unwrap_or(count + count.div_ceil(2)).max(1),
        },
        ..Writer::default()
    };
    w.text.reserve(src.text);
    w.records.reserve(count * RECORD);
    w.ends.reserve(count * 8);
    for e in src.entries {
        match e {
            Entry::Message(m) => w.message(&m),
            Entry::Packed(p, run) => w.packed(p, run),
        }
    }
    w.finish(out);
}

/// The sections of a part being written.
#[derive(Default)]
struct Writer<'a> {
    records: Vec<u8>,
    ends: Vec<u8>,
    text: Vec<u8>,
    /// The part whose id table is kept (its positions are indexed).
    base: Option<&'a Packed>,
    /// The id table's size, decided before the messages are written.
    slots: usize,
    /// The home slot and position of each message the table still needs.
    homes: Vec<(u64, u32)>,
    /// False once a count or the text passed what u32 holds.
    broken: bool,
}

impl Writer<'_> {
    /// How many messages are written.
    fn count(&self) -> usize {
        self.records.len() / RECORD
    }

    /// Indexes the message just begun, whose id is `id`.
    fn index(&mut self, id: &str) {
        let at = self.count() - 1;
        if self.base.is_none_or(|b| at >= b.len()) {
            let at_home = home(id_hash(id), self.slots) as u64;
            self.homes
                .push((at_home, u32::try_from(at).unwrap_or(EMPTY)));
        }
    }

    fn record(&mut self, flags: u8, role: u8, scope: u8) {
        let first = u32::try_from(self.ends.len() / 4).unwrap_or_else(|_| {
            self.broken = true;
            EMPTY
        });
        self.records.extend_from_slice(&first.to_le_bytes());
        self.records.extend_from_slice(&[flags, role, scope, 0]);
    }

    fn put(&mut self, s: &str) {
        self.text.extend_from_slice(s.as_bytes());
        let end = u32::try_from(self.text.len()).unwrap_or_else(|_| {
            self.broken = true;
            0
        });
        self.ends.extend_from_slice(&end.to_le_bytes());
    }

    fn message(&mut self, m: &Message) {
        let (role, scope) = (code(&m.role, &ROLES), code(&m.scope, &SCOPES));
        let mut flags = 0;
        for (on, bit) in [
            (m.completed, COMPLETED),
            (m.run_id.is_some(), RUN_ID),
            (m.root_run_id.is_some(), ROOT_RUN_ID),
            (m.redacted.is_some(), REDACTED),
            (matches!(m.redacted, Some(Some(_))), REDACTED_TEXT),
        ] {
            if on {
                flags |= bit;
            }
        }
        self.record(flags, role, scope);
        self.put(&m.message_id);
        if role == OTHER {
            self.put(&m.role);
        }
        if scope == OTHER {
            self.put(&m.scope);
        }
        for s in [&m.run_id, &m.root_run_id].into_iter().flatten() {
            self.put(s);
        }
        self.put(&m.content);
        if let Some(Some(t)) = &m.redacted {
            self.put(t);
        }
        for a in &m.attachment_ids {
            self.put(a);
        }
        self.index(&m.message_id);
    }

    /// Messages `run` of `p`, copied as they lie: their records and
    /// string ends moved by where their text lands, their text in one
    /// span.
    fn packed(&mut self, p: &Packed, run: Range<usize>) {
        let copied = (|| {
            let (from, to) = (
                p.record(run.start)?.first,
                p.next_first(run.end.checked_sub(1)?)?,
            );
            let text_at = |k: usize| start_of(&p.ends, k);
            let span = p.text.get(text_at(from)?..text_at(to)?)?;
            let (strings, text) = (self.ends.len() / 4, self.text.len());
            let moved =
                |n: usize, old: usize, new: usize| u32::try_from(n.checked_sub(old)? + new).ok();
            for i in run.clone() {
                let r = p.record(i)?;
                let first = moved(r.first, from, strings)?;
                self.records.extend_from_slice(&first.to_le_bytes());
                self.records
                    .extend_from_slice(&[r.flags, r.role, r.scope, 0]);
                self.index(p.message_id(i)?);
            }
            let base = text_at(from)?;
            for k in from..to {
                let e = moved(u32_at(&p.ends, k)? as usize, base, text)?;
                self.ends.extend_from_slice(&e.to_le_bytes());
            }
            self.text.extend_from_slice(span);
            Some(())
        })();
        // A restored part was checked whole, so every run copies; past
        // what u32 holds, the part is written so that it does not restore.
        if copied.is_none() {
            self.broken = true;
        }
    }

    fn finish(self, out: &mut Vec<u8>) {
        let count = self.count();
        let strings = self.ends.len() / 4;
        if count == 0 {
            return;
        }
        // Positions and string indexes are u32: a transcript past that (or
        // text past 4 GiB) is written so that it does not restore, and the
        // host replays.
        if self.broken || u32::try_from(count).is_err() || u32::try_from(strings).is_err() {
            out.extend_from_slice(&[0; HEADER]);
            return;
        }
        let words = |b: &Bytes| -> Vec<u32> {
            b.chunks_exact(4)
                .map(|w| w.try_into().map_or(EMPTY, u32::from_le_bytes))
                .collect()
        };
        let (mut table, mut overflow) = match self.base {
            Some(b) => (words(&b.slots), words(&b.overflow)),
            None => (vec![EMPTY; self.slots], Vec::new()),
        };
        let slots_len = table.len();
        // In the order of the home slots (a counting sort on their top
        // bits), so the inserts walk the table instead of missing the
        // cache each.
        let mask = (slots_len as u64).next_power_of_two() - 1;
        for (at, p) in by_bucket(self.homes, mask) {
            let free = (0..MAX_PROBE.min(slots_len))
                .map(|d| wrap(at as usize + d, slots_len))
                .find(|s| table.get(*s) == Some(&EMPTY));
            match free.and_then(|s| table.get_mut(s)) {
                Some(slot) => *slot = p,
                None => overflow.push(p),
            }
        }
        // A record's first word is its first string: the id.
        let id_of = |p: u32| {
            let first = u32_at(&self.records, p as usize * (RECORD / 4)).unwrap_or(0) as usize;
            string_in(&self.text, &self.ends, first).unwrap_or_default()
        };
        overflow.sort_by(|a, b| id_of(*a).cmp(id_of(*b)));
        for n in [count, strings, slots_len, overflow.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.reserve(
            HEADER
                + self.records.len()
                + self.ends.len()
                + self.text.len()
                + 4 * (slots_len + overflow.len()),
        );
        out.extend_from_slice(&(self.text.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.records);
        out.extend_from_slice(&self.ends);
        out.extend_from_slice(&self.text);
        for p in table.iter().chain(&overflow) {
            out.extend_from_slice(&p.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests;
