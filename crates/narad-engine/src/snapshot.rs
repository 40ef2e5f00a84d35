//! The reducer snapshot side record, bound to the journal it was derived
//! from.
//!
//! A snapshot is only a shortcut past replaying the journal, so the engine
//! trusts it no further than it can check it cheaply. The record carries
//! the session it belongs to, the head it covers, a rolling digest over the
//! exact bytes of every covered event, the digest of the event at the head,
//! and a digest of its own body. On hydrate the body digest is checked and
//! the stored event at the head is read once and compared; anything that
//! does not match makes the engine ignore the snapshot and replay.
//!
//! The digests catch damage and mix-ups (a truncated record, one written for
//! another session or another history, edited state bytes). They are not a
//! signature: whoever can rewrite the store can rewrite the journal too. So
//! they are XXH3-128, not a cryptographic hash: checking the body of a
//! 1M-event session's snapshot (about 20 MB) takes a few milliseconds, where
//! SHA-256 took about 17 ms of a 50 ms hydrate.
//!
//! Layout: `head` (8 bytes, big-endian, kept first so tools can read it
//! without parsing), the header length (4 bytes, big-endian), the header
//! (JSON, [`Header`]), then the body: the length of the expiries JSON
//! (4 bytes), the expiries, the checker snapshot.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_128;

/// Version of the snapshot record layout. Older versions are never
/// trusted: version 1 had no header and version 2 used SHA-256 digests; a
/// record of either is replayed past and replaced by the next snapshot.
const VERSION: u32 = 3;

/// A rolling digest of a journal's events: `chain(n) = XXH3-128(chain(n-1)
/// || XXH3-128(bytes(n)))` (each as 16 little-endian bytes), with
/// `chain(0)` zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Chain {
    digest: u128,
    last: u128,
}

impl Chain {
    /// Covers one more event, given its exact stored bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.last = xxh3_128(bytes);
        let mut both = [0u8; 32];
        both[..16].copy_from_slice(&self.digest.to_le_bytes());
        both[16..].copy_from_slice(&self.last.to_le_bytes());
        self.digest = xxh3_128(&both);
    }

    /// This chain extended over `events`, without changing it.
    pub fn extended<'a>(mut self, events: impl IntoIterator<Item = &'a [u8]>) -> Self {
        for bytes in events {
            self.push(bytes);
        }
        self
    }
}

/// The typed, versioned header of a snapshot record.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Header {
    version: u32,
    session_id: String,
    head: u64,
    /// [`Chain`] digest through `head`, hex.
    chain: String,
    /// XXH3-128 of the bytes of the event at `head`, hex (zero at head 0).
    last_event: String,
    /// XXH3-128 of the body, hex.
    body: String,
}

/// Why a stored snapshot was not used. The codes go to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Too short, or its header is not a header of this version.
    Unreadable,
    /// Written for another session.
    OtherSession,
    /// The body does not have the digest the header records.
    Checksum,
    /// The stored event at its head is not the one it was derived from.
    OtherJournal,
    /// The body does not restore a checker at the header's head.
    State,
    /// The body is intact and of a checker layout an earlier build wrote
    /// (not damage: the next snapshot is of this build's layout).
    Earlier,
}

impl Reject {
    /// Stable code for the log.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unreadable => "unreadable",
            Self::OtherSession => "other_session",
            Self::Checksum => "checksum",
            Self::OtherJournal => "other_journal",
            Self::State => "state",
            Self::Earlier => "earlier_layout",
        }
    }
}

/// A snapshot record whose header was checked (and, from [`unseal`], its
/// body digest); the caller still checks the event at `head` against
/// `chain` and restores the body.
#[derive(Debug)]
pub(crate) struct Unsealed<'a> {
    pub head: u64,
    pub chain: Chain,
    pub body: &'a [u8],
    /// The body's digest as the header records it.
    body_digest: u128,
}

impl Unsealed<'_> {
    /// Whether `bytes`, the stored event at `head`, is the event the
    /// snapshot was derived from.
    pub fn covers(&self, bytes: &[u8]) -> bool {
        xxh3_128(bytes) == self.chain.last
    }

    /// Whether the body has the digest the header records.
    pub fn body_intact(&self) -> bool {
        xxh3_128(self.body) == self.body_digest
    }
}

/// Frames `body` (expiries and checker state) for `session_id` at `head`.
pub(crate) fn seal(session_id: &str, head: u64, chain: Chain, body: &[u8]) -> Vec<u8> {
    let header = Header {
        version: VERSION,
        session_id: session_id.to_owned(),
        head,
        chain: hex(chain.digest),
        last_event: hex(chain.last),
        body: hex(xxh3_128(body)),
    };
    let header = serde_json::to_vec(&header).unwrap_or_default();
    let mut out = Vec::with_capacity(12 + header.len() + body.len());
    out.extend_from_slice(&head.to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(header.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(&header);
    out.extend_from_slice(body);
    out
}

/// Reads a record written by [`seal`] for `session_id`, checking its
/// version, session and body digest.
#[cfg(test)]
pub(crate) fn unseal<'a>(session_id: &str, bytes: &'a [u8]) -> Result<Unsealed<'a>, Reject> {
    let u = unseal_header(session_id, bytes)?;
    if !u.body_intact() {
        return Err(Reject::Checksum);
    }
    Ok(u)
}

/// [`unseal`] short of the body digest, which the caller checks with
/// [`Unsealed::body_intact`] before it trusts the body (the engine checks
/// it while the body is restored, on another thread).
pub(crate) fn unseal_header<'a>(session_id: &str, bytes: &'a [u8]) -> Result<Unsealed<'a>, Reject> {
    let u = Reject::Unreadable;
    let head = u64::from_be_bytes(bytes.get(..8).ok_or(u)?.try_into().map_err(|_| u)?);
    let n = u32::from_be_bytes(bytes.get(8..12).ok_or(u)?.try_into().map_err(|_| u)?) as usize;
    let end = n.checked_add(12).ok_or(u)?;
    let header: Header = serde_json::from_slice(bytes.get(12..end).ok_or(u)?).map_err(|_| u)?;
    if header.version != VERSION || header.head != head {
        return Err(u);
    }
    if header.session_id != session_id {
        return Err(Reject::OtherSession);
    }
    let body = bytes.get(end..).ok_or(u)?;
    let body_digest = unhex(&header.body).ok_or(Reject::Checksum)?;
    let chain = Chain {
        digest: unhex(&header.chain).ok_or(u)?,
        last: unhex(&header.last_event).ok_or(u)?,
    };
    if head == 0 && chain != Chain::default() {
        return Err(Reject::OtherJournal);
    }
    Ok(Unsealed {
        head,
        chain,
        body,
        body_digest,
    })
}

fn hex(digest: u128) -> String {
    format!("{digest:032x}")
}

/// The digest `hex` wrote: exactly 32 lowercase or uppercase hex digits
/// (`from_str_radix` alone would also take a sign).
fn unhex(s: &str) -> Option<u128> {
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u128::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_record_unseals_only_for_its_session_and_body() {
        let chain = Chain::default().extended([b"e1".as_slice(), b"e2".as_slice()]);
        let rec = seal("s", 2, chain, b"body");
        let u = unseal("s", &rec).unwrap();
        assert_eq!((u.head, u.chain, u.body), (2, chain, b"body".as_slice()));
        assert!(u.covers(b"e2") && !u.covers(b"e1"));
        assert_eq!(unseal("t", &rec).unwrap_err(), Reject::OtherSession);
        let mut edited = rec.clone();
        *edited.last_mut().unwrap() ^= 1;
        assert_eq!(unseal("s", &edited).unwrap_err(), Reject::Checksum);
        for cut in [0, 7, 11, 20, rec.len() - 1] {
            assert!(unseal("s", &rec[..cut]).is_err(), "{cut}");
        }
        // Chains differ by content and by order.
        let swapped = Chain::default().extended([b"e2".as_slice(), b"e1".as_slice()]);
        assert_ne!(swapped, chain);
    }

    #[test]
    fn a_digest_reads_back_only_as_written() {
        for d in [0, 1, u128::MAX] {
            assert_eq!(unhex(&hex(d)), Some(d));
        }
        assert_eq!(unhex(&format!("+{}", "0".repeat(31))), None);
        // A version 2 digest (SHA-256, 64 digits) is not one.
        assert_eq!(unhex(&"0".repeat(64)), None);
    }

    #[test]
    fn a_record_of_another_version_is_unreadable() {
        let rec = seal("s", 1, Chain::default().extended([b"e1".as_slice()]), b"b");
        let (from, to) = (br#""version":3"#, br#""version":2"#);
        let at = rec.windows(from.len()).position(|w| w == from).unwrap();
        let mut v2 = rec.clone();
        v2[at..at + to.len()].copy_from_slice(to);
        assert_eq!(unseal("s", &v2).unwrap_err(), Reject::Unreadable);
    }
}
