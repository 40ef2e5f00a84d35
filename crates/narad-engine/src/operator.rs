//! Operator reads across sessions: the open interrupts, found through the
//! global interrupt index, the session index (only sessions awaiting input
//! are loaded) and each owning session's reduced state, not by replaying
//! every session.

use std::collections::{BTreeMap, BTreeSet};

use narad_store::{Damage, SideSpace, Store, StoreError};
use serde_json::Value;

use crate::command_loop::Plan;
use crate::command_types::InterruptScope;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};

/// One open interrupt, as an operator lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedInterrupt {
    /// The owning session.
    pub session_id: String,
    /// `interruptId`.
    pub interrupt_id: String,
    /// The run or workflow that waits on it.
    pub scope: InterruptScope,
    /// `kind` of its `interrupt.requested`.
    pub kind: String,
    /// `title` of its `interrupt.requested`, when it has one.
    pub title: Option<String>,
    /// The offered actions.
    pub actions: Vec<String>,
    /// `expiresAt` of its `interrupt.requested`, as recorded.
    pub expires_at: Option<String>,
}

/// One page of [`Engine::open_interrupts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptPage {
    /// The open interrupts among the index entries this page covered.
    pub open: Vec<ListedInterrupt>,
    /// The index cursor to pass next, while entries remain.
    pub next: Option<String>,
}

/// What a session's reduced state says about one open interrupt: its
/// scope, actions, and the journal (root run or workflow) that holds it.
type Found = (String, InterruptScope, Vec<String>);

impl<S: Store + 'static> Engine<S> {
    /// The open interrupts of every session, one page of the interrupt
    /// index at a time (`after` is the previous page's `next`; at most
    /// `limit` index entries are looked at). Each owning session is loaded
    /// as any command loads it (from its snapshot when it has one), and
    /// only the journal holding an open interrupt is read for its request's
    /// kind, title and expiry. Within a page they come grouped by session.
    /// Sessions `p` may not read are left out.
    pub async fn open_interrupts(
        &self,
        p: &Principal,
        after: Option<&str>,
        limit: usize,
    ) -> Result<InterruptPage, EngineError> {
        let entries = self
            .inner
            .store
            .list_side(SideSpace::Interrupt, after, limit.max(1))
            .await?;
        let mut by_session: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut last = after.map(str::to_owned);
        for (iid, sid) in entries {
            if last.as_ref().is_some_and(|l| iid <= *l) {
                return Err(StoreError::corrupt(Damage::CursorStalled, None, None).into());
            }
            last = Some(iid.clone());
            // An entry that names no session is as unresolvable as for
            // `resolve_interrupt`: it is not an open interrupt.
            if let Ok(sid) = String::from_utf8(sid.to_vec()) {
                by_session.entry(sid).or_default().insert(iid);
            }
        }
        // Any entry at all moves the cursor; an empty page ends the index.
        let next = if last.as_deref() == after { None } else { last };
        let mut open = Vec::new();
        for (sid, ids) in by_session {
            if self
                .authorize(p, Action::Read { session_id: &sid })
                .is_err()
            {
                continue;
            }
            // The session index says whether anything can be open: a
            // session not awaiting input is skipped without loading it.
            if let Ok(Some(entry)) = self.index_entry(&sid).await {
                if entry.status != crate::index::SessionStatus::AwaitingInput {
                    continue;
                }
            }
            let found = match self.open_in(p, &sid, &ids).await {
                Ok(found) => found,
                // The index outlived its session (or names none we hold).
                Err(EngineError::UnknownSession { .. }) => continue,
                Err(e) => return Err(e),
            };
            for (iid, (journal, scope, actions)) in found {
                let request = self.request_of(&sid, &scope, &journal, &iid).await?;
                let text = |k: &str| request.get(k).and_then(Value::as_str).map(str::to_owned);
                open.push(ListedInterrupt {
                    session_id: sid.clone(),
                    kind: text("kind").unwrap_or_default(),
                    title: text("title"),
                    expires_at: text("expiresAt"),
                    interrupt_id: iid,
                    scope,
                    actions,
                });
            }
        }
        Ok(InterruptPage { open, next })
    }

    /// Which of `ids` are open in the session's reduced state.
    async fn open_in(
        &self,
        p: &Principal,
        sid: &str,
        ids: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, Found>, EngineError> {
        let (found, _) = self
            .command(p, sid, |j| {
                let s = &j.session_id;
                let mut found = BTreeMap::new();
                // Only open runs can hold an open interrupt.
                for (run, r) in j.checker.open_runs(s) {
                    if let Some(i) = r.open_interrupt.as_ref().filter(|i| ids.contains(&i.id)) {
                        let scope = InterruptScope::Run(run.to_string());
                        found.insert(i.id.clone(), (r.root.clone(), scope, i.actions.clone()));
                    }
                }
                for (wf, w) in j.checker.workflows(s) {
                    if let Some(i) = w.open_interrupt.as_ref().filter(|i| ids.contains(&i.id)) {
                        let scope = InterruptScope::Workflow(wf.to_string());
                        found.insert(i.id.clone(), (wf.to_string(), scope, i.actions.clone()));
                    }
                }
                Ok(Plan::of(Vec::new(), found))
            })
            .await?;
        Ok(found)
    }

    /// The `interrupt.requested` of `iid`, read from the journal that holds
    /// it (its run tree or workflow), as a JSON object (empty if absent).
    async fn request_of(
        &self,
        sid: &str,
        scope: &InterruptScope,
        journal: &str,
        iid: &str,
    ) -> Result<Value, EngineError> {
        let store = &self.inner.store;
        let mut cursor = 0u64;
        loop {
            let page = match scope {
                InterruptScope::Run(_) => store.read_run(sid, journal, cursor, 1024).await?,
                InterruptScope::Workflow(_) => {
                    store.read_workflow(sid, journal, cursor, 1024).await?
                }
            };
            let before = cursor;
            for ev in &page.events {
                let pos = match scope {
                    InterruptScope::Run(_) => ev.position.run.as_ref().map(|r| r.1),
                    InterruptScope::Workflow(_) => ev.position.workflow.as_ref().map(|w| w.1),
                };
                cursor = narad_store::row::advance(sid, cursor, pos.unwrap_or(0))?;
                // Cheap pre-filter: parse only events naming the id.
                let needle = iid.as_bytes();
                if !needle.is_empty() && !ev.bytes.windows(needle.len()).any(|w| w == needle) {
                    continue;
                }
                let Ok(v) = serde_json::from_slice::<Value>(&ev.bytes) else {
                    continue;
                };
                if v.get("type").and_then(Value::as_str) == Some("interrupt.requested")
                    && v.get("interruptId").and_then(Value::as_str) == Some(iid)
                {
                    return Ok(v);
                }
            }
            if page.next.is_none() {
                return Ok(Value::Object(serde_json::Map::new()));
            }
            narad_store::row::advance(sid, before, cursor)?;
        }
    }
}
