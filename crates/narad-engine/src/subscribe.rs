//! Live attach without gap or duplicate (§10.3).
//!
//! A [`Follow`] subscribes to the store's commit notices *before* its first
//! read, then reads history from its cursor. The store is the buffer: the
//! follower holds at most one page, so a slow subscriber costs no engine
//! memory; when it falls behind the notice channel it just reads on from
//! its cursor. Events come in `sessionSequence` order, each once.

use std::collections::VecDeque;
use std::sync::Arc;

use narad_store::{Commit, Notice, Store, StoredEvent, Subscription};

use crate::error::EngineError;

/// A replay-then-live cursor over one session.
#[derive(Debug)]
pub struct Follow<S> {
    store: Arc<S>,
    session_id: String,
    cursor: u64,
    page: usize,
    buffered: VecDeque<StoredEvent>,
    notices: Subscription,
    lagged: u64,
    hide_debug: bool,
}

impl<S: Store> Follow<S> {
    pub(crate) fn new(store: Arc<S>, session_id: &str, after: u64, page: usize) -> Self {
        let notices = store.subscribe();
        Self {
            store,
            session_id: session_id.to_owned(),
            cursor: after,
            page: page.max(1),
            buffered: VecDeque::new(),
            notices,
            lagged: 0,
            hide_debug: false,
        }
    }

    /// Skips trace and debug events (for a principal that may not debug);
    /// the cursor still moves past them.
    pub(crate) fn hiding_debug(mut self, hide: bool) -> Self {
        self.hide_debug = hide;
        self
    }

    /// The `sessionSequence` of the last event returned.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// How often the notice channel overflowed (each time the follower
    /// simply re-read from its cursor).
    pub fn lag_signals(&self) -> u64 {
        self.lagged
    }

    /// The next event, waiting for it if the follower is at the head;
    /// `None` once the store is closed. A follower of a session that is
    /// deleted meanwhile ends with `session_deleted`.
    pub async fn next(&mut self) -> Result<Option<StoredEvent>, EngineError> {
        loop {
            if let Some(ev) = self.buffered.pop_front() {
                self.cursor = narad_store::row::advance(
                    &self.session_id,
                    self.cursor,
                    ev.position.session_sequence,
                )?;
                if self.hide_debug && is_debug_event(&ev.bytes) {
                    continue;
                }
                return Ok(Some(ev));
            }
            let page = self
                .store
                .read_session(&self.session_id, self.cursor, self.page)
                .await?;
            if !page.events.is_empty() {
                self.buffered.extend(page.events);
                continue;
            }
            // At the head: wait for a commit of this session.
            match at_head(
                &*self.store,
                &mut self.notices,
                &self.session_id,
                self.cursor,
            )
            .await?
            {
                Woken::Commit | Woken::Quiet => {}
                Woken::Lagged => self.lagged += 1,
                Woken::Closed => return Ok(None),
            }
        }
    }
}

/// One followed event, typed: the parsed authority record together with
/// the exact stored bytes (for replay identity and forwarding).
#[derive(Debug, Clone)]
pub struct FollowItem {
    /// The stored event: exact bytes and positions.
    pub event: StoredEvent,
    /// The parsed record (envelope and typed payload).
    pub record: narad_core::AuthorityEvent,
}

impl<S: Store> Follow<S> {
    /// [`Follow::next`], parsed: the typed record with its exact bytes.
    /// Stored bytes that do not parse as authority are a store error
    /// (the store holds checked events only).
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// let mut live = engine.attach(&me, &sid).await?.follow;
    /// while let Some(item) = live.next_item().await? {
    ///     println!("{} at {}", item.record.envelope.event_id, item.event.position.session_sequence);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_item(&mut self) -> Result<Option<FollowItem>, EngineError> {
        let Some(event) = self.next().await? else {
            return Ok(None);
        };
        match narad_core::Validator::default().parse(&event.bytes) {
            Ok(narad_core::Parsed::Record {
                record: narad_core::Record::Authority(record),
                ..
            }) => Ok(Some(FollowItem { event, record })),
            _ => Err(EngineError::Store(narad_store::StoreError::Backend(
                format!(
                    "stored event {} of session {} does not parse as authority",
                    event.position.session_sequence, self.session_id
                ),
            ))),
        }
    }
}

/// Whether stored event bytes are a trace or debug profile event. Bytes
/// that do not parse are not hidden (the store holds checked events only).
pub(crate) fn is_debug_event(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(rename = "type", borrow)]
        ty: std::borrow::Cow<'a, str>,
    }
    serde_json::from_slice::<Typed<'_>>(bytes)
        .is_ok_and(|t| t.ty.starts_with("trace.") || t.ty.starts_with("debug."))
}

/// Why a follower at the head woke up.
pub(crate) enum Woken {
    /// A commit past the cursor: read on.
    Commit,
    /// A second passed, or the session committed without moving past the
    /// cursor (a side write, or its deletion): read on.
    Quiet,
    /// Notices were dropped: read on.
    Lagged,
    /// The store is closed.
    Closed,
}

/// Waits until `session_id` commits past `cursor`. A notice can be missed
/// (a backend's listener reconnecting), so it also wakes after a second:
/// re-reading from the cursor bounds the delay.
pub(crate) async fn wait_for_commit(
    notices: &mut Subscription,
    session_id: &str,
    cursor: u64,
) -> Woken {
    loop {
        let Ok(notice) =
            tokio::time::timeout(std::time::Duration::from_secs(1), notices.recv()).await
        else {
            return Woken::Quiet;
        };
        match notice {
            Some(Notice::Commit(Commit::Session {
                session_id: s,
                head,
            })) if *s == *session_id => {
                return if head > cursor {
                    Woken::Commit
                } else {
                    Woken::Quiet
                };
            }
            Some(Notice::Commit(_)) => {}
            Some(Notice::Lagged { missed }) => {
                tracing::debug!(
                    session = session_id,
                    missed,
                    "follower lagged; re-reading from its cursor"
                );
                metrics::counter!(crate::telemetry::SUBSCRIBER_LAG).increment(missed);
                return Woken::Lagged;
            }
            None => return Woken::Closed,
        }
    }
}

/// [`wait_for_commit`] for a follower of `session_id` at `cursor`: after a
/// quiet wake-up it also looks for the session's tombstone, so a follower
/// of a session deleted meanwhile ends with `session_deleted` (within a
/// second, at once when the deletion's own notice arrives) instead of
/// waiting for events that can never come.
pub(crate) async fn at_head<S: Store + ?Sized>(
    store: &S,
    notices: &mut Subscription,
    session_id: &str,
    cursor: u64,
) -> Result<Woken, EngineError> {
    let woken = wait_for_commit(notices, session_id, cursor).await;
    if matches!(woken, Woken::Quiet)
        && store
            .side(narad_store::SideSpace::Tombstone, session_id)
            .await?
            .is_some()
    {
        return Err(EngineError::Store(
            narad_store::StoreError::SessionDeleted {
                session_id: session_id.to_owned(),
            },
        ));
    }
    Ok(woken)
}
