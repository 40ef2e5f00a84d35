//! Durable timers: every deadline the engine owns is a record in the
//! store's due index (`SideSpace::Timer`), written in the batch of the
//! event that creates the deadline and deleted (conditionally on its
//! bytes) in the batch of the event that clears it.
//!
//! Keys are `{due_ms:020}/{kind}/{session}/{id}`, so the store's byte
//! order is due order and the driver lists only what is due. The value is
//! a typed, versioned [`TimerRecord`]; the driver reads the value, never
//! parses the key.
//!
//! Modules: `index` derives the timer writes of journal events
//! (interrupt expiry, automatic resume), `driver` fires what is due.

mod driver;
pub(crate) mod index;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use narad_store::{Expect, SideSpace, SideWrite};
use serde::{Deserialize, Serialize};

use crate::error::EngineError;

pub use driver::TIMER_PRINCIPAL;

/// The version of timer records this engine writes and reads.
const VERSION: u32 = 1;

fn version_one() -> u32 {
    VERSION
}

/// What a timer does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// An interrupt's `expiresAt`: resolved as `expired`, its run or
    /// workflow resumed.
    Interrupt,
    /// A client execution token's expiry: the call closes with
    /// `client_execution_expired`.
    Token,
    /// A client lease's expiry: the executor is unavailable, runs waiting
    /// on it pause.
    Lease,
    /// A pause's `retryAt`: the run resumes automatically.
    Resume,
}

impl TimerKind {
    /// The stable name, as in keys, reports and `narad tick`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupt",
            Self::Token => "token",
            Self::Lease => "lease",
            Self::Resume => "resume",
        }
    }
}

/// One durable deadline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TimerRecord {
    #[serde(default = "version_one")]
    pub(crate) v: u32,
    pub(crate) kind: TimerKind,
    /// The session it acts on (empty for a lease).
    pub(crate) session_id: String,
    /// The interrupt id, the tool call id, the executor id or the waitId.
    pub(crate) id: String,
    /// Milliseconds since the Unix epoch.
    pub(crate) due_ms: u64,
    /// The paused run, for a resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_id: Option<String>,
    /// The execution token, for a token expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<String>,
}

/// Milliseconds since the epoch (times before it count as 0). The
/// protocol's timestamps carry milliseconds, so a stored time maps to the
/// same key wherever it is read back.
pub(crate) fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl TimerRecord {
    pub(crate) fn new(kind: TimerKind, session_id: &str, id: &str, due: SystemTime) -> Self {
        Self {
            v: VERSION,
            kind,
            session_id: session_id.to_owned(),
            id: id.to_owned(),
            due_ms: millis(due),
            run_id: None,
            token: None,
        }
    }

    /// When it is due.
    pub(crate) fn due(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.due_ms)
    }

    /// Its key: byte order is due order.
    pub(crate) fn key(&self) -> String {
        format!(
            "{:020}/{}/{}/{}",
            self.due_ms,
            self.kind.name(),
            self.session_id,
            self.id
        )
    }

    /// Its stored bytes (deterministic: the guard of its deletion).
    pub(crate) fn bytes(&self) -> Result<Bytes, EngineError> {
        serde_json::to_vec(self)
            .map(Bytes::from)
            .map_err(|_| self.corrupt())
    }

    fn corrupt(&self) -> EngineError {
        EngineError::CorruptRecord {
            space: "timer",
            key: self.key(),
        }
    }

    /// Reads a stored record; anything else is `corrupt_record`.
    pub(crate) fn decode(key: &str, bytes: &[u8]) -> Result<Self, EngineError> {
        let corrupt = || EngineError::CorruptRecord {
            space: "timer",
            key: key.to_owned(),
        };
        let rec: Self = serde_json::from_slice(bytes).map_err(|_| corrupt())?;
        if rec.v != VERSION || rec.key() != key {
            return Err(corrupt());
        }
        Ok(rec)
    }

    /// The write recording it (it must not exist yet).
    pub(crate) fn create(&self) -> Result<SideWrite, EngineError> {
        Ok(SideWrite {
            space: SideSpace::Timer,
            key: self.key(),
            expect: Expect::Absent,
            value: Some(self.bytes()?),
        })
    }

    /// The write removing it, conditional on exactly its bytes: of two
    /// writers clearing one timer, one wins.
    pub(crate) fn delete(&self) -> Result<SideWrite, EngineError> {
        Ok(SideWrite {
            space: SideSpace::Timer,
            key: self.key(),
            expect: Expect::Equals(self.bytes()?),
            value: None,
        })
    }
}

/// One timer the driver fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiredTimer {
    /// What kind of deadline.
    pub kind: TimerKind,
    /// The session it acted on (empty for a lease).
    pub session_id: String,
    /// The interrupt id, tool call id, executor id or waitId.
    pub id: String,
    /// When it was due.
    pub due: SystemTime,
    /// What firing appended, e.g. `interrupt.resolved`; empty when
    /// firing appended nothing (a lapsed executor without open calls).
    pub event_types: Vec<&'static str>,
}

/// What one pass of the timer driver did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimerReport {
    /// Timers fired by this pass, in due order.
    pub fired: Vec<FiredTimer>,
    /// Due timers whose deadline was already cleared (or fired by another
    /// engine process): removed without acting.
    pub dropped: usize,
    /// Due timers refused now (kind, id, code): left for the next pass.
    pub failed: Vec<(TimerKind, String, &'static str)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_of_keys_is_due_order_and_records_round_trip() {
        let early = TimerRecord::new(
            TimerKind::Lease,
            "",
            "x",
            UNIX_EPOCH + Duration::from_millis(999),
        );
        let late = TimerRecord::new(
            TimerKind::Interrupt,
            "s",
            "a",
            UNIX_EPOCH + Duration::from_millis(1000),
        );
        assert!(early.key() < late.key());
        let bytes = late.bytes().unwrap();
        assert_eq!(TimerRecord::decode(&late.key(), &bytes).unwrap(), late);
        let err = TimerRecord::decode(&early.key(), &bytes).unwrap_err();
        assert_eq!(err.code(), "corrupt_record");
    }
}
