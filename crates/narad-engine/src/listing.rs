//! Listing the sessions a principal may read, and closing the engine.

use narad_store::{SideSpace, Store};

use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};

impl<S: Store + 'static> Engine<S> {
    /// The ids of the sessions `p` may read, in id order, after `after`,
    /// at most `limit` (at least 1). Sessions with no events yet are
    /// listed: the engine records each session when it creates it.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal) -> Result<(), narad_engine::EngineError> {
    /// let mut after = None;
    /// loop {
    ///     let page = engine.list_sessions(&me, after.as_deref(), 100).await?;
    ///     let Some(last) = page.last().cloned() else { break };
    ///     after = Some(last);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_sessions(
        &self,
        p: &Principal,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, EngineError> {
        if limit == 0 {
            return Err(EngineError::ZeroLimit);
        }
        let mut out = Vec::new();
        let mut cursor = after.map(str::to_owned);
        loop {
            let page = self
                .inner
                .store
                .list_side(SideSpace::Session, cursor.as_deref(), limit)
                .await?;
            let done = page.len() < limit;
            for (sid, _) in page {
                let allowed = self.authorize(p, Action::Read { session_id: &sid }).is_ok();
                cursor = Some(sid.clone());
                if allowed {
                    out.push(sid);
                    if out.len() == limit {
                        return Ok(out);
                    }
                }
            }
            if done {
                return Ok(out);
            }
        }
    }

    /// Finishes accepted appends and releases the store; idempotent. Later
    /// commands fail with the store's error.
    pub async fn close(&self) -> Result<(), EngineError> {
        self.inner.store.close().await?;
        Ok(())
    }
}
