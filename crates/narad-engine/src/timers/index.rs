//! The timers that journal events create and clear: an interrupt's
//! `expiresAt` (created by `interrupt.requested`, cleared by
//! `interrupt.resolved`) and a pause's `retryAt` (created by `run.paused`,
//! cleared by `run.resumed`). The command loop adds these writes to the
//! batch of the events, whatever command drafted them.

use bytes::Bytes;
use narad_store::{SideSpace, SideWrite, Store, StoredEvent};
use serde_json::Value;

use super::{TimerKind, TimerRecord};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::journal::Journal;

/// The types whose events create or clear a timer.
const TIMER_TYPES: [&[u8]; 4] = [
    b"interrupt.requested",
    b"interrupt.resolved",
    b"run.paused",
    b"run.resumed",
];

/// Whether `bytes` hold one of [`TIMER_TYPES`] as a whole quoted string
/// (`"run.paused"`): a cheap filter run on every appended event before
/// the few that match are parsed. One pass over the quotes, found with
/// `memchr` (SIMD), comparing the bytes between each two consecutive
/// quotes (exactly a quoted string without its quotes, or what lies
/// between two strings) with the types; the byte-at-a-time split it
/// replaces was a twentieth of a command's CPU at 64 sessions.
fn mentions_timer_type(bytes: &[u8]) -> bool {
    let mut quotes = memchr::memchr_iter(b'"', bytes);
    let Some(mut open) = quotes.next() else {
        return false;
    };
    for close in quotes {
        let seg = bytes.get(open + 1..close).unwrap_or_default();
        if TIMER_TYPES.contains(&seg) {
            return true;
        }
        open = close;
    }
    false
}

/// The timers `events` (already applied to `j`) create and clear.
fn of_events(j: &Journal, events: &[StoredEvent]) -> (Vec<TimerRecord>, Vec<TimerRecord>) {
    let (mut created, mut cleared) = (Vec::new(), Vec::new());
    for ev in events {
        if !mentions_timer_type(&ev.bytes) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&ev.bytes) else {
            continue;
        };
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        let interrupt = |id: &str| {
            j.expiries
                .get(id)
                .map(|at| TimerRecord::new(TimerKind::Interrupt, &j.session_id, id, *at))
        };
        let resume = |wait: &str| {
            j.retries.get(wait).map(|(run, at)| {
                let mut t = TimerRecord::new(TimerKind::Resume, &j.session_id, wait, *at);
                t.run_id = Some(run.clone());
                t
            })
        };
        match text("type") {
            "interrupt.requested" => created.extend(interrupt(text("interruptId"))),
            "interrupt.resolved" => cleared.extend(interrupt(text("interruptId"))),
            "run.paused" if v.get("retryAt").is_some() => created.extend(resume(text("waitId"))),
            "run.resumed" => cleared.extend(resume(text("waitId"))),
            _ => {}
        }
    }
    // Created and cleared in one batch: nothing to store.
    let both: Vec<String> = created
        .iter()
        .filter(|c| cleared.iter().any(|d| d.key() == c.key()))
        .map(TimerRecord::key)
        .collect();
    created.retain(|c| !both.contains(&c.key()));
    cleared.retain(|c| !both.contains(&c.key()));
    (created, cleared)
}

impl<S: Store + 'static> Engine<S> {
    /// The timer writes of `events`: creations, and the conditional
    /// deletion of each cleared timer the store holds (a deadline set
    /// before the due index existed has none). Keys `planned` already
    /// writes are left to the plan (the driver deletes what it fires).
    /// Also answers the deletions with the bytes they expect.
    pub(crate) async fn timer_writes(
        &self,
        j: &Journal,
        events: &[StoredEvent],
        planned: &[SideWrite],
    ) -> Result<(Vec<SideWrite>, Vec<(String, Bytes)>), EngineError> {
        let (created, cleared) = of_events(j, events);
        let mine = |key: &str| {
            planned
                .iter()
                .any(|w| w.space == SideSpace::Timer && w.key == key)
        };
        let mut writes = Vec::new();
        let mut guards = Vec::new();
        for t in created {
            if !mine(&t.key()) {
                writes.push(t.create()?);
            }
        }
        for t in cleared {
            let key = t.key();
            if mine(&key) {
                continue;
            }
            let bytes = t.bytes()?;
            if self.inner.store.side(SideSpace::Timer, &key).await? == Some(bytes.clone()) {
                writes.push(t.delete()?);
                guards.push((key, bytes));
            }
        }
        Ok((writes, guards))
    }

    /// Whether any of `guards` (timer deletions a batch expected) no longer
    /// holds: the batch lost to another writer of the due index.
    pub(crate) async fn timers_moved(
        &self,
        guards: &[(String, Bytes)],
    ) -> Result<bool, EngineError> {
        for (key, bytes) in guards {
            if self.inner.store.side(SideSpace::Timer, key).await?.as_ref() != Some(bytes) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The conditional deletion of a stored timer, if it is stored.
    pub(crate) async fn stored_timer_delete(
        &self,
        t: &TimerRecord,
    ) -> Result<Option<SideWrite>, EngineError> {
        let stored = self.inner.store.side(SideSpace::Timer, &t.key()).await?;
        if stored == Some(t.bytes()?) {
            return Ok(Some(t.delete()?));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{mentions_timer_type, TIMER_TYPES};

    /// The filter answers exactly "contains `\"TYPE\"`" for each timer type.
    #[test]
    fn the_filter_matches_a_quoted_timer_type_only() {
        let quoted = |b: &[u8]| {
            TIMER_TYPES.iter().any(|t| {
                let q = [&b"\""[..], t, b"\""].concat();
                b.windows(q.len()).any(|w| w == q)
            })
        };
        let cases: [&[u8]; 11] = [
            br#"{"type":"run.paused","waitId":"w"}"#,
            br#"{"waitId":"w","type":"interrupt.resolved"}"#,
            br#"{"type":"run.resumed"}"#,
            br#"{"type":"interrupt.requested"}"#,
            br#"{"type":"run.pausedx"}"#,
            br#"{"type":"message.user.recorded","content":"run.paused"}"#,
            br#"{"type":"message.user.recorded","content":"say "run.paused" now"}"#,
            br#"run.paused"#,
            br#"x"run.paused"#,
            br#""run.paused""#,
            br#""#,
        ];
        for c in cases {
            assert_eq!(
                mentions_timer_type(c),
                quoted(c),
                "{}",
                String::from_utf8_lossy(c)
            );
        }
        assert!(mentions_timer_type(cases[0]));
        assert!(!mentions_timer_type(cases[4]));
    }
}
