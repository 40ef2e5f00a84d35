//! The engine's path to `Store::append`.

use narad_store::{Batch, Store, StoreError};

use crate::engine::Engine;

impl<S: Store + 'static> Engine<S> {
    /// Appends; when the outcome is unknown (the backend failed, e.g. a
    /// lost connection) redelivers the **same** batch — same event ids — a
    /// few times: the store recognizes it if it was applied, or applies it
    /// now, and never twice. Nothing is guessed.
    pub(crate) async fn append_resolving(
        &self,
        batch: Batch,
    ) -> Result<narad_store::Appended, StoreError> {
        let mut backoff = std::time::Duration::from_millis(20);
        let mut outcome = self.inner.store.append(batch.clone()).await;
        for _ in 0..4 {
            match outcome {
                Err(StoreError::Backend(_)) => {
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                    outcome = self.inner.store.append(batch.clone()).await;
                }
                done => return done,
            }
        }
        outcome
    }
}
