//! The command loop: plan from the reduced state, check every drafted
//! event, append atomically, and re-plan when another writer moved the
//! head. Also the small building blocks every command's plan uses.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use narad_store::{Batch, Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::append::{retry, Attempt};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::idempotency::write_record;
use crate::journal::{Draft, Journal};
use crate::queue::{self, QueuedStart};
use crate::telemetry;

/// How often a command plans again after its plan read closed history
/// the checker had left to the store (each time it is given back first).
const MISSED_PLANS: usize = 4;

pub(crate) fn side(space: SideSpace, key: &str, expect: Expect, value: Vec<u8>) -> SideWrite {
    SideWrite {
        space,
        key: key.to_owned(),
        expect,
        value: Some(Bytes::from(value)),
    }
}

/// The drafts and side writes of one command, and what it returns.
pub(crate) struct Plan<T> {
    pub(crate) drafts: Vec<Draft>,
    pub(crate) side: Vec<SideWrite>,
    pub(crate) out: T,
    /// Queue this top-level start (durably) instead of appending anything.
    pub(crate) enqueue: Option<QueuedStart>,
    /// Start the head of the durable queue if the slot is free, even when
    /// this command does not free it (a pass over a queue left waiting).
    pub(crate) drain: bool,
}

impl<T> Plan<T> {
    pub(crate) fn of(drafts: Vec<Draft>, out: T) -> Self {
        Self {
            drafts,
            side: Vec::new(),
            out,
            enqueue: None,
            drain: false,
        }
    }
}

impl<S: Store + 'static> Engine<S> {
    /// One command in its `narad.command` span, counted by outcome code.
    /// A command that takes no idempotency key (refused on the engine of
    /// an [`Idempotent`](crate::Idempotent) handle).
    pub(crate) async fn command<T>(
        &self,
        p: &Principal,
        session_id: &str,
        plan: impl Fn(&Journal) -> Result<Plan<T>, EngineError>,
    ) -> Result<(T, Vec<StoredEvent>), EngineError> {
        let name = telemetry::command_name(&plan);
        let attempts = async {
            if self.keyed.is_some() {
                return Err(EngineError::InvalidCommand(
                    "this command takes no idempotency key".into(),
                ));
            }
            self.command_attempts(p, session_id, None, plan).await
        };
        telemetry::traced(name, session_id, attempts).await
    }

    /// A command whose result an idempotency key can record: on the engine
    /// of an [`Idempotent`](crate::Idempotent) handle, a retry answers the
    /// recorded result and appends nothing.
    pub(crate) async fn command_keyed<T: Serialize + DeserializeOwned>(
        &self,
        p: &Principal,
        session_id: &str,
        plan: impl Fn(&Journal) -> Result<Plan<T>, EngineError>,
    ) -> Result<(T, Vec<StoredEvent>), EngineError> {
        let name = telemetry::command_name(&plan);
        let attempts = self.command_attempts(p, session_id, Some(Codec::json()), plan);
        telemetry::traced(name, session_id, attempts).await
    }

    /// The command loop: hydrate if needed, plan from the reduced state,
    /// check every drafted event, append atomically; when another writer
    /// moved the head, reload and plan again.
    async fn command_attempts<T>(
        &self,
        p: &Principal,
        session_id: &str,
        codec: Option<Codec<T>>,
        plan: impl Fn(&Journal) -> Result<Plan<T>, EngineError>,
    ) -> Result<(T, Vec<StoredEvent>), EngineError> {
        let cell = self.cell(session_id);
        let mut slot = cell.lock().await;
        let keyed = self.keyed.as_deref().zip(codec);
        let store_key = keyed.as_ref().map(|(k, _)| k.store_key(session_id));
        retry!(self, async {
            if let (Some((_, codec)), Some(key)) = (&keyed, &store_key) {
                // A retry of a keyed command answers what it answered then.
                if let Some((out, events)) = self.recorded(p, key, Some(session_id)).await? {
                    return Ok(Attempt::Done((codec.decode(key, out)?, events)));
                }
            }
            let j = self.loaded(&mut slot, session_id).await?;
            let span = tracing::debug_span!(telemetry::SPAN_PLAN, drafts = tracing::field::Empty);
            let mut planned = span.in_scope(|| plan(j));
            // A plan that read closed history the checker left to the
            // store plans again once it is given back.
            for _ in 0..MISSED_PLANS {
                let store = &*self.inner.store;
                // Boxed, as rarely run: see `loaded`.
                let recalled = match j.misses.take() {
                    (_, true) => Box::pin(crate::closed_history::recall_all(store, j)).await,
                    (missed, false) if !missed.is_empty() => {
                        Box::pin(crate::closed_history::recall(store, j, &missed)).await
                    }
                    _ => break,
                };
                if let Err(e) = recalled {
                    return self.reload_if_moved(&mut slot, e);
                }
                planned = span.in_scope(|| plan(j));
            }
            j.misses.take();
            if let Ok(p) = &planned {
                span.record("drafts", p.drafts.len());
            }
            let Plan {
                drafts,
                side,
                out,
                enqueue,
                drain,
            } = match planned {
                Ok(p) => p,
                Err(e) => {
                    // Refused on what we hold: make sure it is current.
                    if self.stale(j.head, session_id, &e).await? {
                        *slot = None;
                        return Ok(Attempt::Again);
                    }
                    return Err(e);
                }
            };
            // An archived session is read-only: only reads pass.
            if j.meta.archived && !(drafts.is_empty() && side.is_empty() && enqueue.is_none()) {
                return Err(EngineError::SessionArchived);
            }
            let mut side = side;
            if let (Some((keyed, codec)), Some(key)) = (&keyed, &store_key) {
                if drafts.is_empty() && !drain && !j.meta.archived {
                    let result = codec.encode(&out)?;
                    side.push(write_record(
                        keyed,
                        key.clone(),
                        session_id,
                        &[],
                        Vec::new(),
                        &result,
                    )?);
                }
            }
            if let Some(start) = enqueue {
                // Authorized now, by whoever queues it: the batch that later
                // starts it is another principal's.
                self.authorize_writes(p, session_id, ["run.started"])?;
                let queue = queue::list(&*self.inner.store, session_id).await?;
                side.push(queue::push(session_id, &queue, &start)?);
            }
            if drafts.is_empty() && !drain {
                if side.is_empty() {
                    // A read: answer from the current journal, not a cache
                    // another engine has moved past.
                    if self.inner.store.head(session_id).await? != j.head {
                        *slot = None;
                        return Ok(Attempt::Again);
                    }
                    return Ok(Attempt::Done((out, Vec::new())));
                }
                // Side records only, still guarded by the head the plan saw.
                let on_queue = queue::touches(&side);
                let batch = Batch {
                    session_id: session_id.to_owned(),
                    expected_head: j.head,
                    side,
                    ..Batch::default()
                };
                match self.append_resolving(batch).await {
                    Ok(_) => return Ok(Attempt::Done((out, Vec::new()))),
                    Err(StoreError::HeadConflict { .. }) => {
                        *slot = None;
                        self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                        return Ok(Attempt::Again);
                    }
                    Err(StoreError::SideConflict) if on_queue => {
                        // Another engine queued at the same key: read again.
                        self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                        return Ok(Attempt::Again);
                    }
                    Err(StoreError::SideConflict) if self.key_taken(&store_key).await? => {
                        // Another call with the same key won: answer its result.
                        return Ok(Attempt::Again);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            // Every type the batch appends, not only the first: `stop`
            // also appends `run.cancelled`, `tool.call.finished`, ...
            self.authorize_writes(p, session_id, drafts.iter().map(|d| d.ty))?;
            for d in &drafts {
                let profile = narad_core::registry::lookup(d.ty).map(|t| t.profile);
                if profile.is_some_and(|pr| !j.meta.profiles.contains(pr)) {
                    return Err(EngineError::ProfileInactive {
                        event_type: d.ty.to_owned(),
                    });
                }
            }
            let busy_before = j.checker.slot(session_id).is_some();
            let types: Vec<String> = match &store_key {
                Some(_) => drafts.iter().map(|d| d.ty.to_owned()).collect(),
                None => Vec::new(),
            };
            let now = timestamp(self.inner.clock.now());
            let names = crate::closed_history::drafts_name(j, &drafts);
            if let Err(e) = crate::closed_history::recall(&*self.inner.store, j, &names).await {
                return self.reload_if_moved(&mut slot, e);
            }
            let own = match j.apply(drafts, &*self.inner.ids, &now) {
                Ok(evs) => evs,
                Err((e, dirty)) => {
                    let head = j.head;
                    if dirty {
                        *slot = None;
                    }
                    // Another engine may have moved the session on: a rule
                    // refusal is final only against the current journal.
                    if self.stale(head, session_id, &e).await? {
                        *slot = None;
                        return Ok(Attempt::Again);
                    }
                    return Err(e);
                }
            };
            if let (Some((keyed, codec)), Some(key)) = (&keyed, &store_key) {
                let record = codec
                    .encode(&out)
                    .and_then(|r| write_record(keyed, key.clone(), session_id, &own, types, &r));
                match record {
                    Ok(w) => side.push(w),
                    Err(e) => {
                        *slot = None;
                        return Err(e);
                    }
                }
            }
            let mut events = own.clone();
            let frees = j.checker.slot(session_id).is_none() && (busy_before || drain);
            if frees {
                // The batch that frees the slot starts the head of the queue.
                let queue = match self.start_queued(p, j, &mut events, &now).await {
                    Ok(q) => q,
                    Err(e) => {
                        *slot = None;
                        return self.reload_if_moved(&mut slot, e);
                    }
                };
                side.extend(queue);
            }
            if events.is_empty() && side.is_empty() {
                return Ok(Attempt::Done((out, own)));
            }
            let mut side = side;
            let (timers, guards) = match self.timer_writes(j, &events, &side).await {
                Ok(t) => t,
                Err(e) => {
                    // The journal applied events that were never appended.
                    *slot = None;
                    return Err(e);
                }
            };
            side.extend(timers);
            let new_head = j.head + events.len() as u64;
            // The session index moves with the journal, in the same batch.
            let entry = crate::index::SessionEntry::of(
                j,
                &j.meta,
                new_head,
                // Every event of the batch was drafted at `now`.
                (!events.is_empty()).then(|| now.clone()),
            );
            match entry.write() {
                Ok(w) => side.push(w),
                Err(e) => {
                    *slot = None;
                    return Err(e);
                }
            }
            let every = self.inner.config.snapshot_every;
            let expected_head = j.head;
            let mut snapshot = j.snapshot_due(events.len(), every);
            if snapshot {
                let store = &*self.inner.store;
                // Both boxed: run once per snapshot interval, their
                // futures would otherwise size every command's (see `loaded`).
                if let Err(e) = Box::pin(crate::closed_history::before_snapshot(store, j)).await {
                    // The journal applied events that were never appended.
                    *slot = None;
                    return self.reload_if_moved(&mut slot, e);
                }
                let encoded = match slot.take() {
                    Some(j) => {
                        Box::pin(j.snapshot_write(events.clone(), crate::closed_history::PER_BATCH))
                            .await
                    }
                    None => None,
                };
                // Without it (the journal was lost with a panicked
                // encoding) the batch goes without a snapshot, and the
                // session rehydrates after it.
                snapshot = encoded.is_some();
                if let Some((j, write)) = encoded {
                    *slot = Some(j);
                    side.extend(write);
                }
            }
            let batch = Batch {
                session_id: session_id.to_owned(),
                expected_head,
                events: events.clone(),
                side,
                watch: Vec::new(),
            };
            let on_queue = queue::touches(&batch.side);
            // The journal already applied the events. Until the store answers,
            // the slot holds nothing: a caller that gives up mid-append
            // (drops this future) leaves the session to rehydrate from the
            // store, not a journal ahead of it.
            let mut held = slot.take();
            match self.append_resolving(batch).await {
                Ok(done) => {
                    if let Some(j) = held.as_mut() {
                        j.appended(&events);
                        j.head = done.head;
                        if snapshot {
                            j.snapshotted(done.head);
                        }
                    }
                    *slot = held;
                    Ok(Attempt::Done((out, own)))
                }
                Err(StoreError::SideConflict) if on_queue => {
                    // The queue moved under us (another engine queued or
                    // started): reload and decide again.
                    self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                    Ok(Attempt::Again)
                }
                Err(StoreError::HeadConflict { .. }) => {
                    // Another engine wrote first: reload and re-check.
                    self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                    Ok(Attempt::Again)
                }
                Err(StoreError::SideConflict) if self.key_taken(&store_key).await? => {
                    // Another call with the same key won: answer its result.
                    Ok(Attempt::Again)
                }
                Err(StoreError::SideConflict) if self.timers_moved(&guards).await? => {
                    // Another engine cleared a timer this batch cleared.
                    self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                    Ok(Attempt::Again)
                }
                Err(e) => Err(e.into()),
            }
        })
    }
}

impl<S: Store + 'static> Engine<S> {
    /// `e`, unless it says another writer moved the session past the
    /// cached journal (closed history it stored after the journal's head,
    /// [`crate::closed_history`]): then the journal is dropped and the
    /// command tries again on a fresh one.
    pub(crate) fn reload_if_moved<T>(
        &self,
        slot: &mut Option<Journal>,
        e: EngineError,
    ) -> Result<Attempt<T>, EngineError> {
        match e {
            EngineError::Store(StoreError::HeadConflict { .. }) => {
                *slot = None;
                self.inner.counters.retries.fetch_add(1, Ordering::Relaxed);
                Ok(Attempt::Again)
            }
            e => Err(e),
        }
    }
}

/// How a keyed command's result is kept in its key record.
pub(crate) struct Codec<T> {
    encode: fn(&T) -> serde_json::Result<Value>,
    decode: fn(Value) -> serde_json::Result<T>,
}

impl<T: Serialize + DeserializeOwned> Codec<T> {
    fn json() -> Self {
        Self {
            encode: to_json::<T>,
            decode: serde_json::from_value,
        }
    }
}

fn to_json<T: Serialize>(out: &T) -> serde_json::Result<Value> {
    serde_json::to_value(out)
}

impl<T> Codec<T> {
    fn encode(&self, out: &T) -> Result<Value, EngineError> {
        (self.encode)(out).map_err(|_| {
            EngineError::InvalidCommand("the command's result does not serialize".into())
        })
    }

    fn decode(&self, key: &str, v: Value) -> Result<T, EngineError> {
        (self.decode)(v).map_err(|_| EngineError::CorruptRecord {
            space: "idempotency",
            key: key.to_owned(),
        })
    }
}

pub(crate) fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

/// Journaled messages are user-facing: keep them short and single-line.
pub(crate) fn sanitize(message: &str) -> String {
    let one_line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(500)
        .collect();
    one_line.trim().to_owned()
}
