//! Time travel and forks: the reduced state of a session at a past
//! `sessionSequence`, and a new session whose journal is a prefix of
//! another's, re-identified.

use std::collections::BTreeMap;

use bytes::Bytes;
use narad_core::checker::Checker;
use narad_core::{Parsed, Record};
use narad_store::{Batch, Expect, SideSpace, Store, StoredEvent};
use serde_json::Value;

use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Action, Principal};
use crate::index::{event_time, SessionEntry};
use crate::journal::{Journal, Meta};

/// A session's reduced state at a past point ([`Engine::state_at`]).
#[derive(Debug, Clone)]
pub struct StateAt {
    /// The session.
    pub session_id: String,
    /// The `sessionSequence` it reflects.
    pub sequence: u64,
    /// The checker holding the reduced state (runs, workflows, slot,
    /// transcript) after exactly the events through `sequence`.
    pub checker: Checker,
}

impl StateAt {
    /// The reduced state as deterministic JSON (`Checker::state_json`).
    pub fn state_json(&self) -> Option<String> {
        self.checker.state_json(&self.session_id)
    }

    /// The reduced state as Rust types, as the checker holds it: without
    /// the details [`crate::Engine::state`] folds from the journal (pass
    /// the events through `sequence` to
    /// [`SessionState::with_journal`](crate::SessionState::with_journal)).
    pub fn state(&self) -> Option<crate::SessionState> {
        crate::SessionState::from_checker(&self.checker, &self.session_id)
    }
}

impl<S: Store + 'static> Engine<S> {
    /// The reduced state of `session_id` after its events through
    /// `sequence` (from its snapshot when that does not pass `sequence`,
    /// else by replay). A `sequence` past the head is `invalid_command`.
    pub async fn state_at(
        &self,
        p: &Principal,
        session_id: &str,
        sequence: u64,
    ) -> Result<StateAt, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let meta = self.meta(session_id).await?;
        if sequence == 0 {
            // Before its first event the session has no state to answer.
            return Err(EngineError::InvalidCommand(
                "a state is after 1 or more events; sequence 0 is before the session".into(),
            ));
        }
        // The state reads closed history too.
        let store = &*self.inner.store;
        let j = Journal::hydrate_whole_through(store, session_id, meta, sequence).await?;
        if j.head != sequence {
            return Err(EngineError::InvalidCommand(format!(
                "the session has {} events, not {sequence}",
                j.head
            )));
        }
        Ok(StateAt {
            session_id: session_id.to_owned(),
            sequence,
            checker: j.checker,
        })
    }

    /// Forks `session_id` at `through`: a new session whose journal is the
    /// source's first `through` events with a new session id, new event
    /// ids and new interrupt ids, every ordering (session, run-tree and
    /// workflow sequences), run, tool-call and workflow id and timestamp
    /// kept. The new journal is checked like any journal and appended in
    /// one batch with its metadata (profiles, workspace and labels of the
    /// source, and its origin), index entries and timers. Open work of the
    /// prefix stays open in the fork and can be continued; the source is
    /// not touched. Returns the new session's id.
    pub async fn fork(
        &self,
        p: &Principal,
        session_id: &str,
        through: u64,
    ) -> Result<String, EngineError> {
        crate::telemetry::traced("fork", session_id, async {
            self.authorize(p, Action::Read { session_id })?;
            self.authorize(p, Action::CreateSession)?;
            let src = self.meta(session_id).await?;
            let store = &*self.inner.store;
            let head = store.head(session_id).await?;
            if through == 0 || through > head {
                return Err(EngineError::InvalidCommand(format!(
                    "the session has {head} events; fork through 1..={head}"
                )));
            }
            let new_sid = self.inner.ids.next_id("session");
            let meta = Meta {
                profiles: src.profiles,
                workspace_id: src.workspace_id.clone(),
                created_at: Some(timestamp(self.inner.clock.now())),
                labels: src.labels.clone(),
                archived: false,
                origin: Some((session_id.to_owned(), through)),
                create_key: None,
            };
            let mut j = Journal::new(&new_sid, meta.clone());
            let mut interrupts: BTreeMap<String, String> = BTreeMap::new();
            let mut events: Vec<StoredEvent> = Vec::new();
            crate::journal::for_each_event(store, session_id, 0, through, 1024, |ev| {
                let cursor = ev.position.session_sequence;
                let bytes = self.reidentify(&ev.bytes, &new_sid, &mut interrupts)?;
                let parsed = j.validator.parse(&bytes).map_err(|e| {
                    EngineError::InvalidCommand(format!(
                        "forked event {cursor}: {}",
                        e.code.as_str()
                    ))
                })?;
                let Parsed::Record {
                    record: Record::Authority(ae),
                    ..
                } = parsed
                else {
                    return Err(EngineError::InvalidCommand(format!(
                        "forked event {cursor} is not an authority event"
                    )));
                };
                j.checker
                    .push(&Record::Authority(ae.clone()))
                    .map_err(|r| EngineError::Rejected {
                        code: r.code,
                        section: r.section,
                        message: format!("forked event {cursor}: {}", r.message),
                    })?;
                j.note_expiry(&bytes);
                events.push(StoredEvent::from(&ae));
                Ok(())
            })
            .await?;
            let mut batch = Batch {
                session_id: new_sid.clone(),
                expected_head: 0,
                events,
                ..Batch::default()
            };
            batch.side.push(side(
                SideSpace::Session,
                &new_sid,
                Expect::Absent,
                meta.encode(),
            ));
            for iid in interrupts.values() {
                batch
                    .side
                    .push(crate::interrupt_index::entry(&new_sid, iid));
            }
            let (timers, _) = self.timer_writes(&j, &batch.events, &[]).await?;
            batch.side.extend(timers);
            let entry =
                SessionEntry::of(&j, &meta, through, batch.events.last().and_then(event_time));
            batch.side.push(entry.write()?);
            j.appended(&batch.events);
            self.append_watch(
                batch,
                meta.workspace_id.as_deref(),
                "session.created",
                &new_sid,
            )
            .await?;
            Ok(new_sid)
        })
        .await
    }

    /// One source event as the fork's: its session id, a fresh event id,
    /// and interrupt ids mapped to fresh ones (the interrupt index is
    /// global); everything else byte-for-byte the same value.
    fn reidentify(
        &self,
        bytes: &[u8],
        new_sid: &str,
        interrupts: &mut BTreeMap<String, String>,
    ) -> Result<Bytes, EngineError> {
        let bad = || EngineError::InvalidCommand("a source event is not a JSON object".into());
        let mut v: Value = serde_json::from_slice(bytes).map_err(|_| bad())?;
        let o = v.as_object_mut().ok_or_else(bad)?;
        o.insert("sessionId".into(), Value::from(new_sid));
        o.insert("eventId".into(), Value::from(self.inner.ids.next_id("evt")));
        if let Some(Value::String(iid)) = o.get("interruptId") {
            let fresh = interrupts
                .entry(iid.clone())
                .or_insert_with(|| self.inner.ids.next_id("interrupt"))
                .clone();
            o.insert("interruptId".into(), Value::from(fresh));
        }
        serde_json::to_vec(&v).map(Bytes::from).map_err(|_| bad())
    }
}
