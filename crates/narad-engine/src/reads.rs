//! Reads and attach: history, subscribe, capabilities, hydrate records,
//! the session watch, and the reduced state.

use std::sync::Arc;

use bytes::Bytes;
use narad_core::checker::Slot;
use narad_core::Profile;
use narad_store::{HistoryQuery, Page, Store};
use serde_json::{json, Value};

use crate::command_loop::Plan;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Action, Principal};
use crate::subscribe::{is_debug_event, Follow};

/// The capability record of §10.4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// `narad/v1`.
    pub protocol_version: &'static str,
    /// The session's active profiles (core first).
    pub active_profiles: Vec<&'static str>,
    /// The largest history page.
    pub history_limit: usize,
    /// The current `sessionSequence`.
    pub session_sequence: u64,
    /// The active top-level execution.
    pub active_execution: Option<Slot>,
}

/// What a client receives on attach (§10.3, §10.4): the capability record,
/// hydrate records for the active profiles, and a follower from the
/// boundary the hydrate covers.
#[derive(Debug)]
pub struct Attached<S> {
    /// The §10.4 record.
    pub capabilities: Capabilities,
    /// `messages.snapshot` (conversation profile) and one `graph.snapshot`
    /// per run tree (graph profile), all covering `capabilities.session_sequence`.
    pub hydrate: Vec<Bytes>,
    /// Live authority after the boundary, without gap or duplicate.
    pub follow: Follow<S>,
}

impl<S: Store + 'static> Engine<S> {
    /// Session history per §10.2 (combined cursors checked). Trace and
    /// debug events are left out for a principal that may not debug; the
    /// page's `next` cursor still covers them. An unknown session is
    /// `unknown_session`; a limit of 0 is refused (`invalid_limit`).
    pub async fn history(
        &self,
        p: &Principal,
        session_id: &str,
        query: &HistoryQuery,
    ) -> Result<Page, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        if query.limit == 0 {
            return Err(EngineError::ZeroLimit);
        }
        self.meta(session_id).await?;
        let hide = self.hides_debug(p, session_id).await?;
        let mut q = query.clone();
        q.limit = q.limit.min(self.inner.config.history_limit);
        let mut page = self.inner.store.read_history(session_id, &q).await?;
        if hide {
            // The cursor still moves past them: the next page follows on.
            page.events.retain(|e| !is_debug_event(&e.bytes));
        }
        Ok(page)
    }

    /// Whether reads of `session_id` by `p` leave out trace and debug
    /// events: `p` may not debug ([`crate::Authorizer::may_debug`]) and the
    /// session has one of those profiles active (without them there are
    /// none to leave out, and no event is parsed).
    pub(crate) async fn hides_debug(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<bool, EngineError> {
        if self.inner.auth.may_debug(p) {
            return Ok(false);
        }
        let profiles = match self.meta(session_id).await {
            Ok(meta) => meta.profiles,
            // No session, no events to leave out.
            Err(EngineError::UnknownSession { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        Ok(profiles.contains(Profile::Trace) || profiles.contains(Profile::Debug))
    }

    /// Follows a session from `after` (a `sessionSequence`): replays to the
    /// head, then goes live, with no gap and no duplicate. Trace and debug
    /// events are skipped for a principal that may not debug.
    pub async fn subscribe(
        &self,
        p: &Principal,
        session_id: &str,
        after: u64,
    ) -> Result<Follow<S>, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        self.meta(session_id).await?;
        let hide = self.hides_debug(p, session_id).await?;
        Ok(Follow::new(
            Arc::clone(&self.inner.store),
            session_id,
            after,
            self.inner.config.history_limit,
        )
        .hiding_debug(hide))
    }

    /// Hydrate records of the session at its head: a `messages.snapshot`
    /// of the primary transcript if the conversation profile is active, a
    /// `graph.snapshot` of each run tree if the graph profile is. Send them
    /// on attach and whenever a client reports a revision gap.
    pub async fn hydrate_records(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<(u64, Vec<Bytes>), EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let ts = timestamp(self.inner.clock.now());
        let snapshot_id = self.inner.ids.next_id("snapshot");
        let (out, _) = self
            .command(p, session_id, |j| {
                let s = &j.session_id;
                let mut records = Vec::new();
                if j.meta.profiles.contains(narad_core::Profile::Conversation) {
                    let messages: Vec<Value> = j
                        .primary_transcript()
                        .into_iter()
                        .filter_map(|m| {
                            let content = match &m.redacted {
                                None => m.content.clone(),
                                Some(Some(shown)) => shown.clone(),
                                Some(None) => return None,
                            };
                            Some(json!({"messageId": m.message_id, "role": m.role, "content": content}))
                        })
                        .collect();
                    records.push(json!({
                        "type": "messages.snapshot", "protocolVersion": narad_core::PROTOCOL_VERSION,
                        "timestamp": ts, "snapshotId": snapshot_id, "sessionId": s,
                        "coversThroughSessionSequence": j.head, "messages": messages
                    }));
                }
                if j.meta.profiles.contains(narad_core::Profile::Graph) {
                    for (_, run) in j.all_runs().filter(|(id, r)| *id == r.root) {
                        if let Some(g) = j.checker.graph(s, &run.root) {
                            if g.revision() > 0 {
                                let mut rec = g.snapshot_record(s, &ts);
                                rec["protocolVersion"] = narad_core::PROTOCOL_VERSION.into();
                                records.push(rec);
                            }
                        }
                    }
                }
                let bytes = records
                    .iter()
                    .map(|r| serde_json::to_vec(r).map(Bytes::from))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| EngineError::InvalidCommand(e.to_string()))?;
                Ok(Plan::of(Vec::new(), (j.head, bytes)))
            })
            .await?;
        Ok(out)
    }

    /// Attach (§10.3): capabilities, hydrate records at the head, and a
    /// follower from exactly that head.
    pub async fn attach(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<Attached<S>, EngineError> {
        // Subscribe first: commits after the boundary are then announced.
        let caps = self.capabilities(p, session_id).await?;
        let (head, hydrate) = self.hydrate_records(p, session_id).await?;
        let capabilities = Capabilities {
            session_sequence: head,
            ..caps
        };
        let hide = self.hides_debug(p, session_id).await?;
        let follow = Follow::new(
            Arc::clone(&self.inner.store),
            session_id,
            head,
            self.inner.config.history_limit,
        )
        .hiding_debug(hide);
        Ok(Attached {
            capabilities,
            hydrate,
            follow,
        })
    }

    /// The session's watch events (§8) after session position `after`.
    pub async fn watch(
        &self,
        p: &Principal,
        session_id: &str,
        after: u64,
    ) -> Result<crate::watch::WatchFollow<S>, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        self.meta(session_id).await?;
        Ok(crate::watch::WatchFollow::new(
            Arc::clone(&self.inner.store),
            Arc::clone(&self.inner.clock),
            session_id,
            after,
        ))
    }

    /// The §10.4 capability record of a session.
    pub async fn capabilities(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<Capabilities, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let (caps, _) = self
            .command(p, session_id, |j| {
                Ok(Plan::of(
                    Vec::new(),
                    Capabilities {
                        protocol_version: narad_core::PROTOCOL_VERSION,
                        active_profiles: j.meta.profiles.iter().map(|p| p.id()).collect(),
                        history_limit: self.inner.config.history_limit,
                        session_sequence: j.head,
                        active_execution: j.checker.slot(&j.session_id).cloned(),
                    },
                ))
            })
            .await?;
        Ok(caps)
    }

    /// The reduced state of a session, typed: runs with their status and
    /// tree, tool calls with their name, args summary and result, open
    /// interrupts with their kind, title, actions and expiry, usage
    /// totals, workflows, the transcript, documents.
    ///
    /// What the checker keeps is read from memory; the rest is folded
    /// from the session's stored journal through the same head
    /// ([`SessionState::with_journal`](crate::SessionState::with_journal)),
    /// so the first read costs one pass over the journal; the engine keeps
    /// what it folded with the cached session, and a later read folds only
    /// the events appended since. The copy of a session of 10,000 events
    /// or more is made on tokio's blocking pool, not on the task's thread.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// let state = engine.state(&me, &sid).await?;
    /// for m in state.transcript_view(true) {
    ///     println!("{}: {} ({} reasoning)", m.role, m.text, m.reasoning.len());
    /// }
    /// for (id, call) in &state.tools {
    ///     println!("{id}: {:?} {:?} {:?}", call.name, call.args_summary, call.result);
    /// }
    /// for (id, i) in state.open_interrupts() {
    ///     println!("{id}: {:?} {:?} until {:?}", i.kind, i.title, i.expires_at);
    /// }
    /// println!("tokens: {:?}", state.usage.session.total_tokens);
    /// # Ok(()) }
    /// ```
    pub async fn state(
        &self,
        p: &Principal,
        session_id: &str,
    ) -> Result<crate::SessionState, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let read = self.read_journal(session_id, |j| {
            let s =
                crate::SessionState::from_checker(&j.checker, &j.session_id).unwrap_or_default();
            (s, j.details.clone())
        });
        let (mut s, cache) = crate::telemetry::traced("state", session_id, read).await?;
        // No tool call, open interrupt, ended run or unplaced reasoning:
        // nothing to fold.
        let ended = s.runs.values().any(|r| r.state.is_terminal());
        if s.tools.is_empty() && s.interrupts.is_empty() && !ended && !s.has_orphan_reasoning() {
            return Ok(s);
        }
        // Taken out while this read folds, put back after; a concurrent
        // read meanwhile folds from the start.
        let (from, mut details) = match cache.lock().ok().and_then(|mut c| c.take()) {
            Some((head, d)) if head <= s.head => (head, d),
            _ => (0, crate::typed::details::Details::default()),
        };
        crate::journal::for_each_event(
            &*self.inner.store,
            session_id,
            from,
            s.head,
            self.inner.config.history_limit,
            |ev| {
                details.push(session_id, &ev.bytes);
                Ok(())
            },
        )
        .await?;
        details.fill(&mut s);
        if let Ok(mut c) = cache.lock() {
            if c.as_ref().is_none_or(|(h, _)| *h < s.head) {
                *c = Some((s.head, details));
            }
        }
        Ok(s)
    }

    /// The reduced state of a session as the checker holds it
    /// (deterministic JSON), hydrating it if needed. Its layout is
    /// documented on [`SessionState`](crate::SessionState).
    pub async fn state_json(&self, p: &Principal, session_id: &str) -> Result<String, EngineError> {
        self.authorize(p, Action::Read { session_id })?;
        let read = self.read_journal(session_id, |j| {
            j.checker.state_json(&j.session_id).unwrap_or_default()
        });
        crate::telemetry::traced("state_json", session_id, read).await
    }
}
