//! Leases: the durable list of executors, attach (a fresh lease, the
//! redelivery of unfinished executions, the resume of runs paused for the
//! executor's absence) and heartbeats.

use narad_core::model::ControlPayload;
use narad_store::{Expect, SideSpace, Store, StoreError};

use super::records::{
    decode_executors, encode_executors, execute_message, lease_timer, EXECUTORS_KEY,
};
use super::{client_err, control};
use crate::append::{retry, Attempt};
use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Action, Principal};
use crate::outbox::{ClientOutbox, Clients};

impl<S: Store + 'static> Engine<S> {
    /// Registers `executor` in the durable list of executors (idempotent).
    pub(crate) async fn remember_executor(&self, executor: &str) -> Result<(), EngineError> {
        // The list only grows: once recorded, no need to read it again.
        let known = |c: &Clients| c.remembered.lock().is_ok_and(|r| r.contains(executor));
        if known(&self.inner.clients) {
            return Ok(());
        }
        let done = |c: &Clients| {
            if let Ok(mut r) = c.remembered.lock() {
                r.insert(executor.to_owned());
            }
        };
        retry!(self, async {
            let raw = self
                .inner
                .store
                .side(SideSpace::Lease, EXECUTORS_KEY)
                .await?;
            let mut list = decode_executors(raw.as_ref())?;
            if list.iter().any(|e| e == executor) {
                done(&self.inner.clients);
                return Ok(Attempt::Done(()));
            }
            list.push(executor.to_owned());
            let expect = raw.map_or(Expect::Absent, Expect::Equals);
            let bytes = encode_executors(&list)?;
            let batch = narad_store::Batch {
                side: vec![side(SideSpace::Lease, EXECUTORS_KEY, expect, bytes)],
                ..narad_store::Batch::default()
            };
            match self.append_resolving(batch).await {
                Ok(_) => {
                    done(&self.inner.clients);
                    Ok(Attempt::Done(()))
                }
                Err(StoreError::SideConflict) => Ok(Attempt::Again),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// The outbox of control messages for `executor`.
    pub fn client_outbox(&self, executor: &str) -> ClientOutbox {
        ClientOutbox {
            inner: self.inner.clients.outbox(executor),
        }
    }

    /// Attaches (or reattaches) a logical executor: a fresh unguessable
    /// lease supersedes any prior one; `client.attached` goes to its outbox,
    /// then every unfinished execution is redelivered with its original
    /// token and lease, and runs paused for its absence resume.
    pub async fn attach_client(
        &self,
        p: &Principal,
        executor: &str,
    ) -> Result<String, EngineError> {
        crate::telemetry::traced("attach_client", "", async {
            self.authorize(
                p,
                Action::ClientLease {
                    executor_id: executor,
                    control: "client.attached",
                },
            )?;
            if executor.is_empty() {
                return Err(EngineError::InvalidCommand("empty clientExecutorId".into()));
            }
            self.remember_executor(executor).await?;
            let lock = self.inner.clients.lock(executor);
            let _guard = lock.lock().await;
            let lease = self.inner.ids.next_id("lease");
            let now = self.inner.clock.now();
            let expires = crate::host::after(now, self.inner.config.lease_ttl);
            let (rec, resumes) = retry!(self, async {
                let rec = self.executor(executor).await?;
                let mut next = rec.clone();
                next.lease = Some(lease.clone());
                next.lease_expires = Some(expires);
                let resumes = std::mem::take(&mut next.paused);
                let mut side = vec![next.write(executor)?];
                side.extend(
                    self.move_lease_timer(executor, rec.lease_expires, expires)
                        .await?,
                );
                let batch = narad_store::Batch {
                    side,
                    ..narad_store::Batch::default()
                };
                match self.append_resolving(batch).await {
                    Ok(_) => Ok(Attempt::Done((next, resumes))),
                    Err(StoreError::SideConflict) => Ok(Attempt::Again),
                    Err(e) => Err(e.into()),
                }
            })?;
            // Resume what waited for this executor.
            for (sid, run, wait) in resumes {
                match self.resume_run(p, &sid, &run, &wait).await {
                    Ok(()) | Err(EngineError::Rejected { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            let out = self.inner.clients.outbox(executor);
            out.push(
                true,
                control(&ControlPayload::ClientAttached {
                    client_executor_id: executor.to_owned(),
                    lease_id: lease.clone(),
                    heartbeat_interval_ms: u64::try_from(
                        self.inner.config.heartbeat_interval.as_millis(),
                    )
                    .unwrap_or(u64::MAX),
                    lease_expires_at: timestamp(expires),
                }),
            );
            for token in &rec.pending {
                if let Some((_, t)) = self.token(token).await? {
                    if t.open() {
                        out.push(true, execute_message(token, &t));
                    }
                }
            }
            Ok(lease)
        })
        .await
    }

    /// `client.heartbeat`: renews the executor's current, unexpired lease.
    pub async fn client_heartbeat(
        &self,
        p: &Principal,
        executor: &str,
        lease: &str,
    ) -> Result<(), EngineError> {
        crate::telemetry::traced("client_heartbeat", "", async {
            self.authorize(
                p,
                Action::ClientLease {
                    executor_id: executor,
                    control: "client.heartbeat",
                },
            )?;
            let lock = self.inner.clients.lock(executor);
            let _guard = lock.lock().await;
            retry!(self, async {
                let rec = self.executor(executor).await?;
                let now = self.inner.clock.now();
                if rec.valid_lease(now) != Some(lease) {
                    return Err(client_err(
                        "lease_invalid",
                        "the lease is not current or has expired",
                    ));
                }
                let mut next = rec.clone();
                let expires = crate::host::after(now, self.inner.config.lease_ttl);
                next.lease_expires = Some(expires);
                let mut side = vec![next.write(executor)?];
                side.extend(
                    self.move_lease_timer(executor, rec.lease_expires, expires)
                        .await?,
                );
                let batch = narad_store::Batch {
                    side,
                    ..narad_store::Batch::default()
                };
                match self.append_resolving(batch).await {
                    Ok(_) => Ok(Attempt::Done(())),
                    Err(StoreError::SideConflict) => Ok(Attempt::Again),
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
    }

    /// The due-index writes moving `executor`'s lease expiry from `old`
    /// (deleted if stored) to `new`, for the batch of the lease record.
    async fn move_lease_timer(
        &self,
        executor: &str,
        old: Option<std::time::SystemTime>,
        new: std::time::SystemTime,
    ) -> Result<Vec<narad_store::SideWrite>, EngineError> {
        let next = lease_timer(executor, new);
        let mut writes = Vec::new();
        if let Some(old) = old {
            let prev = lease_timer(executor, old);
            if prev.key() == next.key() && self.stored_timer_delete(&prev).await?.is_some() {
                // Renewed within the same millisecond: already recorded.
                return Ok(writes);
            }
            writes.extend(self.stored_timer_delete(&prev).await?);
        }
        writes.push(next.create()?);
        Ok(writes)
    }
}
