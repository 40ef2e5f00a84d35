//! The host's client timer: server heartbeats, token expiry, and pausing
//! runs whose executor's lease lapsed.

use narad_core::model::ControlPayload;
use narad_store::{SideSpace, Store, StoreError};
use serde_json::json;

use super::records::{decode_executors, lease_timer, EXECUTORS_KEY};
use super::{control, Closure, TickReport, EXECUTOR_UNAVAILABLE};
use crate::append::{retry, Attempt};
use crate::command_loop::Plan;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::journal::Draft;

impl<S: Store + 'static> Engine<S> {
    /// The host's timer: `server.heartbeat` to executors with a valid lease;
    /// calls whose token expired close with `client_execution_expired`;
    /// executors whose lease lapsed are unavailable, and their runs with an
    /// open client call pause with `reason=client_executor_unavailable`
    /// (never terminated by missing heartbeats) until a lease returns.
    pub async fn client_tick(&self, p: &Principal) -> Result<TickReport, EngineError> {
        let mut report = TickReport::default();
        let raw = self
            .inner
            .store
            .side(SideSpace::Lease, EXECUTORS_KEY)
            .await?;
        let list = decode_executors(raw.as_ref())?;
        for executor in list {
            let lock = self.inner.clients.lock(&executor);
            let _guard = lock.lock().await;
            let now = self.inner.clock.now();
            let rec = self.executor(&executor).await?;
            // Expired tokens first: their calls close, whatever the lease.
            for token in rec.pending.clone() {
                let Some((_, t)) = self.token(&token).await? else {
                    continue;
                };
                if now >= t.expires_at {
                    if let Some(call) = self
                        .close_token(p, &token, Closure::ExecutionExpired)
                        .await?
                    {
                        report.expired_calls.push(call);
                    }
                }
            }
            let rec = self.executor(&executor).await?;
            if rec.valid_lease(now).is_some() {
                self.inner.clients.outbox(&executor).push(
                    false,
                    control(&ControlPayload::ServerHeartbeat {
                        server_time: Some(timestamp(now)),
                    }),
                );
                continue;
            }
            if rec.lease.is_none() && rec.pending.is_empty() {
                continue;
            }
            report.unavailable.push(executor.clone());
            report.paused_runs.extend(self.lapse(p, &executor).await?.0);
        }
        Ok(report)
    }

    /// An executor whose lease lapsed is unavailable: each running run
    /// with an open call on it pauses (`client_executor_unavailable`,
    /// automatic), the pauses are recorded in its executor record, and its
    /// lease timer leaves the due index in the same write. The caller
    /// holds the executor's lock. Returns the runs it paused, and whether
    /// it removed the lease timer.
    pub(crate) async fn lapse(
        &self,
        p: &Principal,
        executor: &str,
    ) -> Result<(Vec<String>, bool), EngineError> {
        let rec = self.executor(executor).await?;
        let mut paused = rec.paused.clone();
        let mut newly = Vec::new();
        for token in &rec.pending {
            let Some((_, t)) = self.token(token).await? else {
                continue;
            };
            let (sid, run) = (t.session_id, t.run_id);
            if paused.iter().any(|(s, r, _)| *s == sid && *r == run) {
                continue;
            }
            let wait = self.inner.ids.next_id("wait");
            let r = self
                .command(p, &sid, |j| {
                    let running = j
                        .checker
                        .run(&j.session_id, &run)
                        .is_some_and(|r| r.state == narad_core::checker::RunState::Running);
                    if !running {
                        return Ok(Plan::of(Vec::new(), false));
                    }
                    Ok(Plan::of(
                        vec![Draft::new(
                            "run.paused",
                            j.run_at(&run)?,
                            json!({"waitId": wait, "reason": EXECUTOR_UNAVAILABLE,
                                   "resumeMode": "automatic"}),
                        )],
                        true,
                    ))
                })
                .await?;
            if r.0 {
                paused.push((sid, run.clone(), wait));
                newly.push(run);
            }
        }
        // Record the new pauses, so the executor's return resumes them;
        // another engine may have changed the record meanwhile.
        let added = paused.split_off(rec.paused.len());
        let claimed = retry!(self, async {
            let mut next = self.executor(executor).await?;
            let mut side = Vec::new();
            if let Some(at) = next.lease_expires {
                side.extend(self.stored_timer_delete(&lease_timer(executor, at)).await?);
            }
            let claims = !side.is_empty();
            let before = next.paused.len();
            for a in &added {
                if !next.paused.contains(a) {
                    next.paused.push(a.clone());
                }
            }
            if next.paused.len() != before {
                side.push(next.write(executor)?);
            }
            if side.is_empty() {
                return Ok(Attempt::Done(false));
            }
            let batch = narad_store::Batch {
                side,
                ..narad_store::Batch::default()
            };
            match self.append_resolving(batch).await {
                Ok(_) => Ok(Attempt::Done(claims)),
                Err(StoreError::SideConflict) => Ok(Attempt::Again),
                Err(e) => Err(e.into()),
            }
        })?;
        Ok((newly, claimed))
    }
}
