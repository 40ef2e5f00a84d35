//! Watch events (§8) derived from committed authority, coalesced, with
//! typed cursors and ids that replay identically.
//!
//! A [`WatchFollow`] wakes on the store's commit notices, reads what was
//! appended after its cursor, and emits for that stretch one `run.revision`
//! per run tree that advanced, one `workflow.revision` per workflow, then
//! one `session.revision` — each carrying the greatest authority position it
//! covers (`revision` = that position, `cursor` of the matching kind). The
//! `eventId` is derived from scope and revision, so the same notification
//! delivered again has the same id.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use narad_store::{Store, Subscription};
use serde_json::{json, Value};

use crate::error::EngineError;
use crate::host::Clock;

/// A live stream of a session's watch events.
#[derive(Debug)]
pub struct WatchFollow<S> {
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    session_id: String,
    cursor: u64,
    pending: VecDeque<Bytes>,
    notices: Subscription,
}

impl<S: Store> WatchFollow<S> {
    pub(crate) fn new(store: Arc<S>, clock: Arc<dyn Clock>, session_id: &str, after: u64) -> Self {
        let notices = store.subscribe();
        Self {
            store,
            clock,
            session_id: session_id.to_owned(),
            cursor: after,
            pending: VecDeque::new(),
            notices,
        }
    }

    /// The session position covered so far.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The next watch event (JSON bytes), waiting for a commit if none is
    /// due; `None` once the store is closed.
    pub async fn next(&mut self) -> Result<Option<Bytes>, EngineError> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(b));
            }
            let page = self
                .store
                .read_session(&self.session_id, self.cursor, 4096)
                .await?;
            if page.events.is_empty() {
                let woken = crate::subscribe::at_head(
                    &*self.store,
                    &mut self.notices,
                    &self.session_id,
                    self.cursor,
                )
                .await?;
                if matches!(woken, crate::subscribe::Woken::Closed) {
                    return Ok(None);
                }
                continue;
            }
            let ts = crate::host::timestamp(self.clock.now());
            let sid = self.session_id.as_str();
            let mut runs: BTreeMap<String, (String, u64)> = BTreeMap::new();
            let mut wfs: BTreeMap<String, u64> = BTreeMap::new();
            let mut last = self.cursor;
            for ev in &page.events {
                last = narad_store::row::advance(
                    &self.session_id,
                    last,
                    ev.position.session_sequence,
                )?;
                if let Some((root, seq)) = &ev.position.run {
                    let run_id = serde_json::from_slice::<Value>(&ev.bytes)
                        .ok()
                        .and_then(|v| v.get("runId").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_else(|| root.clone());
                    runs.insert(root.clone(), (run_id, *seq));
                }
                if let Some((wf, seq)) = &ev.position.workflow {
                    wfs.insert(wf.clone(), *seq);
                }
            }
            for (root, (run, seq)) in runs {
                self.pending.push_back(record(json!({
                    "type": "run.revision", "eventId": format!("watch:run:{root}:{seq}"),
                    "timestamp": ts, "sessionId": sid, "rootRunId": root, "runId": run,
                    "revision": seq,
                    "cursor": {"kind": "run", "rootRunId": root, "sequence": seq}
                })));
            }
            for (wf, seq) in wfs {
                self.pending.push_back(record(json!({
                    "type": "workflow.revision", "eventId": format!("watch:workflow:{wf}:{seq}"),
                    "timestamp": ts, "sessionId": sid, "workflowId": wf, "revision": seq,
                    "cursor": {"kind": "workflow", "workflowId": wf, "workflowSequence": seq}
                })));
            }
            self.pending.push_back(record(json!({
                "type": "session.revision", "eventId": format!("watch:session:{sid}:{last}"),
                "timestamp": ts, "sessionId": sid, "revision": last,
                "cursor": {"kind": "session", "sessionId": sid, "sessionSequence": last}
            })));
            self.cursor = last;
        }
    }
}

fn record(mut v: Value) -> Bytes {
    v["protocolVersion"] = narad_core::PROTOCOL_VERSION.into();
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}
