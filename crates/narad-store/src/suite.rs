//! The one backend-agnostic store suite. Every backend's tests call
//! [`store_suite!`](crate::store_suite) with a function that opens a store at a
//! path; each case below then runs against that backend on real files.
//!
//! ```text
//! narad_store::store_suite!(|path| narad_store_redb::RedbStore::open(path));
//! ```
//!
//! Cases: head-guarded atomic batches, contiguity of all three ordering
//! domains, idempotent redelivery, conditional side records, session, run
//! and workflow paging, eight racing writers, a hundred concurrent sessions,
//! byte-identical history after reopen, combined history cursors against a
//! full-scan oracle, the workspace watch stream, commit notification with
//! subscribe-before-replay, close, concurrent good and bad batches sharing
//! group commits, and 20 SIGKILLs of a real writer process with nothing
//! acknowledged lost.

// Test-support code: a panic here is a test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use narad_core::{Parsed, Record, Validator};
use serde_json::json;

use crate::{
    Batch, Commit, Expect, Notice, SideSpace, SideWrite, Store, StoreError, StoredEvent, WatchWrite,
};

pub use crate::suite_crash::{crash_writer, sigkill_loses_no_acknowledged_event, CRASH_CHILD_ENV};
pub use crate::suite_history::{
    combined_cursors_must_be_mutually_consistent, pages_of_large_events_stop_at_their_bytes,
    workflow_history_pages_by_workflow_sequence,
};
pub use crate::suite_lifecycle::{
    a_tombstone_refuses_every_later_batch_of_its_session,
    delete_removes_every_record_of_a_session_in_every_space,
};
pub use crate::suite_listing::{
    any_id_the_protocol_allows_is_kept_listed_and_announced, every_space_migrates_to_another_store,
    side_records_and_workspaces_list_in_byte_order,
};
pub use crate::suite_side::large_side_values_are_kept_whole;

/// A run-tree event of `session` at `seq` (session and run-tree sequence equal).
pub fn event(session: &str, seq: u64, tag: &str) -> StoredEvent {
    event_at(session, seq, seq, tag)
}

/// A run-tree event at session position `seq` and run-tree position `rseq`.
pub(crate) fn event_at(session: &str, seq: u64, rseq: u64, tag: &str) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": "tool.call.started", "protocolVersion": "narad/v1",
        "eventId": format!("{session}-e{seq}-{tag}"), "timestamp": "2026-08-05T00:00:00Z",
        "sessionId": session, "sessionSequence": seq, "rootRunId": "r", "runId": "r",
        "sequence": rseq, "toolCallId": format!("t{seq}"), "toolName": "x", "executor": "backend", "args": {"tag": tag}
    }))
    .unwrap();
    stored(&bytes)
}

/// Parses authority bytes into what the store is given.
pub(crate) fn stored(bytes: &[u8]) -> StoredEvent {
    match Validator::default().parse(bytes).unwrap() {
        Parsed::Record {
            record: Record::Authority(ev),
            ..
        } => StoredEvent::from(&ev),
        other => panic!("{other:?}"),
    }
}

pub fn batch(session: &str, head: u64, events: Vec<StoredEvent>) -> Batch {
    Batch {
        session_id: session.into(),
        expected_head: head,
        events,
        side: Vec::new(),
        watch: Vec::new(),
    }
}

/// Suite case `history_is_the_exact_bytes_and_survives_reopen`.
pub async fn history_is_the_exact_bytes_and_survives_reopen<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs: Vec<_> = (1..=5).map(|i| event("s", i, "a")).collect();
    let out = s.append(batch("s", 0, evs.clone())).await.unwrap();
    assert_eq!(
        (out.head, out.positions, out.redelivered),
        (5, vec![1, 2, 3, 4, 5], false)
    );
    let page = s.read_session("s", 0, 3).await.unwrap();
    assert_eq!(page.events, evs[..3]);
    assert_eq!(page.next, Some(3));
    let rest = s.read_session("s", 3, 10).await.unwrap();
    assert_eq!((rest.events, rest.next), (evs[3..].to_vec(), None));
    let run = s.read_run("s", "r", 1, 10).await.unwrap();
    assert_eq!(run.events, evs[1..]);
    s.close().await.unwrap();
    drop(s);
    let again = open(dir.join("store")).await.unwrap();
    assert_eq!(again.read_session("s", 0, 100).await.unwrap().events, evs);
    assert_eq!(again.head("s").await.unwrap(), 5);
    assert_eq!(
        again.list_sessions(None, 10).await.unwrap(),
        vec!["s".to_owned()]
    );
}

/// Suite case `a_stale_head_conflicts_and_writes_nothing`.
pub async fn a_stale_head_conflicts_and_writes_nothing<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    s.append(batch("s", 0, vec![event("s", 1, "a")]))
        .await
        .unwrap();
    let err = s
        .append(batch("s", 0, vec![event("s", 2, "b")]))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::HeadConflict {
            expected: 0,
            current: 1
        }
    );
    assert_eq!(s.read_session("s", 0, 10).await.unwrap().events.len(), 1);
}

/// Suite case `redelivery_is_idempotent_and_changed_bytes_conflict`.
pub async fn redelivery_is_idempotent_and_changed_bytes_conflict<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs = vec![event("s", 1, "a"), event("s", 2, "a")];
    s.append(batch("s", 0, evs.clone())).await.unwrap();
    // The retry of an append whose outcome was unknown carries the old head.
    let again = s.append(batch("s", 0, evs.clone())).await.unwrap();
    assert_eq!(
        (again.redelivered, again.positions, again.head),
        (true, vec![1, 2], 2)
    );
    let mut changed = evs[1].clone();
    changed.bytes = bytes::Bytes::from(
        String::from_utf8(changed.bytes.to_vec())
            .unwrap()
            .replace("\"a\"}", "\"z\"}"),
    );
    assert_ne!(changed.bytes, evs[1].bytes);
    let err = s.append(batch("s", 2, vec![changed])).await.unwrap_err();
    assert_eq!(err.code(), "duplicate_event_conflict");
    assert_eq!(s.read_session("s", 0, 10).await.unwrap().events, evs);
}

/// Suite case `events_are_found_by_their_ids`.
pub async fn events_are_found_by_their_ids<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs: Vec<_> = (1..=5).map(|i| event("s", i, "a")).collect();
    s.append(batch("s", 0, evs.clone())).await.unwrap();
    let other = event("t", 1, "a");
    s.append(batch("t", 0, vec![other.clone()])).await.unwrap();
    let ids = [
        evs[3].event_id.as_str(),
        evs[0].event_id.as_str(),
        "not-stored",
        evs[0].event_id.as_str(),
        other.event_id.as_str(),
    ];
    // In session order, each once; another session's id is not this one's.
    let found = s.find_events("s", &ids).await.unwrap();
    assert_eq!(found, vec![evs[0].clone(), evs[3].clone()]);
    assert_eq!(s.find_events("t", &ids).await.unwrap(), vec![other.clone()]);
    assert_eq!(s.find_events("u", &ids).await.unwrap(), vec![]);
    assert_eq!(s.find_events("s", &[]).await.unwrap(), vec![]);
    s.close().await.unwrap();
    drop(s);
    let again = open(dir.join("store")).await.unwrap();
    let found = again.find_events("s", &[evs[4].event_id.as_str()]).await;
    assert_eq!(found.unwrap(), vec![evs[4].clone()]);
}

/// Suite case `a_batch_with_one_bad_event_is_refused_whole`.
pub async fn a_batch_with_one_bad_event_is_refused_whole<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let mut bad = event("s", 3, "a");
    bad.position.run = Some(("r".into(), 7)); // run-tree sequence gap
    let err = s
        .append(batch(
            "s",
            0,
            vec![event("s", 1, "a"), event("s", 2, "a"), bad],
        ))
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::Contiguity { domain: "sequence" });
    let gap = s
        .append(batch("s", 0, vec![event("s", 1, "a"), event("s", 3, "a")]))
        .await
        .unwrap_err();
    assert_eq!(
        gap,
        StoreError::Contiguity {
            domain: "sessionSequence"
        }
    );
    assert_eq!(s.head("s").await.unwrap(), 0);
    assert!(s.read_session("s", 0, 10).await.unwrap().events.is_empty());
    assert!(s.list_sessions(None, 10).await.unwrap().is_empty());
}

/// Suite case `side_writes_are_conditional_and_atomic_with_events`.
pub async fn side_writes_are_conditional_and_atomic_with_events<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let accept = |v: &'static str| SideWrite {
        space: SideSpace::Token,
        key: "tok-1".into(),
        expect: Expect::Absent,
        value: Some(bytes::Bytes::from_static(v.as_bytes())),
    };
    let mut b = batch("s", 0, vec![event("s", 1, "a")]);
    b.side.push(accept("first"));
    s.append(b).await.unwrap();
    let mut b = batch("s", 1, vec![event("s", 2, "a")]);
    b.side.push(accept("second"));
    assert_eq!(s.append(b).await.unwrap_err(), StoreError::SideConflict);
    // The event of the refused batch was not written either.
    assert_eq!(s.head("s").await.unwrap(), 1);
    assert_eq!(
        s.side(SideSpace::Token, "tok-1").await.unwrap().as_deref(),
        Some(b"first".as_slice())
    );
}

/// Suite case `eight_racing_writers_leave_no_gap_and_no_duplicate`.
pub async fn eight_racing_writers_leave_no_gap_and_no_duplicate<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let s = Arc::new(s);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            let (mut won, mut lost) = (0, 0);
            while won < 10 {
                let head = s.head("race").await.unwrap();
                let ev = event("race", head + 1, &format!("w{w}"));
                match s.append(batch("race", head, vec![ev])).await {
                    Ok(_) => won += 1,
                    Err(StoreError::HeadConflict { .. }) => lost += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            lost
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let all = s.read_session("race", 0, 1000).await.unwrap().events;
    assert_eq!(all.len(), 80);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.position.session_sequence, i as u64 + 1);
    }
    let ids: std::collections::BTreeSet<_> = all.iter().map(|e| &e.event_id).collect();
    assert_eq!(ids.len(), 80);
    // How often writers collide depends on the schedule; every collision
    // was a typed conflict (anything else panicked above).
    let _ = conflicts;
    // Eight writers appending at the same head: exactly one wins.
    let duel: Vec<_> = (0..8)
        .map(|w| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                s.append(batch("duel", 0, vec![event("duel", 1, &format!("w{w}"))]))
                    .await
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in duel {
        outcomes.push(t.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    assert!(outcomes.iter().filter_map(|o| o.as_ref().err()).all(|e| *e
        == StoreError::HeadConflict {
            expected: 0,
            current: 1
        }));
    assert_eq!(s.read_session("duel", 0, 10).await.unwrap().events.len(), 1);
}

/// Suite case `a_hundred_sessions_append_concurrently`.
pub async fn a_hundred_sessions_append_concurrently<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let s = Arc::new(s);
    let tasks: Vec<_> = (0..100)
        .map(|n| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let sid = format!("s{n:03}");
                for i in 1..=5 {
                    s.append(batch(&sid, i - 1, vec![event(&sid, i, "a")]))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let sessions = s.list_sessions(None, 1000).await.unwrap();
    assert_eq!(sessions.len(), 100);
    let page = s.list_sessions(Some("s049"), 10).await.unwrap();
    assert_eq!(page.first().map(String::as_str), Some("s050"));
    for sid in sessions {
        assert_eq!(s.head(&sid).await.unwrap(), 5);
    }
}

fn watch(kind: &str, id: &str, revision: u64, session: &str) -> WatchWrite {
    watch_in("ws", kind, id, revision, session)
}

/// A workspace watch event of `kind` in `workspace`, validated.
pub(crate) fn watch_in(
    workspace: &str,
    kind: &str,
    id: &str,
    revision: u64,
    session: &str,
) -> WatchWrite {
    let bytes = serde_json::to_vec(&json!({
        "type": kind, "protocolVersion": "narad/v1", "eventId": id,
        "timestamp": "2026-08-05T00:00:00Z", "workspaceId": workspace, "sessionId": session,
        "revision": revision
    }))
    .unwrap();
    match Validator::default().parse(&bytes).unwrap() {
        Parsed::Record {
            record: Record::Watch(ev),
            ..
        } => WatchWrite::from_event(&ev).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// Suite case `the_workspace_watch_stream_commits_with_its_session`.
pub async fn the_workspace_watch_stream_commits_with_its_session<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let created = watch("session.created", "w1", 1, "s");
    let mut b = batch("s", 0, vec![event("s", 1, "a")]);
    b.watch.push(created.clone());
    s.append(b.clone()).await.unwrap();
    // Redelivery of the whole batch writes nothing.
    assert!(s.append(b).await.unwrap().redelivered);
    // A regressing revision refuses the batch whole, its event included.
    let mut b = batch("s", 1, vec![event("s", 2, "a")]);
    b.watch.push(watch("session.updated", "w2", 1, "s"));
    assert_eq!(
        s.append(b).await.unwrap_err(),
        StoreError::RevisionRegression { current: 1 }
    );
    assert_eq!(s.head("s").await.unwrap(), 1);
    // The same watch id with other bytes conflicts.
    let mut b = batch("s", 1, vec![event("s", 2, "a")]);
    b.watch.push(watch("session.updated", "w1", 2, "s"));
    assert_eq!(s.append(b).await.unwrap_err(), StoreError::EventConflict);
    // A workspace-only batch; revisions may skip (coalesced notices).
    let only = Batch {
        watch: vec![
            watch("session.updated", "w3", 4, "s"),
            watch("session.archived", "w4", 9, "s"),
        ],
        ..Batch::default()
    };
    s.append(only).await.unwrap();
    let first = s.read_watch("ws", 0, 2).await.unwrap();
    assert_eq!(
        first.events.iter().map(|w| w.revision).collect::<Vec<_>>(),
        vec![1, 4]
    );
    assert_eq!(first.events[0], created.event);
    assert_eq!(first.next, Some(4));
    let rest = s.read_watch("ws", 4, 10).await.unwrap();
    assert_eq!((rest.events.len(), rest.next), (1, None));
    assert_eq!(rest.events[0].event_id, "w4");
    assert!(s
        .read_watch("other", 0, 10)
        .await
        .unwrap()
        .events
        .is_empty());
    drop(s);
    let again = open(dir.join("store")).await.unwrap();
    assert_eq!(again.read_watch("ws", 0, 10).await.unwrap().events.len(), 3);
}

pub(crate) async fn next_commit(sub: &mut crate::Subscription) -> Commit {
    let notice = tokio::time::timeout(std::time::Duration::from_secs(30), sub.recv())
        .await
        .expect("no notice within 30 s");
    match notice {
        Some(Notice::Commit(c)) => c,
        other => panic!("{other:?}"),
    }
}

/// Suite case `subscribers_hear_every_commit_and_replay_has_no_gap`.
pub async fn subscribers_hear_every_commit_and_replay_has_no_gap<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = Arc::new(open(dir.join("store")).await.unwrap());
    let mut sub = s.subscribe();
    s.append(batch("a", 0, vec![event("a", 1, "x"), event("a", 2, "x")]))
        .await
        .unwrap();
    let session = |id: &str, head| Commit::Session {
        session_id: Arc::from(id),
        head,
    };
    assert_eq!(next_commit(&mut sub).await, session("a", 2));
    // Refusals and redeliveries announce nothing: the next notice is b's.
    let _ = s.append(batch("a", 0, vec![event("a", 1, "y")])).await;
    s.append(batch("a", 0, vec![event("a", 1, "x"), event("a", 2, "x")]))
        .await
        .unwrap();
    s.append(batch("b", 0, vec![event("b", 1, "x")]))
        .await
        .unwrap();
    assert_eq!(next_commit(&mut sub).await, session("b", 1));

    // Subscribe, then replay, then follow while a writer keeps appending:
    // the follower ends with every event exactly once, in order.
    let writer = {
        let s = Arc::clone(&s);
        tokio::spawn(async move {
            for i in 1..=60 {
                s.append(batch("live", i - 1, vec![event("live", i, "x")]))
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    let mut sub = s.subscribe();
    let mut seen = s.read_session("live", 0, usize::MAX).await.unwrap().events;
    while (seen.len() as u64) < 60 {
        let target = match sub.recv().await {
            Some(Notice::Commit(Commit::Session { session_id, head }))
                if &*session_id == "live" =>
            {
                head
            }
            Some(Notice::Lagged { .. }) => s.head("live").await.unwrap(),
            Some(_) => continue,
            None => panic!("store closed"),
        };
        if target > seen.len() as u64 {
            let after = seen.len() as u64;
            seen.extend(
                s.read_session("live", after, usize::MAX)
                    .await
                    .unwrap()
                    .events,
            );
        }
    }
    writer.await.unwrap();
    for (i, e) in seen.iter().enumerate() {
        assert_eq!(e.position.session_sequence, i as u64 + 1);
    }
}

/// Suite case `close_finishes_accepted_appends_and_releases_the_file`.
pub async fn close_finishes_accepted_appends_and_releases_the_file<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = Arc::new(open(dir.join("store")).await.unwrap());
    let tasks: Vec<_> = (0..20)
        .map(|n| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let sid = format!("c{n}");
                s.append(batch(&sid, 0, vec![event(&sid, 1, "a")])).await
            })
        })
        .collect();
    let mut acked = Vec::new();
    for (n, t) in tasks.into_iter().enumerate() {
        if t.await.unwrap().is_ok() {
            acked.push(format!("c{n}"));
        }
    }
    s.close().await.unwrap();
    s.close().await.unwrap(); // idempotent
    let err = s.append(batch("z", 0, vec![event("z", 1, "a")])).await;
    assert_eq!(err.unwrap_err(), StoreError::Closed);
    assert_eq!(s.head("c0").await.unwrap_err().code(), "closed");
    // The handle still exists, yet the file can be opened again.
    let again = open(dir.join("store")).await.unwrap();
    for sid in &acked {
        assert_eq!(again.head(sid).await.unwrap(), 1, "{sid}");
    }
    assert_eq!(acked.len(), 20);
}

/// Suite case `good_and_bad_batches_racing_are_each_decided_alone`.
pub async fn good_and_bad_batches_racing_are_each_decided_alone<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = Arc::new(open(dir.join("store")).await.unwrap());
    // 64 sessions at once, rounds of one good and one bad batch each (the
    // bad one has a gap), so good and bad batches share group commits.
    for round in 1..=5u64 {
        let tasks: Vec<_> = (0..64)
            .flat_map(|n| {
                let sid = format!("g{n:02}");
                let good = batch(&sid, round - 1, vec![event(&sid, round, "ok")]);
                let bad = batch(&sid, round - 1, vec![event(&sid, round + 1, "bad")]);
                [(true, good), (false, bad)]
            })
            .map(|(good, b)| {
                let s = Arc::clone(&s);
                tokio::spawn(async move { (good, s.append(b).await) })
            })
            .collect();
        for t in tasks {
            match t.await.unwrap() {
                (true, r) => assert!(r.is_ok(), "{r:?}"),
                // Refused for its gap, or for a stale head when its
                // good twin committed first; either way it wrote nothing.
                (false, r) => assert!(
                    matches!(
                        r,
                        Err(StoreError::Contiguity {
                            domain: "sessionSequence"
                        }) | Err(StoreError::HeadConflict { .. })
                    ),
                    "{r:?}"
                ),
            }
        }
    }
    for n in 0..64 {
        let sid = format!("g{n:02}");
        let all = s.read_session(&sid, 0, 100).await.unwrap().events;
        assert_eq!(
            all,
            (1..=5).map(|i| event(&sid, i, "ok")).collect::<Vec<_>>()
        );
    }
}
/// Instantiates every case of [`crate::suite`] as a `#[tokio::test]` for one
/// backend. `$open` is `Fn(PathBuf) -> impl Future<Output = Result<S, StoreError>>`.
/// The calling test crate needs `tokio` (macros, rt-multi-thread) and
/// `tempfile` as dev-dependencies.
#[macro_export]
macro_rules! store_suite {
    ($open:expr) => {
        $crate::store_suite!($open, unless true);
    };
    // `$ready` is checked first by every case: a backend that needs a server
    // passes a check that prints a skip notice and returns false without one.
    ($open:expr, unless $ready:expr) => {
        $crate::store_suite!(@cases $open, $ready; history_is_the_exact_bytes_and_survives_reopen, a_stale_head_conflicts_and_writes_nothing, redelivery_is_idempotent_and_changed_bytes_conflict, events_are_found_by_their_ids, a_batch_with_one_bad_event_is_refused_whole, side_writes_are_conditional_and_atomic_with_events, eight_racing_writers_leave_no_gap_and_no_duplicate, a_hundred_sessions_append_concurrently, workflow_history_pages_by_workflow_sequence, combined_cursors_must_be_mutually_consistent, pages_of_large_events_stop_at_their_bytes, the_workspace_watch_stream_commits_with_its_session, subscribers_hear_every_commit_and_replay_has_no_gap, close_finishes_accepted_appends_and_releases_the_file, good_and_bad_batches_racing_are_each_decided_alone, side_records_and_workspaces_list_in_byte_order, any_id_the_protocol_allows_is_kept_listed_and_announced, every_space_migrates_to_another_store, delete_removes_every_record_of_a_session_in_every_space, a_tombstone_refuses_every_later_batch_of_its_session, large_side_values_are_kept_whole);
    };
    (@cases $open:expr, $ready:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                if ::std::env::var_os($crate::suite::CRASH_CHILD_ENV).is_some() || !$ready {
                    return;
                }
                let dir = ::tempfile::tempdir().unwrap();
                $crate::suite::$name(dir.path(), $open).await;
            }
        )*

        /// Crash-test writer: does work only as the child of
        /// `sigkill_loses_no_acknowledged_event`, which starts it.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn crash_writer_process() {
            if let Some(p) = ::std::env::var_os($crate::suite::CRASH_CHILD_ENV) {
                $crate::suite::crash_writer(::std::path::PathBuf::from(p), $open).await;
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sigkill_loses_no_acknowledged_event() {
            if ::std::env::var_os($crate::suite::CRASH_CHILD_ENV).is_some() || !$ready {
                return;
            }
            let dir = ::tempfile::tempdir().unwrap();
            $crate::suite::sigkill_loses_no_acknowledged_event(dir.path(), $open, "crash_writer_process").await;
        }
    };
}

/// Expands to the cases only a file backend has, on real files: the
/// read-only open ([`crate::suite_read_only`]) and the full disk
/// ([`crate::suite_full`], with the child process it starts). `$open`
/// opens writable, `$read_only` read-only.
#[macro_export]
macro_rules! file_store_suite {
    ($open:expr, $read_only:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_store_opened_read_only_reads_and_refuses_every_write() {
            if ::std::env::var_os($crate::suite_full::FULL_CHILD_ENV).is_some() {
                return;
            }
            let dir = ::tempfile::tempdir().unwrap();
            $crate::suite_read_only::a_store_opened_read_only_reads_and_refuses_every_write(
                dir.path(),
                $open,
                $read_only,
            )
            .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_full_disk_refuses_a_write_and_room_lets_the_store_write_again() {
            if ::std::env::var_os($crate::suite_full::FULL_CHILD_ENV).is_some() {
                return;
            }
            let dir = ::tempfile::tempdir().unwrap();
            $crate::suite_full::a_full_disk_refuses_a_write_and_room_lets_the_store_write_again(
                dir.path(),
                "full_disk_child_process",
            )
            .await;
        }

        /// Works only as the child of the full-disk case, which starts it.
        #[cfg(unix)]
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn full_disk_child_process() {
            if let Some(dir) = ::std::env::var_os($crate::suite_full::FULL_CHILD_ENV) {
                $crate::suite_full::full_disk_child(dir.into(), $open).await;
            }
        }
    };
}
