//! The store-wide interrupt index (`SideSpace::Interrupt`: interrupt id →
//! owning session), which resolve-interrupt and `open_interrupts` read:
//! what a session's journal says it should hold, so that `reindex` adds
//! the entries an import by an older build left out.

use narad_store::{Expect, SideSpace, SideWrite, Store};
use serde::Deserialize;

use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::journal::for_each_event;

/// The two members of an `interrupt.requested` this index needs.
#[derive(Deserialize)]
struct Requested {
    #[serde(rename = "type")]
    ty: String,
    #[serde(rename = "interruptId", default)]
    interrupt_id: Option<String>,
}

/// The interrupt id of a stored `interrupt.requested` (`None` for any
/// other event; the bytes are searched before any is parsed), for a
/// reader that passes a journal by to collect what
/// [`Engine::unindexed_among`] checks.
///
/// ```
/// let ev = br#"{"type":"interrupt.requested","interruptId":"i-1","waitId":"w"}"#;
/// assert_eq!(narad_engine::requested_interrupt(ev).as_deref(), Some("i-1"));
/// assert_eq!(narad_engine::requested_interrupt(br#"{"type":"run.started"}"#), None);
/// ```
pub fn requested_interrupt(bytes: &[u8]) -> Option<String> {
    memchr::memmem::find(bytes, b"\"interrupt.requested\"")?;
    let r: Requested = serde_json::from_slice(bytes).ok()?;
    (r.ty == "interrupt.requested")
        .then_some(r.interrupt_id)
        .flatten()
}

impl<S: Store + 'static> Engine<S> {
    /// The interrupt ids `session_id`'s journal requested that the
    /// interrupt index lacks, in journal order ([`Engine::reindex`] adds
    /// them). An entry that names another session is not this session's
    /// to replace and is not counted. Reads the whole journal, a page at a
    /// time.
    pub async fn unindexed_interrupts(&self, session_id: &str) -> Result<Vec<String>, EngineError> {
        let store = &*self.inner.store;
        let head = store.head(session_id).await?;
        let mut requested = Vec::new();
        for_each_event(store, session_id, 0, head, 1024, |ev| {
            requested.extend(requested_interrupt(&ev.bytes));
            Ok(())
        })
        .await?;
        self.unindexed_among(requested).await
    }

    /// Of `requested` (interrupt ids a journal requested, as
    /// [`requested_interrupt`] reads them), those the interrupt index
    /// lacks, in order: one index read each, no journal read.
    pub async fn unindexed_among(
        &self,
        requested: impl IntoIterator<Item = String>,
    ) -> Result<Vec<String>, EngineError> {
        let mut missing = Vec::new();
        for iid in requested {
            if self
                .inner
                .store
                .side(SideSpace::Interrupt, &iid)
                .await?
                .is_none()
            {
                missing.push(iid);
            }
        }
        Ok(missing)
    }
}

/// The write that adds `interrupt_id`'s entry for `session_id`, expecting
/// none: what request_interrupt, fork, import and reindex write.
pub(crate) fn entry(session_id: &str, interrupt_id: &str) -> SideWrite {
    let owner = session_id.as_bytes().to_vec();
    side(SideSpace::Interrupt, interrupt_id, Expect::Absent, owner)
}
