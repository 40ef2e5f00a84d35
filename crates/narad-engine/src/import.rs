//! Import of one session's journal, checked and appended all or nothing.

use narad_core::ProfileSet;
use narad_store::{Batch, Expect, SideSpace, Store, StoredEvent};
use serde_json::Value;

use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};
use crate::journal::{Journal, Meta};

impl<S: Store + 'static> Engine<S> {
    /// Imports one session's journal (JSONL records as bytes, in order):
    /// every event is checked after the session's stored journal by a fresh
    /// checker, already-stored events are recognized as redeliveries, and
    /// the new ones are appended in **one** batch — all or nothing. A new
    /// session gets all profiles. Returns `(session, events appended)`.
    pub async fn import(
        &self,
        p: &Principal,
        records: &[Vec<u8>],
    ) -> Result<(String, u64), EngineError> {
        self.authorize(p, Action::CreateSession)?;
        let validator = narad_core::Validator::default();
        let mut events = Vec::new();
        for (i, r) in records.iter().enumerate() {
            match validator.parse(r) {
                Ok(narad_core::Parsed::Record {
                    record: narad_core::Record::Authority(ev),
                    ..
                }) => events.push(ev),
                Ok(_) => {
                    return Err(EngineError::InvalidCommand(format!(
                        "record {} is not an authority event",
                        i + 1
                    )))
                }
                Err(e) => {
                    return Err(EngineError::Rejected {
                        code: e.code.as_str(),
                        section: "5",
                        message: format!("record {}: {e}", i + 1),
                    })
                }
            }
        }
        let Some(first) = events.first() else {
            return Err(EngineError::InvalidCommand("nothing to import".into()));
        };
        let sid = first.envelope.session_id.clone();
        if events.iter().any(|e| e.envelope.session_id != sid) {
            return Err(EngineError::InvalidCommand(
                "one import holds one session".into(),
            ));
        }
        // Every type is authorized (the trace/debug gate included), each once.
        let types: std::collections::BTreeSet<&str> = events
            .iter()
            .map(|ev| {
                ev.wire
                    .json()
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            })
            .collect();
        for event_type in types {
            self.authorize(
                p,
                Action::Write {
                    session_id: &sid,
                    event_type,
                },
            )?;
        }
        let cell = self.cell(&sid);
        let mut slot = cell.lock().await;
        *slot = None; // rebuilt from the store after the import
        let (meta, new_session) = match self.meta(&sid).await {
            Ok(m) => (m, false),
            Err(EngineError::UnknownSession) => (
                Meta {
                    profiles: ProfileSet::all(),
                    workspace_id: None,
                },
                true,
            ),
            Err(e) => return Err(e),
        };
        let mut j = Journal::hydrate(&*self.inner.store, &sid, meta.clone()).await?;
        let head = j.head;
        let mut fresh = Vec::new();
        for (i, ev) in events.iter().enumerate() {
            match j.checker.push(&narad_core::Record::Authority(ev.clone())) {
                Ok(narad_core::checker::Applied::Applied) => fresh.push(StoredEvent::from(ev)),
                Ok(_) => {}
                Err(r) => {
                    return Err(EngineError::Rejected {
                        code: r.code,
                        section: r.section,
                        message: format!("record {}: {}", i + 1, r.message),
                    })
                }
            }
        }
        let n = fresh.len() as u64;
        let mut batch = Batch {
            session_id: sid.clone(),
            expected_head: head,
            events: fresh,
            ..Batch::default()
        };
        if new_session {
            batch.side.push(side(
                SideSpace::Session,
                &sid,
                Expect::Absent,
                meta.encode(),
            ));
        }
        if batch.events.is_empty() && batch.side.is_empty() {
            return Ok((sid, 0));
        }
        self.append_resolving(batch).await?;
        Ok((sid, n))
    }
}
