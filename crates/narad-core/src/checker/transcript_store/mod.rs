//! A long transcript left to the host's store. A checker that leaves
//! closed history to the store ([`Checker::leave_closed_to_store`]) also
//! hands over a session's messages once they pass [`HANDOVER_BYTES`]: one
//! record ([`ClosedKind::Transcript`], handed over by
//! [`Checker::take_closed`]) holding them as a snapshot's messages part.
//! Its snapshot for the store then holds, instead of those messages, how
//! many they are, the head they were handed over at, a digest of the
//! record and the sorted hashes of their ids (8 bytes a message, not the
//! 50 or more of a message itself), plus the messages since in full.
//!
//! A checker restored from it holds none of those messages. A record that
//! names a message id whose hash is among them (`message.user.recorded` of
//! an id already taken, a delta, a completion or a redaction of an earlier
//! message) is refused with [`super::CLOSED_RECALL`] before any rule reads
//! it, and the host gives the record back ([`Checker::recall_closed`]); a
//! new id is decided at once. Reads of the whole transcript answer for
//! what is held ([`Checker::holds_closed_history`] is `false` until then).
//!
//! The messages since the handover stay in the snapshot; once they pass
//! [`SINCE_MAX`], a checker that holds them all hands the whole transcript
//! over again, and one that does not asks for it first
//! ([`Checker::transcript_recall_wanted`]).

use super::closed_store::{ClosedKey, ClosedKind};
use super::messages::Messages;
use super::packed_messages::Packed;
use super::seen::id_hash;
use super::Checker;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Held message bytes (ids and content) from which a checker that leaves
/// closed history to the store hands its transcript over.
pub const HANDOVER_BYTES: usize = 256 << 10;

/// Messages after the handed-over ones a snapshot keeps in full; past
/// this many the transcript is handed over again.
pub const SINCE_MAX: usize = 4096;

/// When a checker hands a transcript over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Handover {
    /// [`HANDOVER_BYTES`].
    pub bytes: usize,
    /// [`SINCE_MAX`].
    pub since: usize,
}

impl Default for Handover {
    fn default() -> Self {
        Self {
            bytes: HANDOVER_BYTES,
            since: SINCE_MAX,
        }
    }
}

/// The key of a session's transcript record.
pub(super) fn key() -> ClosedKey {
    ClosedKey {
        kind: ClosedKind::Transcript,
        id: String::new(),
    }
}

/// What the host's store holds of a transcript: its first `count`
/// messages, handed over at session head `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    /// How many messages, from the first.
    pub count: usize,
    /// The session head once the batch that hands them over is stored.
    pub at: u64,
    /// XXH3-128 of the record.
    pub digest: u128,
    /// The hashes of their ids ([`id_hash`]), ascending, 8 bytes each
    /// (little-endian).
    pub hashes: Bytes,
    /// One of them changed since: the record is to be handed over again.
    pub stale: bool,
}

impl Stored {
    /// Whether an id hashing to `h` may be one of them.
    fn may_hold(&self, h: u64) -> bool {
        let n = self.hashes.len() / 8;
        let at = |i: usize| {
            let b = self.hashes.get(i * 8..i * 8 + 8)?;
            Some(u64::from_le_bytes(b.try_into().ok()?))
        };
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match at(mid) {
                Some(v) if v < h => lo = mid + 1,
                Some(v) if v > h => hi = mid,
                // Equal, or (never) unreadable: ask the store.
                _ => return true,
            }
        }
        false
    }

    /// The stored description a snapshot carries.
    pub fn meta(&self) -> StoredMeta {
        StoredMeta {
            count: self.count as u64,
            at: self.at,
            digest: format!("{:032x}", self.digest),
        }
    }

    /// What a snapshot described with `meta` and `hashes`; `None` unless
    /// the hashes are `count` ascending entries.
    pub fn from_meta(meta: &StoredMeta, hashes: Bytes) -> Option<Self> {
        let count = usize::try_from(meta.count).ok()?;
        if meta.digest.len() != 32 || hashes.len() != count.checked_mul(8)? || count == 0 {
            return None;
        }
        let digest = u128::from_str_radix(&meta.digest, 16).ok()?;
        let mut prev = 0u64;
        for c in hashes.chunks_exact(8) {
            let v = u64::from_le_bytes(c.try_into().ok()?);
            if v < prev {
                return None;
            }
            prev = v;
        }
        Some(Self {
            count,
            at: meta.at,
            digest,
            hashes,
            stale: false,
        })
    }
}

/// What a transcript record must be to be given back to a checker
/// ([`Checker::transcript_wanted`]): owned, so the check can run on
/// another thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptWanted {
    count: usize,
    at: u64,
    digest: u128,
}

/// A transcript record that passed [`TranscriptWanted::check`], for
/// [`Checker::install_transcript`].
pub struct CheckedTranscript {
    packed: Packed,
    digest: u128,
}

impl std::fmt::Debug for CheckedTranscript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedTranscript")
            .field("count", &self.packed.len())
            .field("digest", &format_args!("{:032x}", self.digest))
            .finish()
    }
}

impl TranscriptWanted {
    /// The session head at which the record was handed over: a host that
    /// finds a record of a later head finds another writer's, not a
    /// damaged one.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// Checks `record`: its digest, and every message record, string bound
    /// and id table position, as a snapshot restore checks its messages
    /// part (none is decoded). `None` for any other bytes.
    pub fn check(&self, record: Bytes) -> Option<CheckedTranscript> {
        if xxhash_rust::xxh3::xxh3_128(&record) != self.digest {
            return None;
        }
        let packed = Packed::read(record).filter(|p| p.len() == self.count)?;
        Some(CheckedTranscript {
            packed,
            digest: self.digest,
        })
    }
}

/// How a snapshot describes a stored transcript (`transcriptStored`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoredMeta {
    count: u64,
    at: u64,
    digest: String,
}

impl Messages {
    /// What the store holds of the messages a restore left away; `None`
    /// when all are held.
    pub(super) fn away_stored(&self) -> Option<&Stored> {
        self.stored.as_deref().filter(|_| self.away() > 0)
    }

    /// Whether an id hashing as `id` may be one of the messages left to
    /// the store and not held.
    pub(super) fn away_may_hold(&self, id: &str) -> bool {
        self.away_stored().is_some_and(|s| s.may_hold(id_hash(id)))
    }

    /// Whether a snapshot for the store describes the messages as stored
    /// (and writes only those since in full).
    pub(super) fn stored_form(&self, h: Handover) -> Option<&Stored> {
        self.stored
            .as_deref()
            .filter(|s| self.away() > 0 || (!s.stale && self.len() - s.count < h.since))
    }

    /// Whether the messages are to be handed over (again): all held, and
    /// past [`HANDOVER_BYTES`] with none handed over yet, or one of those
    /// handed over changed, or [`SINCE_MAX`] came since.
    fn handover_due(&self, h: Handover) -> bool {
        if self.away() > 0 {
            return false;
        }
        match self.stored.as_deref() {
            Some(s) => s.stale || self.len() - s.count >= h.since,
            None => !self.is_empty() && self.text_reaches(h.bytes),
        }
    }

    /// The record of every message, for the host's store, once due; from
    /// then on they are described as stored at session head `at`.
    fn hand_over(&mut self, at: u64, h: Handover) -> Option<Vec<u8>> {
        if !self.handover_due(h) {
            return None;
        }
        let mut record = Vec::new();
        self.write(&mut record);
        let mut hashes: Vec<u64> = self.ids().map(id_hash).collect();
        hashes.sort_unstable();
        let hashes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
        self.stored = Some(Box::new(Stored {
            count: self.len(),
            at,
            digest: xxhash_rust::xxh3::xxh3_128(&record),
            hashes: hashes.into(),
            stale: false,
        }));
        Some(record)
    }
}

impl Checker {
    /// The transcript record of `session_id` for the host's store, when
    /// one is due ([`Checker::take_closed`] hands it over).
    pub(super) fn take_transcript(&mut self, session_id: &str) -> Option<Vec<u8>> {
        if !self.closed_to_store {
            return None;
        }
        let s = self.sessions.get_mut(session_id)?;
        // Looked at first: `x_mut` would give a session without a
        // transcript the parts it does not use.
        if !s.x().transcript.messages.handover_due(self.handover) {
            return None;
        }
        let at = s.head;
        s.x_mut().transcript.messages.hand_over(at, self.handover)
    }

    /// Whether a transcript record of `session_id` is due.
    pub(super) fn transcript_due(&self, session_id: &str) -> bool {
        self.closed_to_store
            && self
                .sessions
                .get(session_id)
                .is_some_and(|s| s.x().transcript.messages.handover_due(self.handover))
    }

    /// Whether `session_id` holds messages left to the store that its next
    /// snapshot should not do without: so many came since that the host
    /// gives the transcript back first ([`Checker::recall_closed`] with
    /// the [`ClosedKind::Transcript`] key), for it to be handed over whole.
    ///
    /// ```
    /// use narad_core::checker::Checker;
    ///
    /// assert!(!Checker::default().transcript_recall_wanted("s"));
    /// ```
    pub fn transcript_recall_wanted(&self, session_id: &str) -> bool {
        self.sessions.get(session_id).is_some_and(|s| {
            let m = &s.x().transcript.messages;
            let since = self.handover.since;
            m.away_stored()
                .is_some_and(|st| m.len() - st.count >= since)
        })
    }

    /// Gives back the transcript record of `session_id` that this checker
    /// was restored without, as [`Checker::take_closed`] handed it over:
    /// [`Checker::recall_closed`] with the [`ClosedKind::Transcript`] key,
    /// but kept where it lies (a slice of the host's buffer, which should
    /// be its own: a store's shared buffer would be held as long). `false`,
    /// and nothing learned, when none of its messages are away or the
    /// bytes are not the record the snapshot named. The check is
    /// [`TranscriptWanted::check`], which a host may run apart (on another
    /// thread) and install with [`Checker::install_transcript`].
    ///
    /// ```
    /// use narad_core::checker::Checker;
    ///
    /// let mut c = Checker::default();
    /// assert!(!c.recall_transcript("s", bytes::Bytes::from_static(b"no")));
    /// ```
    pub fn recall_transcript(&mut self, session_id: &str, record: Bytes) -> bool {
        let checked = self
            .transcript_wanted(session_id)
            .and_then(|w| w.check(record));
        checked.is_some_and(|c| self.install_transcript(session_id, c))
    }

    /// What the transcript record `session_id` was restored without must
    /// be; `None` when none of its messages are away.
    pub fn transcript_wanted(&self, session_id: &str) -> Option<TranscriptWanted> {
        let s = self.sessions.get(session_id)?;
        let st = s.x().transcript.messages.away_stored()?;
        Some(TranscriptWanted {
            count: st.count,
            at: st.at,
            digest: st.digest,
        })
    }

    /// Installs a record [`TranscriptWanted::check`] passed; `false`, and
    /// nothing learned, unless `session_id` still wants that very record.
    pub fn install_transcript(&mut self, session_id: &str, checked: CheckedTranscript) -> bool {
        let Some(s) = self.sessions.get_mut(session_id) else {
            return false;
        };
        if s.x().transcript.messages.away() == 0 {
            return false;
        }
        s.x_mut()
            .transcript
            .messages
            .recall(checked.packed, checked.digest)
    }
}

#[cfg(test)]
mod tests;
