//! `Engine::import`: appending an externally produced journal through the
//! checker, idempotently, so that a rerun or a concurrent identical import
//! finds its events already stored and appends nothing.

use narad_core::checker::Applied;
use narad_core::model::AuthorityPayload;
use narad_core::{AuthorityEvent, ProfileSet, Record};
use narad_store::{Batch, Expect, SideSpace, Store, StoreError, StoredEvent};
use serde_json::Value;

use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};
use crate::journal::{Journal, Meta};

/// How often an import reloads the session after losing a race with
/// another writer before it reports the conflict.
const RELOADS: usize = 8;

impl<S: Store + 'static> Engine<S> {
    /// Imports records of one session (JSONL records as bytes, in order):
    /// every event is checked after the session's stored journal, events
    /// already stored with identical bytes are recognized as redeliveries,
    /// and the new ones are appended in **one** batch — all or nothing.
    /// A new session gets all profiles. Returns `(session, events appended)`.
    ///
    /// The batch carries what a command's would: the timers of imported
    /// deadlines and the interrupt-index entry of each imported
    /// `interrupt.requested`, so [`Engine::resolve_interrupt`] and
    /// [`Engine::open_interrupts`] find it by its id. An interrupt id that
    /// another session of the store holds is refused (`invalid_command`):
    /// an interrupt is resolved by its id alone.
    ///
    /// A long journal can be imported in consecutive slices, one call each:
    /// the checked session stays cached between calls. When another writer
    /// appended meanwhile (a head or side-record conflict, or a refusal
    /// decided on an outdated journal), the session is reloaded and the
    /// slice checked again, so two identical imports running at once both
    /// succeed and store the journal once.
    pub async fn import(
        &self,
        p: &Principal,
        records: &[Vec<u8>],
    ) -> Result<(String, u64), EngineError> {
        let (sid, n, freed) = self.import_checked(p, records).await?;
        if freed {
            // Imported events may have freed the slot (a terminal of the
            // active run): a start queued behind it starts now, not at the
            // next command. The import itself is durable either way; a
            // queue that cannot start now waits for a later pass.
            if let Err(e) = self.drain_queue(p, &sid).await {
                tracing::warn!(
                    session_id = sid.as_str(),
                    code = e.code(),
                    "queued starts wait after an import"
                );
            }
        }
        Ok((sid, n))
    }

    /// [`Engine::import`] without the queue pass; also says whether the
    /// imported events freed the session's slot.
    async fn import_checked(
        &self,
        p: &Principal,
        records: &[Vec<u8>],
    ) -> Result<(String, u64, bool), EngineError> {
        crate::telemetry::traced("import", "", async {
            self.authorize(p, Action::CreateSession)?;
            let events = parse(records)?;
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
            let mut reloads = 0;
            loop {
                // The cached journal is taken out: it goes back only if it
                // matches the store after this slice.
                let (j, new_session) = match slot.take() {
                    Some(j) => (j, false),
                    None => self.load_for_import(&sid).await?,
                };
                let held = j.head;
                let busy = j.checker.slot(&sid).is_some();
                match self.import_into(j, &events, new_session).await {
                    Ok((j, n)) => {
                        // A journal dropped after a redelivery is not known
                        // here: count the slot as possibly freed.
                        let freed = busy
                            && n > 0
                            && j.as_ref().is_none_or(|j| j.checker.slot(&sid).is_none());
                        *slot = j;
                        return Ok((sid, n, freed));
                    }
                    Err(e) if reloads < RELOADS && self.lost_race(held, &sid, &e).await? => {
                        reloads += 1;
                    }
                    Err(e) => return Err(e),
                }
            }
        })
        .await
    }

    /// The session as stored, or an empty one with all profiles when the
    /// store does not know it (`true`: the import creates it).
    async fn load_for_import(&self, sid: &str) -> Result<(Journal, bool), EngineError> {
        let (meta, new_session) = match self.meta(sid).await {
            Ok(m) => (m, false),
            Err(EngineError::UnknownSession { .. }) => (
                Meta {
                    profiles: ProfileSet::all(),
                    workspace_id: None,
                    created_at: None,
                    labels: Default::default(),
                    archived: false,
                    origin: None,
                    create_key: None,
                },
                true,
            ),
            Err(e) => return Err(e),
        };
        let j = self.hydrate_with(sid, Some(meta)).await?;
        Ok((j, new_session))
    }

    /// Checks `events` after `j` and appends the new ones; returns the
    /// journal advanced past them (`None` when it no longer matches the
    /// store) and how many events were appended.
    async fn import_into(
        &self,
        mut j: Journal,
        events: &[AuthorityEvent],
        new_session: bool,
    ) -> Result<(Option<Journal>, u64), EngineError> {
        self.recall_stored(&mut j, events).await?;
        let mut fresh = Vec::new();
        let mut requested = Vec::new();
        for (i, ev) in events.iter().enumerate() {
            let record = Record::Authority(ev.clone());
            let mut pushed = j.checker.push(&record);
            for _ in 0..2 {
                match &pushed {
                    // It names closed history the checker left to the store.
                    Err(r) if r.code == narad_core::checker::CLOSED_RECALL => {
                        crate::closed_history::recall_for(&*self.inner.store, &mut j).await?;
                        pushed = j.checker.push(&record);
                    }
                    _ => break,
                }
            }
            match pushed {
                Ok(Applied::Applied) => {
                    if let AuthorityPayload::InterruptRequested { interrupt_id, .. } = &ev.payload {
                        requested.push(interrupt_id.as_str());
                    }
                    fresh.push(StoredEvent::from(ev));
                }
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
        // An archived session is read-only: only an import that adds
        // nothing (its journal is already stored) passes.
        if j.meta.archived && !fresh.is_empty() {
            return Err(EngineError::SessionArchived);
        }
        let n = fresh.len() as u64;
        for ev in &fresh {
            j.note_expiry(&ev.bytes);
        }
        let mut batch = Batch {
            session_id: j.session_id.clone(),
            expected_head: j.head,
            events: fresh,
            ..Batch::default()
        };
        // Imported deadlines (interrupt expiry, `retryAt`) join the due index.
        let (timers, _) = self.timer_writes(&j, &batch.events, &[]).await?;
        batch.side.extend(timers);
        // Imported interrupts join the store-wide index that
        // resolve-interrupt and `open_interrupts` find them by, as a
        // requested one does (a fork writes it too).
        for iid in requested {
            match self.inner.store.side(SideSpace::Interrupt, iid).await? {
                None => batch
                    .side
                    .push(crate::interrupt_index::entry(&j.session_id, iid)),
                Some(owner) if owner == j.session_id.as_bytes() => {}
                Some(_) => {
                    return Err(EngineError::InvalidCommand(format!(
                        "interrupt `{}` is another session's in this store: an \
                         interrupt is resolved by its id alone",
                        iid.escape_debug()
                    )))
                }
            }
        }
        if new_session {
            // The session began with its first event (timestamps are
            // informational, as the index's `updated_at` already is).
            j.meta.created_at = Some(events.first().map_or_else(
                || crate::host::timestamp(self.inner.clock.now()),
                |ev| ev.envelope.timestamp.clone(),
            ));
            batch.side.push(side(
                SideSpace::Session,
                &j.session_id,
                Expect::Absent,
                j.meta.encode(),
            ));
        }
        if batch.events.is_empty() && batch.side.is_empty() {
            return Ok((Some(j), 0));
        }
        let entry = crate::index::SessionEntry::of(
            &j,
            &j.meta,
            j.head + n,
            batch.events.last().and_then(crate::index::event_time),
        );
        batch.side.push(entry.write()?);
        // A long import carries reducer snapshots as commands do, so the
        // session it made hydrates from one rather than replaying it all.
        let snapshot = j.snapshot_due(batch.events.len(), self.inner.config.snapshot_every);
        if snapshot {
            crate::closed_history::before_snapshot(&*self.inner.store, &mut j).await?;
            let (back, write) = j
                .snapshot_write(batch.events.clone(), crate::closed_history::PER_BATCH)
                .await
                .ok_or_else(|| {
                    EngineError::Store(StoreError::Backend(
                        "encoding the session's snapshot failed".into(),
                    ))
                })?;
            j = back;
            batch.side.extend(write);
        }
        // The chain of covered bytes advances with the batch; on failure
        // this journal is dropped and reloaded.
        j.appended(&batch.events);
        let appended = self.append_resolving(batch).await?;
        if appended.redelivered {
            // Another writer stored these events first; the store's head
            // may be past them, so this journal is not kept.
            return Ok((None, 0));
        }
        j.head = appended.head;
        if snapshot {
            j.snapshotted(appended.head);
        }
        Ok((Some(j), n))
    }

    /// Gives `j`'s checker the stored events among `events`' ids that it
    /// was restored without (a snapshot keeps no eventIds: the store
    /// does), in one store read, so a redelivery of one is recognized as
    /// it is by a checker that replayed the whole journal.
    async fn recall_stored(
        &self,
        j: &mut Journal,
        events: &[AuthorityEvent],
    ) -> Result<(), EngineError> {
        let sid = j.session_id.clone();
        let ids: Vec<&str> = events
            .iter()
            .map(|ev| ev.envelope.event_id.as_str())
            .filter(|id| j.checker.may_have_forgotten(&sid, id))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        // The store checked each against its key. One stored past what the
        // snapshot covered is not recalled (`false`): another writer's
        // event, which the append's head check meets.
        for stored in self.inner.store.find_events(&sid, &ids).await? {
            j.checker.recall(&sid, &stored.bytes);
        }
        Ok(())
    }

    /// Whether `e` came from another writer having appended to the session
    /// since it was loaded at head `held`: the import then reloads.
    async fn lost_race(&self, held: u64, sid: &str, e: &EngineError) -> Result<bool, EngineError> {
        match e {
            EngineError::Store(StoreError::HeadConflict { .. } | StoreError::SideConflict) => {
                Ok(true)
            }
            _ => self.stale(held, sid, e).await,
        }
    }
}

fn parse(records: &[Vec<u8>]) -> Result<Vec<AuthorityEvent>, EngineError> {
    let validator = narad_core::Validator::default();
    let mut events = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        match validator.parse(r) {
            Ok(narad_core::Parsed::Record {
                record: Record::Authority(ev),
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
                    message: format!("record {}: {}", i + 1, e.message),
                })
            }
        }
    }
    Ok(events)
}
