//! The engine's one path to `Store::append`, and its one bounded retry
//! for read → modify → conditional write.
//!
//! Every append of the engine goes through [`Engine::append_resolving`]
//! (a test in this module keeps it so), and every loop that re-reads after
//! a conditional write lost goes through [`retry!`], which gives up
//! with `contended` after `1 + max_retries` attempts.

use narad_store::{Appended, Batch, Store, StoreError};

use crate::engine::Engine;

/// Runs the async block `$attempt` — one read → modify → conditional
/// write, answering `Result<Attempt<T>, EngineError>` — until it is
/// [`Attempt::Done`], at most `1 + max_retries` times. Evaluates to
/// `Result<T, EngineError>`: [`EngineError::Contended`] when every attempt
/// lost. (A macro, not a function taking an async closure, so the futures
/// of the engine's commands stay `Send` for any caller.)
macro_rules! retry {
    ($engine:expr, $attempt:expr) => {{
        let mut outcome = Err($crate::error::EngineError::Contended);
        for _ in 0..=$engine.inner.config.max_retries {
            let attempt: Result<$crate::append::Attempt<_>, $crate::error::EngineError> =
                $attempt.await;
            match attempt {
                Ok($crate::append::Attempt::Again) => {
                    tracing::debug!("conflict: reloading and planning again");
                    metrics::counter!($crate::telemetry::RETRIES).increment(1);
                }
                Ok($crate::append::Attempt::Done(v)) => {
                    outcome = Ok(v);
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        outcome
    }};
}
pub(crate) use retry;

/// What one attempt of a read → modify → conditional write answered.
pub(crate) enum Attempt<T> {
    /// It is decided (written, or nothing to write).
    Done(T),
    /// A conditional write lost to another writer: read again.
    Again,
}

/// How often an append whose outcome is unknown is delivered again.
const REDELIVERIES: usize = 4;

impl<S: Store + 'static> Engine<S> {
    /// [`Self::append_delivering`] in a `narad.append` span, timed.
    pub(crate) async fn append_resolving(&self, batch: Batch) -> Result<Appended, StoreError> {
        use tracing::Instrument;
        let span = tracing::debug_span!(
            crate::telemetry::SPAN_APPEND,
            session = batch.session_id.as_str(),
            events = batch.events.len(),
            side = batch.side.len(),
            outcome = tracing::field::Empty,
        );
        let start = std::time::Instant::now();
        let outcome = self.append_delivering(batch).instrument(span.clone()).await;
        metrics::histogram!(crate::telemetry::APPEND_SECONDS)
            .record(crate::telemetry::seconds(start));
        span.record(
            "outcome",
            outcome.as_ref().map_or_else(StoreError::code, |_| "ok"),
        );
        outcome
    }

    /// Appends; when the outcome is unknown (the backend failed, e.g. a
    /// lost connection) redelivers the **same** batch — same event ids — a
    /// few times: the store recognizes it if it was applied, or applies it
    /// now, and never twice. A redelivery refused by a guard the first
    /// delivery itself would have moved (the head, a side record's
    /// expectation) counts as applied only when every side record of the
    /// batch now holds exactly the bytes it wrote and the head moved by
    /// its events. Nothing else is guessed.
    async fn append_delivering(&self, batch: Batch) -> Result<Appended, StoreError> {
        let mut backoff = std::time::Duration::from_millis(20);
        let mut outcome = self.inner.store.append(batch.clone()).await;
        // The first failure is the cause; a redelivery's is often only its
        // echo (redb refuses every write after a failed one with "Previous
        // I/O error occurred"), so a batch that never lands reports the first.
        let first = match &outcome {
            Err(e @ StoreError::Backend(_)) => Some(e.clone()),
            _ => None,
        };
        for _ in 0..REDELIVERIES {
            match outcome {
                Err(StoreError::Backend(why)) => {
                    tracing::warn!(
                        session = batch.session_id.as_str(),
                        error = why.as_str(),
                        "append failed; redelivering the same batch"
                    );
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                    outcome = self.inner.store.append(batch.clone()).await;
                    if matches!(
                        outcome,
                        Err(StoreError::SideConflict | StoreError::HeadConflict { .. })
                    ) {
                        if let Some(done) = self.applied_before(&batch).await? {
                            return Ok(done);
                        }
                    }
                }
                done => return done,
            }
        }
        match (outcome, first) {
            (Err(StoreError::Backend(_)), Some(first)) => Err(first),
            (outcome, _) => outcome,
        }
    }

    /// Whether `batch` (carrying side writes) was applied by an earlier
    /// delivery whose outcome was lost: every side record holds its bytes
    /// and the session head is past its events.
    async fn applied_before(&self, batch: &Batch) -> Result<Option<Appended>, StoreError> {
        if batch.side.is_empty() {
            return Ok(None);
        }
        for w in &batch.side {
            if self.inner.store.side(w.space, &w.key).await? != w.value {
                return Ok(None);
            }
        }
        let head = self.inner.store.head(&batch.session_id).await?;
        if head < batch.expected_head + batch.events.len() as u64 {
            return Ok(None);
        }
        Ok(Some(Appended {
            head,
            positions: batch
                .events
                .iter()
                .map(|e| e.position.session_sequence)
                .collect(),
            redelivered: true,
        }))
    }
}

#[cfg(test)]
mod tests {
    /// Every `Store::append` of the engine goes through `append_resolving`.
    #[test]
    fn the_engine_appends_through_one_path() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut stack = vec![std::path::PathBuf::from(dir)];
        let mut seen = 0;
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                // The executor's ledger is the client's own store, not the host's.
                if name == "append.rs" || name == "executor.rs" {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                seen += 1;
                assert!(
                    !text.contains("store.append("),
                    "{} appends around append_resolving",
                    path.display()
                );
            }
        }
        assert!(seen > 10);
    }
}
