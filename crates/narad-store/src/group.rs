//! Group commit and commit notification, shared by the embedded backends.
//!
//! One writer thread per store owns the write path. An append sends its
//! batch to the thread and awaits the answer, so the async runtime never
//! waits on a disk. The thread takes every batch that is waiting (up to
//! [`MAX_GROUP`]) and hands them to the backend's [`GroupWriter`], which
//! decides each with [`plan_batch`](crate::plan_batch) and writes them all in
//! **one** durable transaction: while one fsync runs, the next group
//! gathers, so throughput is not capped at one fsync per append. Each batch
//! is still decided on its own: a refused batch writes nothing and does not
//! affect the others of its group. Answers go out only after the commit;
//! then each committed head is announced to subscribers. Between groups
//! the thread sleeps until the next batch, or first polls for it when the
//! host asked ([`set_writer_spin`](crate::set_writer_spin)).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::{broadcast, oneshot};

use crate::writer_wait::WriterWait;
use crate::{Appended, Batch, StoreError};

/// The most batches one group commit takes.
pub const MAX_GROUP: usize = 256;

/// A backend's write path: commits batches in one transaction.
pub trait GroupWriter: Send + 'static {
    /// Decides every batch in order inside one write transaction (later
    /// batches see the writes of earlier ones) and commits it durably.
    /// Returns one outcome per batch; `Err` means the transaction itself
    /// failed and nothing of the group was written.
    fn commit_group(
        &mut self,
        batches: &[Batch],
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError>;
}

/// The write path of a store opened read-only: every batch is refused
/// with [`StoreError::ReadOnly`], and nothing is ever announced.
#[derive(Debug)]
pub struct ReadOnlyWriter;

impl GroupWriter for ReadOnlyWriter {
    fn commit_group(
        &mut self,
        _: &[Batch],
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        Err(StoreError::ReadOnly)
    }
}

/// A durable advance announced to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commit {
    /// A session's head moved to `head`.
    Session {
        /// The session.
        session_id: Arc<str>,
        /// Its head after the commit.
        head: u64,
    },
    /// A workspace's watch stream reached `revision`.
    Workspace {
        /// The workspace.
        workspace_id: Arc<str>,
        /// Its newest revision after the commit.
        revision: u64,
    },
}

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A commit, in commit order.
    Commit(Commit),
    /// The subscriber fell behind and `missed` notices were dropped: re-read
    /// the heads it cares about. Nothing durable was lost.
    Lagged {
        /// How many notices were dropped.
        missed: u64,
    },
}

/// A live subscription to the commits of one store handle (and its clones).
///
/// Subscribe **before** reading history: every commit after the
/// subscription is announced, so replay-then-follow has no gap (§10.3).
#[derive(Debug)]
pub struct Subscription {
    rx: broadcast::Receiver<Commit>,
}

impl Subscription {
    /// The next notice; `None` once the store is closed.
    pub async fn recv(&mut self) -> Option<Notice> {
        match self.rx.recv().await {
            Ok(c) => Some(Notice::Commit(c)),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(Notice::Lagged { missed }),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

/// A commit announcer for backends without the embedded group commit
/// (PostgreSQL announces what its `LISTEN` connection hears).
#[derive(Debug, Clone)]
pub struct Announcer {
    tx: broadcast::Sender<Commit>,
}

impl Default for Announcer {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(4096).0,
        }
    }
}

impl Announcer {
    /// Announces a commit to every subscriber (none is fine).
    pub fn announce(&self, commit: Commit) {
        let _ = self.tx.send(commit);
    }

    /// A new subscription to every later announcement.
    pub fn subscribe(&self) -> Subscription {
        Subscription {
            rx: self.tx.subscribe(),
        }
    }
}

/// A batch, where its answer goes, and the caller's span (the group's
/// `narad.store.commit` span is a child of its first caller's).
type Request = (
    Batch,
    oneshot::Sender<Result<Appended, StoreError>>,
    tracing::Span,
);

/// How much sharing the group commit achieved so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupStats {
    /// Batches decided.
    pub batches: u64,
    /// Write transactions committed (or attempted) for them.
    pub transactions: u64,
}

#[derive(Debug, Default)]
struct Counters {
    batches: AtomicU64,
    transactions: AtomicU64,
}

/// The writer thread of one store, and its subscribers.
#[derive(Debug)]
pub struct GroupCommit {
    tx: Mutex<Option<mpsc::Sender<Request>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    commits: broadcast::Sender<Commit>,
    counters: Arc<Counters>,
}

fn stopped() -> StoreError {
    StoreError::Closed
}

impl GroupCommit {
    /// Starts the writer thread for `writer`.
    pub fn start(name: &str, mut writer: impl GroupWriter) -> Result<Self, StoreError> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (commits, _) = broadcast::channel(4096);
        let announce = commits.clone();
        let counters = Arc::new(Counters::default());
        let count = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name(format!("{name}-writer"))
            .spawn(move || {
                let mut wait = WriterWait::default();
                while let Some(first) = wait.next(&rx) {
                    let mut group = vec![first];
                    while group.len() < MAX_GROUP {
                        match rx.try_recv() {
                            Ok(r) => group.push(r),
                            Err(_) => break,
                        }
                    }
                    let parent = group.first().map(|r| r.2.clone());
                    let (batches, replies): (Vec<Batch>, Vec<_>) =
                        group.into_iter().map(|(b, r, _)| (b, r)).unzip();
                    count.transactions.fetch_add(1, Ordering::Relaxed);
                    count
                        .batches
                        .fetch_add(batches.len() as u64, Ordering::Relaxed);
                    let span = tracing::debug_span!(
                        parent: parent.as_ref().and_then(tracing::Span::id),
                        "narad.store.commit",
                        group = batches.len(),
                        commit_us = tracing::field::Empty,
                    );
                    let entered = span.enter();
                    let start = std::time::Instant::now();
                    let committed = writer.commit_group(&batches);
                    let took = start.elapsed();
                    span.record("commit_us", took.as_micros() as u64);
                    drop(entered);
                    metrics::histogram!("narad_store_group_size").record(batches.len() as f64);
                    metrics::histogram!("narad_store_commit_seconds").record(took.as_secs_f64());
                    let outcomes = match committed {
                        Ok(o) if o.len() == batches.len() => o,
                        Ok(_) => vec![
                            Err(StoreError::Backend(
                                "group commit answered the wrong number of batches".into()
                            ));
                            batches.len()
                        ],
                        Err(e) => vec![Err(e); batches.len()],
                    };
                    for (batch, outcome) in batches.iter().zip(&outcomes) {
                        if let Ok(a) = outcome {
                            if !a.redelivered {
                                announce_batch(&announce, batch, a);
                            }
                        }
                    }
                    for (reply, outcome) in replies.into_iter().zip(outcomes) {
                        // A caller that stopped waiting learns nothing; the
                        // outcome is durable either way.
                        let _ = reply.send(outcome);
                    }
                }
            })
            .map_err(|e| StoreError::Backend(format!("cannot start writer thread: {e}")))?;
        Ok(Self {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            commits,
            counters,
        })
    }

    /// Sends `batch` to the writer thread and awaits its durable outcome.
    pub async fn append(&self, batch: Batch) -> Result<Appended, StoreError> {
        self.submit(batch)?.await.map_err(|_| stopped())?
    }

    /// Queues `batch` for the writer; the receiver yields its outcome.
    fn submit(
        &self,
        batch: Batch,
    ) -> Result<oneshot::Receiver<Result<Appended, StoreError>>, StoreError> {
        let (reply, answer) = oneshot::channel();
        let guard = self.tx.lock().map_err(|_| stopped())?;
        let tx = guard.as_ref().ok_or_else(stopped)?;
        tx.send((batch, reply, tracing::Span::current()))
            .map_err(|_| stopped())?;
        Ok(answer)
    }

    /// Batches and transactions so far.
    pub fn stats(&self) -> GroupStats {
        GroupStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            transactions: self.counters.transactions.load(Ordering::Relaxed),
        }
    }

    /// A new subscription to every later commit.
    pub fn subscribe(&self) -> Subscription {
        Subscription {
            rx: self.commits.subscribe(),
        }
    }

    /// Stops accepting appends, lets the writer finish what it was given,
    /// and waits for it. Blocks; idempotent.
    pub fn close(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        self.close();
    }
}

fn announce_batch(announce: &broadcast::Sender<Commit>, batch: &Batch, a: &Appended) {
    // No subscribers is not an error.
    if !batch.events.is_empty() {
        let _ = announce.send(Commit::Session {
            session_id: Arc::from(batch.session_id.as_str()),
            head: a.head,
        });
    }
    let mut newest: Vec<(&str, u64)> = Vec::new();
    for w in &batch.watch {
        match newest.iter_mut().find(|(ws, _)| *ws == w.workspace_id) {
            Some(entry) => entry.1 = entry.1.max(w.event.revision),
            None => newest.push((&w.workspace_id, w.event.revision)),
        }
    }
    for (ws, revision) in newest {
        let _ = announce.send(Commit::Workspace {
            workspace_id: Arc::from(ws),
            revision,
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// Records group sizes; the first commit waits until the test lets it
    /// go, so everything submitted meanwhile must form one group.
    struct Gate {
        entered: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
        sizes: Arc<Mutex<Vec<usize>>>,
    }

    impl GroupWriter for Gate {
        fn commit_group(
            &mut self,
            batches: &[Batch],
        ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
            if self.sizes.lock().unwrap().is_empty() {
                self.entered.send(()).unwrap();
                self.release.recv().unwrap();
            }
            self.sizes.lock().unwrap().push(batches.len());
            // Refuse odd heads, accept even ones: answers must not mix up.
            Ok(batches
                .iter()
                .map(|b| match b.expected_head % 2 {
                    0 => Ok(Appended {
                        head: b.expected_head,
                        positions: vec![],
                        redelivered: false,
                    }),
                    _ => Err(StoreError::HeadConflict {
                        expected: b.expected_head,
                        current: 0,
                    }),
                })
                .collect())
        }
    }

    fn at(head: u64) -> Batch {
        Batch {
            session_id: format!("s{head}"),
            expected_head: head,
            ..Batch::default()
        }
    }

    #[test]
    fn batches_waiting_behind_a_commit_share_the_next_transaction() {
        let (entered, wait_entered) = mpsc::channel();
        let (let_go, release) = mpsc::channel();
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let group = GroupCommit::start(
            "test",
            Gate {
                entered,
                release,
                sizes: Arc::clone(&sizes),
            },
        )
        .unwrap();
        let first = group.submit(at(0)).unwrap();
        wait_entered.recv().unwrap();
        let waiting: Vec<_> = (1..=9).map(|h| group.submit(at(h)).unwrap()).collect();
        let_go.send(()).unwrap();
        assert_eq!(first.blocking_recv().unwrap().unwrap().head, 0);
        for (h, rx) in (1..=9).zip(waiting) {
            match (h % 2, rx.blocking_recv().unwrap()) {
                (0, Ok(a)) => assert_eq!(a.head, h),
                (1, Err(StoreError::HeadConflict { expected, .. })) => assert_eq!(expected, h),
                other => panic!("{other:?}"),
            }
        }
        group.close();
        assert_eq!(*sizes.lock().unwrap(), vec![1, 9]);
        assert_eq!(group.submit(at(0)).unwrap_err(), StoreError::Closed);
    }
}
