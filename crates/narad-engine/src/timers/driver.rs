//! The timer driver: fires every due timer of every session, whether the
//! session is in memory or not, before or after a restart, once.
//!
//! Firing a timer is the engine command that clears its deadline, appended
//! in one batch with the conditional deletion of the timer record (its
//! claim). Of several engine processes over one store firing the same
//! timer, one batch commits; the others lose on the session head or the
//! record, re-plan, find the deadline cleared and append nothing.

use std::sync::Arc;
use std::time::Duration;

use narad_store::{Batch, SideSpace, Store, StoreError};

use super::{millis, FiredTimer, TimerKind, TimerRecord, TimerReport};
use crate::client::Closure;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::Principal;
use crate::Resolve;

/// The principal the driver acts as in [`Engine::fire_due_timers`] (the
/// authorizer sees it like any other).
pub const TIMER_PRINCIPAL: &str = "narad-timers";

/// How many due-index keys one listing reads.
const PAGE: usize = 256;

/// What firing one timer did.
enum Outcome {
    /// It appended these events.
    Fired(Vec<&'static str>),
    /// Its deadline was cleared already (or another engine fired it): the
    /// record is gone.
    Dropped,
    /// Not acted on now (e.g. the lease was renewed without moving its
    /// timer by an older engine); left for a later pass.
    Left,
}

impl<S: Store + 'static> Engine<S> {
    /// One pass of the timer driver as [`TIMER_PRINCIPAL`]: see
    /// [`Self::fire_due_timers_as`].
    pub async fn fire_due_timers(&self) -> Result<TimerReport, EngineError> {
        self.fire_due_timers_as(&Principal::new(TIMER_PRINCIPAL))
            .await
    }

    /// One pass of the timer driver as `p`: lists the due index in due
    /// order up to the engine's clock and fires each timer — an
    /// interrupt expires (`interrupt.resolved` with `decision=expired`
    /// and the resume), a client call whose token expired closes with
    /// `client_execution_expired`, an executor whose lease lapsed is
    /// unavailable (its runs pause), a pause resumes at its `retryAt`.
    /// Sessions need not be in memory. A timer another engine fired, or
    /// whose deadline was cleared, is dropped; a refusal of one timer is
    /// logged and left for the next pass.
    pub async fn fire_due_timers_as(&self, p: &Principal) -> Result<TimerReport, EngineError> {
        let report = self.fire_due(p, None).await?;
        // Retention rides on the same pass ([`Engine::set_retention`]).
        if let Some(policy) = self.retention() {
            let pruned = self.prune(p, &policy, false).await?;
            if !pruned.deleted.is_empty() {
                tracing::info!(deleted = pruned.deleted.len(), "retention deleted sessions");
            }
        }
        Ok(report)
    }

    /// Runs the driver every `interval` until the task is aborted (the host
    /// spawns it: `tokio::spawn(engine.clone().run_timers(interval))`). A
    /// failed pass is logged and the next one runs.
    pub async fn run_timers(self, interval: Duration) {
        let me = Arc::new(Principal::new(TIMER_PRINCIPAL));
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if let Err(e) = self.fire_due(&me, None).await {
                tracing::warn!(code = e.code(), "timer pass failed");
            }
        }
    }

    /// One pass over the due timers, of `only` one kind if given; each
    /// fired timer is logged and counted.
    pub(crate) async fn fire_due(
        &self,
        p: &Principal,
        only: Option<TimerKind>,
    ) -> Result<TimerReport, EngineError> {
        let report = self.fire_due_pass(p, only).await?;
        for t in &report.fired {
            let kind = t.kind.name();
            tracing::info!(kind, session = t.session_id.as_str(), "timer fired");
            metrics::counter!(crate::telemetry::TIMERS_FIRED, "kind" => kind).increment(1);
        }
        Ok(report)
    }

    async fn fire_due_pass(
        &self,
        p: &Principal,
        only: Option<TimerKind>,
    ) -> Result<TimerReport, EngineError> {
        let now = millis(self.inner.clock.now());
        let mut report = TimerReport::default();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .inner
                .store
                .list_side(SideSpace::Timer, after.as_deref(), PAGE)
                .await?;
            let full = page.len() == PAGE;
            for (key, bytes) in page {
                let timer = match TimerRecord::decode(&key, &bytes) {
                    Ok(t) => t,
                    Err(e) => {
                        tracing::warn!(code = e.code(), key, "unreadable timer record skipped");
                        after = Some(key);
                        continue;
                    }
                };
                if timer.due_ms > now {
                    return Ok(report);
                }
                after = Some(key);
                if only.is_some_and(|k| k != timer.kind) {
                    continue;
                }
                match self.fire_one(p, &timer).await {
                    Ok(Outcome::Fired(event_types)) => report.fired.push(FiredTimer {
                        kind: timer.kind,
                        session_id: timer.session_id.clone(),
                        id: timer.id.clone(),
                        due: timer.due(),
                        event_types,
                    }),
                    Ok(Outcome::Dropped) => report.dropped += 1,
                    Ok(Outcome::Left) => {}
                    Err(e) => {
                        if !self.timer_stored(&timer).await? {
                            // Another engine fired it meanwhile.
                            report.dropped += 1;
                            continue;
                        }
                        tracing::warn!(
                            code = e.code(),
                            kind = timer.kind.name(),
                            "timer not fired; retried on the next pass"
                        );
                        report.failed.push((timer.kind, timer.id.clone(), e.code()));
                    }
                }
            }
            if !full {
                return Ok(report);
            }
        }
    }

    async fn timer_stored(&self, t: &TimerRecord) -> Result<bool, EngineError> {
        let stored = self.inner.store.side(SideSpace::Timer, &t.key()).await?;
        Ok(stored == Some(t.bytes()?))
    }

    async fn fire_one(&self, p: &Principal, t: &TimerRecord) -> Result<Outcome, EngineError> {
        match t.kind {
            TimerKind::Interrupt => {
                let resolve = Resolve {
                    interrupt_id: t.id.clone(),
                    decision: "expired".into(),
                    reason: None,
                    expected_revision: None,
                    members: None,
                };
                match self.resolve_firing(p, resolve, Some(t)).await {
                    Ok(_) => Ok(Outcome::Fired(vec!["interrupt.resolved"])),
                    Err(EngineError::UnknownInterrupt { .. }) => self.drop_timer(t).await,
                    Err(e) => Err(e),
                }
            }
            TimerKind::Resume => {
                if self.resume_firing(p, t).await? {
                    Ok(Outcome::Fired(vec!["run.resumed"]))
                } else {
                    Ok(Outcome::Dropped)
                }
            }
            TimerKind::Token => {
                let token = t.token.clone().unwrap_or_default();
                if self.token(&token).await?.is_none() {
                    return self.drop_timer(t).await;
                }
                let executor = self.token(&token).await?.map(|(_, r)| r.executor);
                let lock = self.inner.clients.lock(&executor.unwrap_or_default());
                let _guard = lock.lock().await;
                match self
                    .close_token(p, &token, Closure::ExecutionExpired)
                    .await?
                {
                    Some(_) => Ok(Outcome::Fired(vec!["tool.call.finished"])),
                    None => Ok(Outcome::Dropped),
                }
            }
            TimerKind::Lease => {
                let lock = self.inner.clients.lock(&t.id);
                let _guard = lock.lock().await;
                let rec = self.executor(&t.id).await?;
                let current = rec.lease_expires.map(millis) == Some(t.due_ms);
                if !current {
                    return self.drop_timer(t).await;
                }
                if rec.valid_lease(self.inner.clock.now()).is_some() {
                    return Ok(Outcome::Left);
                }
                let (paused, claimed) = self.lapse(p, &t.id).await?;
                if paused.is_empty() && !claimed {
                    return Ok(Outcome::Dropped);
                }
                Ok(Outcome::Fired(
                    paused.iter().map(|_| "run.paused").collect(),
                ))
            }
        }
    }

    /// Removes a timer whose deadline is already cleared.
    async fn drop_timer(&self, t: &TimerRecord) -> Result<Outcome, EngineError> {
        let batch = Batch {
            side: vec![t.delete()?],
            ..Batch::default()
        };
        match self.append_resolving(batch).await {
            Ok(_) | Err(StoreError::SideConflict) => Ok(Outcome::Dropped),
            Err(e) => Err(e.into()),
        }
    }
}
