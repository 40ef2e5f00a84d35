//! In-memory client-execution state: each executor's outbox of control
//! messages (drained by the embedding transport) and its lock. Holds no
//! durable record and knows nothing of the engine, so the engine can own
//! it without depending on the client commands.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use narad_core::model::ControlPayload;
use narad_core::{Parsed, Record};

use crate::error::EngineError;

/// The in-memory side: outboxes and per-executor locks.
#[derive(Debug, Default)]
pub(crate) struct Clients {
    outboxes: Mutex<HashMap<String, Arc<Outbox>>>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Executors this engine has already recorded in `Lease/*`.
    pub(crate) remembered: Mutex<std::collections::BTreeSet<String>>,
}

impl Clients {
    pub(crate) fn outbox(&self, executor: &str) -> Arc<Outbox> {
        let mut m = match self.outboxes.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        Arc::clone(m.entry(executor.to_owned()).or_default())
    }

    pub(crate) fn lock(&self, executor: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut m = match self.locks.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        Arc::clone(m.entry(executor.to_owned()).or_default())
    }
}

/// The most control messages an outbox holds; beyond it, heartbeats are
/// dropped (executions are bounded by open tool calls and always kept).
pub const OUTBOX_CAPACITY: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct Outbox {
    queue: Mutex<VecDeque<(bool, Bytes)>>,
    notify: tokio::sync::Notify,
}

impl Outbox {
    pub(crate) fn push(&self, essential: bool, msg: Bytes) {
        if let Ok(mut q) = self.queue.lock() {
            if q.len() >= OUTBOX_CAPACITY && !essential {
                return;
            }
            q.push_back((essential, msg));
        }
        self.notify.notify_one();
    }

    fn pop(&self) -> Option<Bytes> {
        self.queue.lock().ok()?.pop_front().map(|(_, b)| b)
    }
}

/// The control messages addressed to one executor, in order. Only its
/// executor may be given them (§11.3 rule 1): the transport authenticates
/// the executor before draining.
#[derive(Debug, Clone)]
pub struct ClientOutbox {
    pub(crate) inner: Arc<Outbox>,
}

impl ClientOutbox {
    /// The next message, waiting for one.
    pub async fn next(&self) -> Bytes {
        loop {
            let notified = self.inner.notify.notified();
            if let Some(b) = self.inner.pop() {
                return b;
            }
            notified.await;
        }
    }

    /// The next message if one is queued.
    pub fn try_next(&self) -> Option<Bytes> {
        self.inner.pop()
    }

    /// The next message, typed: the bytes above parsed as the control
    /// message they are (the engine only queues valid ones).
    pub async fn next_control(&self) -> Result<(ControlPayload, Bytes), EngineError> {
        let bytes = self.next().await;
        match narad_core::Validator::default().parse(&bytes) {
            Ok(Parsed::Record {
                record: Record::Control(c),
                ..
            }) => Ok((c.payload, bytes)),
            _ => Err(EngineError::InvalidCommand(
                "the outbox held a record that is not a control message".into(),
            )),
        }
    }
}
