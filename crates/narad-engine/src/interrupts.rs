//! Interrupts: request (with its pause in the same batch), resolve by id
//! alone through the global interrupt index, and expiry.

use narad_store::{SideSpace, Store};
use serde_json::json;

use crate::command_loop::{strip_nulls, Plan};
use crate::command_types::{Interrupt, InterruptScope, Resolve, Resolved};
use crate::engine::{Cell, Engine};
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::journal::{At, Draft};
use crate::timers::{TimerKind, TimerRecord};

impl<S: Store + 'static> Engine<S> {
    /// Requests an interrupt; the matching pause is appended in the same
    /// atomic batch, so adjacency (§7.6) holds by construction. Returns
    /// `(interruptId, waitId)`.
    pub async fn request_interrupt(
        &self,
        p: &Principal,
        session_id: &str,
        interrupt: Interrupt,
    ) -> Result<(String, String), EngineError> {
        // The checker has no clock: the engine's clock decides, once for
        // every attempt of this command.
        let now = self.inner.clock.now();
        let expires_at = interrupt.expires_at.map(|e| e.at(now));
        if expires_at.is_some_and(|at| at <= now) {
            return Err(EngineError::InterruptExpired);
        }
        let iid = self.inner.ids.next_id("interrupt");
        let wait = self.inner.ids.next_id("wait");
        let (out, _) = self
            .command_keyed(p, session_id, |j| {
                let mut body = json!({
                    "interruptId": iid, "waitId": wait, "kind": interrupt.kind,
                    "actions": interrupt.actions, "input": interrupt.input,
                    "title": interrupt.title,
                    "expiresAt": expires_at.map(timestamp),
                });
                let drafts = match &interrupt.scope {
                    InterruptScope::Run(run) => {
                        let at = j.run_at(run)?;
                        vec![
                            Draft::new("interrupt.requested", at.clone(), strip_nulls(body)),
                            Draft::new(
                                "run.paused",
                                at,
                                json!({"waitId": wait, "reason": "interrupt",
                                       "resumeMode": "command", "interruptId": iid}),
                            ),
                        ]
                    }
                    InterruptScope::Workflow(wf) => {
                        body["scope"] = "workflow".into();
                        let at = At::Workflow(wf.clone());
                        vec![
                            Draft::new("interrupt.requested", at.clone(), strip_nulls(body)),
                            Draft::new(
                                "workflow.paused",
                                at,
                                json!({"waitId": wait, "interruptId": iid}),
                            ),
                        ]
                    }
                };
                let mut plan = Plan::of(drafts, (iid.clone(), wait.clone()));
                // The global index that lets resolve-interrupt find the
                // owning session from the interrupt id alone.
                plan.side
                    .push(crate::interrupt_index::entry(&j.session_id, &iid));
                Ok(plan)
            })
            .await?;
        Ok(out)
    }

    /// `resolve-interrupt` (§2.2) by `interruptId` alone: finds the owning
    /// session and journal, checks `expectedRevision`, appends
    /// `interrupt.resolved` and the resume of the run or workflow.
    ///
    /// A decision other than `expired` after the interrupt's `expiresAt`
    /// has passed on the engine's clock is refused as `interrupt_expired`.
    /// A second resolution is refused as `interrupt_already_resolved`,
    /// naming the decision already recorded; an id never requested is
    /// `unknown_interrupt`.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String, run: String) -> Result<(), narad_engine::EngineError> {
    /// use narad_engine::{Interrupt, Resolve};
    /// let (id, _wait) = engine
    ///     .request_interrupt(&me, &sid, Interrupt::on_run(&run, "approval", ["approve", "deny"]))
    ///     .await?;
    /// let done = engine.resolve_interrupt(&me, Resolve::new(&id, "approve")).await?;
    /// assert_eq!((done.session_id, done.decision.as_str()), (sid, "approve"));
    /// let again = engine.resolve_interrupt(&me, Resolve::new(&id, "deny")).await.unwrap_err();
    /// assert_eq!(again.code(), "interrupt_already_resolved");
    /// # Ok(()) }
    /// ```
    pub async fn resolve_interrupt(
        &self,
        p: &Principal,
        resolve: Resolve,
    ) -> Result<Resolved, EngineError> {
        let interrupt_id = resolve.interrupt_id.clone();
        let decision = resolve.decision.clone();
        match self.resolve_firing(p, resolve, None).await {
            Ok((session_id, scope)) => Ok(Resolved {
                session_id,
                interrupt_id,
                decision,
                scope,
            }),
            Err(EngineError::UnknownInterrupt { .. }) => {
                match self.past_decision(p, &interrupt_id).await? {
                    Some(decision) => Err(EngineError::AlreadyResolved {
                        interrupt_id,
                        decision,
                    }),
                    None => Err(EngineError::UnknownInterrupt { interrupt_id }),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The decision a closed interrupt was resolved with, read from its
    /// session's journal (found through the interrupt index).
    async fn past_decision(
        &self,
        p: &Principal,
        interrupt_id: &str,
    ) -> Result<Option<String>, EngineError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Resolution {
            #[serde(rename = "type")]
            ty: String,
            #[serde(default)]
            interrupt_id: String,
            #[serde(default)]
            decision: String,
        }
        let Some(b) = self
            .inner
            .store
            .side(SideSpace::Interrupt, interrupt_id)
            .await?
        else {
            return Ok(None);
        };
        let Ok(sid) = String::from_utf8(b.to_vec()) else {
            return Ok(None);
        };
        self.authorize(p, crate::host::Action::Read { session_id: &sid })?;
        let mut after = 0;
        loop {
            let page = self
                .inner
                .store
                .read_session(&sid, after, self.inner.config.history_limit)
                .await?;
            for ev in &page.events {
                after = ev.position.session_sequence;
                if let Ok(r) = serde_json::from_slice::<Resolution>(&ev.bytes) {
                    if r.ty == "interrupt.resolved" && r.interrupt_id == interrupt_id {
                        return Ok(Some(r.decision));
                    }
                }
            }
            if page.next.is_none() || page.events.is_empty() {
                return Ok(None);
            }
        }
    }

    /// [`Self::resolve_interrupt`]; with `fired`, the timer that fires it
    /// is deleted in the same batch (its claim: of two engines firing one
    /// timer, one appends).
    pub(crate) async fn resolve_firing(
        &self,
        p: &Principal,
        resolve: Resolve,
        fired: Option<&TimerRecord>,
    ) -> Result<(String, InterruptScope), EngineError> {
        let now = self.inner.clock.now();
        let claim = fired.map(TimerRecord::delete).transpose()?;
        let sid = match self
            .inner
            .store
            .side(SideSpace::Interrupt, &resolve.interrupt_id)
            .await?
        {
            Some(b) => String::from_utf8(b.to_vec()).map_err(|_| unknown_interrupt(&resolve))?,
            None => return Err(unknown_interrupt(&resolve)),
        };
        let sid2 = sid.clone();
        self.command_keyed(p, &sid2, |j| {
            let s = &j.session_id;
            // A terminal run holds no open interrupt: only open runs are
            // scanned, so the cost follows open work, not history.
            let owner = j
                .checker
                .open_runs(s)
                .find(|(_, r)| {
                    r.open_interrupt
                        .as_ref()
                        .is_some_and(|i| i.id == resolve.interrupt_id)
                })
                .map(|(id, r)| {
                    (
                        InterruptScope::Run(id.to_owned()),
                        r.open_interrupt.clone(),
                        r.root.clone(),
                    )
                })
                .or_else(|| {
                    j.checker
                        .workflows(s)
                        .find(|(_, w)| {
                            w.open_interrupt
                                .as_ref()
                                .is_some_and(|i| i.id == resolve.interrupt_id)
                        })
                        .map(|(id, w)| {
                            (
                                InterruptScope::Workflow(id.clone()),
                                w.open_interrupt.clone(),
                                id.clone(),
                            )
                        })
                });
            let Some((scope, Some(open), key)) = owner else {
                return Err(unknown_interrupt(&resolve));
            };
            let (at, current) = match &scope {
                InterruptScope::Run(run) => (j.run_at(run)?, j.run_head(&key)),
                InterruptScope::Workflow(wf) => {
                    (At::Workflow(wf.clone()), j.checker.workflow_head(s, wf))
                }
            };
            let lapsed = j.expiries.get(&open.id).is_some_and(|at| *at <= now);
            if lapsed && resolve.decision != "expired" {
                return Err(EngineError::InterruptExpired);
            }
            if let Some(expected) = resolve.expected_revision {
                if expected != current {
                    return Err(EngineError::RevisionConflict { expected, current });
                }
            }
            let mut body = strip_nulls(json!({
                "interruptId": open.id, "waitId": open.wait_id, "decision": resolve.decision,
                "reason": resolve.reason, "members": resolve.members,
            }));
            let resume = match &scope {
                InterruptScope::Run(_) => "run.resumed",
                InterruptScope::Workflow(_) => {
                    body["scope"] = "workflow".into();
                    "workflow.resumed"
                }
            };
            let mut plan = Plan::of(
                vec![
                    Draft::new("interrupt.resolved", at.clone(), body),
                    Draft::new(resume, at, json!({ "waitId": open.wait_id })),
                ],
                scope.clone(),
            );
            plan.side.extend(claim.clone());
            Ok(plan)
        })
        .await
        .map(|(scope, _)| (sid, scope))
    }

    /// Resolves every open interrupt whose `expiresAt` has passed on the
    /// engine's clock as `decision=expired` (§7.7) and resumes its run or
    /// workflow: every session's, through the due index (cached or not,
    /// before or after a restart), then any in memory whose deadline
    /// predates the index. Returns the expired ids. The timer driver
    /// ([`Self::fire_due_timers`]) does this and fires the other kinds.
    pub async fn expire_due(&self, p: &Principal) -> Result<Vec<String>, EngineError> {
        let report = self.fire_due(p, Some(TimerKind::Interrupt)).await?;
        let mut expired: Vec<String> = report.fired.into_iter().map(|f| f.id).collect();
        let now = self.inner.clock.now();
        let cells: Vec<Cell> = match self.inner.cells.lock() {
            Ok(c) => c.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        };
        let mut due = Vec::new();
        for cell in cells {
            if let Some(j) = cell.lock().await.as_ref() {
                due.extend(j.due(now));
            }
        }
        for id in due {
            let r = self
                .resolve_firing(p, Resolve::new(id.clone(), "expired"), None)
                .await;
            match r {
                Ok(_) => expired.push(id),
                // Resolved meanwhile by someone else: nothing to expire.
                Err(EngineError::UnknownInterrupt { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(expired)
    }
}

/// No open interrupt of `resolve`'s id.
fn unknown_interrupt(resolve: &Resolve) -> EngineError {
    EngineError::UnknownInterrupt {
        interrupt_id: resolve.interrupt_id.clone(),
    }
}
