//! What the embedding host injects: the clock, the id source and the
//! authorization hook. The engine takes no time, randomness or permission
//! from anywhere else, so tests can fix all three.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The engine's only source of time (timestamps, interrupt expiry).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that only moves when told (tests, replays).
///
/// ```
/// use narad_engine::{Clock, ManualClock};
/// let c = ManualClock::at_unix(1_780_000_000);
/// let t0 = c.now();
/// c.advance(std::time::Duration::from_secs(5));
/// assert_eq!(c.now().duration_since(t0).unwrap().as_secs(), 5);
/// ```
#[derive(Debug)]
pub struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    /// A clock at `secs` after the Unix epoch (past what a time can hold:
    /// at the latest time a timestamp names).
    pub fn at_unix(secs: u64) -> Self {
        Self(Mutex::new(after(
            SystemTime::UNIX_EPOCH,
            Duration::from_secs(secs),
        )))
    }
    /// Moves the clock forward (at most to the latest time a timestamp
    /// names, 9999-12-31T23:59:59.999Z).
    pub fn advance(&self, by: Duration) {
        if let Ok(mut t) = self.0.lock() {
            *t = after(*t, by);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        self.0.lock().map_or(SystemTime::UNIX_EPOCH, |t| *t)
    }
}

/// The latest time a protocol timestamp names: 9999-12-31T23:59:59.999Z.
pub(crate) fn latest() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(253_402_300_799, 999_000_000)
}

/// Formats a time as the protocol's ISO-8601 UTC timestamp (milliseconds).
/// A time the format cannot name is written as the nearest one it can:
/// 1970-01-01T00:00:00.000Z for a time before the epoch (a clock set
/// wrong, a cut-off further back than the epoch), and
/// 9999-12-31T23:59:59.999Z for one after 9999 (a deadline that means
/// "never"). Neither stops the engine.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use narad_engine::timestamp;
/// assert_eq!(timestamp(UNIX_EPOCH + Duration::from_millis(1_500)), "1970-01-01T00:00:01.500Z");
/// assert_eq!(timestamp(UNIX_EPOCH - Duration::from_secs(86_400)), "1970-01-01T00:00:00.000Z");
/// let far = UNIX_EPOCH + Duration::from_secs(1 << 40);
/// assert_eq!(timestamp(far), "9999-12-31T23:59:59.999Z");
/// ```
pub fn timestamp(t: SystemTime) -> String {
    let t = t.clamp(SystemTime::UNIX_EPOCH, latest());
    humantime::format_rfc3339_millis(t).to_string()
}

/// `now + d`, or the latest time a timestamp names when that comes first
/// (a lease or token time-to-live of years, an expiry of "never").
pub(crate) fn after(now: SystemTime, d: Duration) -> SystemTime {
    now.checked_add(d).map_or_else(latest, |t| t.min(latest()))
}

/// Where new ids come from (`eventId`, `runId`, `waitId`, ...).
pub trait IdSource: Send + Sync + std::fmt::Debug {
    /// A fresh id; `kind` is a short prefix such as `evt` or `run`.
    fn next_id(&self, kind: &str) -> String;
}

/// 128 bits from the operating system's random source, or a clock and a
/// counter if that source ever fails (unique, not unguessable).
fn random_bytes() -> [u8; 16] {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        b[..8].copy_from_slice(&t.to_be_bytes());
        b[8..].copy_from_slice(&n.to_be_bytes());
    }
    b
}

fn hex_id(kind: &str, b: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(kind.len() + 33);
    out.push_str(kind);
    out.push('-');
    for x in b {
        out.push(char::from(HEX[usize::from(x >> 4)]));
        out.push(char::from(HEX[usize::from(x & 0xf)]));
    }
    out
}

/// Unguessable ids: 128 bits from the operating system's random source.
///
/// ```
/// use narad_engine::{IdSource, RandomIds};
/// let id = RandomIds.next_id("run");
/// assert!(id.starts_with("run-") && id.len() == "run-".len() + 32);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdSource for RandomIds {
    fn next_id(&self, kind: &str) -> String {
        hex_id(kind, &random_bytes())
    }
}

/// The default ids: time-ordered and still unguessable. The first 48 bits
/// are the milliseconds since the Unix epoch, the other 80 are random
/// (the layout of a UUIDv7), written as 32 hex digits after `kind-`.
///
/// Why: the stores key their tables by session id and event id, in
/// B-trees. Purely random ids put each new session and event on a random
/// page, so a commit of many sessions rewrites pages all over a growing
/// file; ids made later sort after earlier ones, so new keys land
/// together at the end. The engine's own bench measured a 64-session
/// redb run falling from 25k to 16k commands/s over ten rounds of new
/// sessions with random ids, and staying near 20k–24k with these.
///
/// Execution tokens and client leases are capabilities: they stay fully
/// random ([`RandomIds`]).
///
/// ```
/// use narad_engine::{IdSource, OrderedIds};
/// let (a, b) = (OrderedIds.next_id("session"), OrderedIds.next_id("session"));
/// assert!(a.starts_with("session-") && a.len() == "session-".len() + 32);
/// assert_ne!(a, b);
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct OrderedIds;

impl IdSource for OrderedIds {
    fn next_id(&self, kind: &str) -> String {
        let mut b = random_bytes();
        if !matches!(kind, "token" | "lease") {
            let ms = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
        }
        hex_id(kind, &b)
    }
}

/// Predictable ids `kind-1`, `kind-2`, ... (tests).
#[derive(Debug, Default)]
pub struct SequentialIds(AtomicU64);

impl IdSource for SequentialIds {
    fn next_id(&self, kind: &str) -> String {
        format!("{kind}-{}", self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

/// Who is calling; opaque to the engine, meaningful to the [`Authorizer`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

impl Principal {
    /// A principal by name.
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }
}

/// What a principal asks to do, for the [`Authorizer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// Create a session.
    CreateSession,
    /// Append authority events of `event_type` to a session.
    Write {
        /// The session.
        session_id: &'a str,
        /// One type the command appends; a command appending several
        /// types asks once for each.
        event_type: &'a str,
    },
    /// A client-execution control about an executor's lease alone
    /// (`client.attached`, `client.heartbeat`): it acts on no session.
    /// Controls acting on a session (`client.tool.finish`, a delivery
    /// failure) are [`Action::Write`] with the token's session.
    ClientLease {
        /// The logical executor.
        executor_id: &'a str,
        /// The control's type.
        control: &'a str,
    },
    /// Read a session's history or subscribe to it.
    Read {
        /// The session.
        session_id: &'a str,
    },
    /// Read a workspace's watch stream.
    ReadWorkspace {
        /// The workspace.
        workspace_id: &'a str,
    },
}

/// The authorization hook, called before every command and read. The
/// engine refuses with `not_authorized` when it answers `false`. A command
/// asks once for every distinct event type its batch appends (`stop` asks
/// for `run.stop.requested`, `tool.call.finished`, `interrupt.resolved`,
/// `run.resumed`, `run.cancelled` as it needs them), before anything is
/// appended. Trace and debug profile events need [`Authorizer::may_debug`]
/// as well: without it, writing them is refused and reads
/// ([`crate::Engine::history`], [`crate::Engine::subscribe`],
/// [`crate::Engine::attach`]) leave them out.
pub trait Authorizer: Send + Sync + std::fmt::Debug {
    /// Whether `principal` may do `action`.
    fn allows(&self, principal: &Principal, action: Action<'_>) -> bool;
    /// Whether `principal` may write or read trace and debug events.
    fn may_debug(&self, principal: &Principal) -> bool {
        let _ = principal;
        false
    }
}

/// Allows everything except trace and debug (embedded, single-tenant use).
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl Authorizer for AllowAll {
    fn allows(&self, _: &Principal, _: Action<'_>) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time_part(id: &str) -> &str {
        let hex = id.rsplit('-').next().unwrap_or_default();
        hex.get(..12).unwrap_or_default()
    }

    #[test]
    fn ordered_ids_sort_by_the_millisecond_they_were_made() {
        let first = OrderedIds.next_id("session");
        std::thread::sleep(Duration::from_millis(3));
        let later: Vec<String> = (0..100).map(|_| OrderedIds.next_id("session")).collect();
        for id in &later {
            assert_eq!(id.len(), "session-".len() + 32);
            assert!(id.as_str() > first.as_str(), "{id} sorts before {first}");
            assert!(time_part(id) > time_part(&first));
        }
        let mut unique = later.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), later.len());
    }

    #[test]
    fn tokens_and_leases_carry_no_time() {
        // 48 random bits where the others have the time: two made in the
        // same millisecond share a prefix with probability 2^-48.
        for kind in ["token", "lease"] {
            let (a, b) = (OrderedIds.next_id(kind), OrderedIds.next_id(kind));
            assert_ne!(time_part(&a), time_part(&b), "{kind} ids look time-ordered");
        }
        let (a, b) = (OrderedIds.next_id("evt"), OrderedIds.next_id("evt"));
        assert!(time_part(&a) <= time_part(&b));
    }
}
