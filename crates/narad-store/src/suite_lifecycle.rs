//! Suite cases for deleting a session ([`crate::lifecycle`]): every record
//! of the session goes in one batch, its neighbours stay, and its tombstone
//! refuses every later batch.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use narad_core::{Parsed, Record, Validator};
use serde_json::json;

use crate::lifecycle::delete_batch;
use crate::suite::{batch, event, event_at};
use crate::{Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};

/// The refusal of a batch of the deleted session `sid`.
fn deleted(sid: &str) -> StoreError {
    StoreError::SessionDeleted {
        session_id: sid.into(),
    }
}

/// A workflow event of `session` at session position `seq`.
fn wf_event(session: &str, seq: u64, wseq: u64) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": "workflow.started", "protocolVersion": "narad/v1",
        "eventId": format!("{session}-w{seq}"), "timestamp": "2026-08-05T00:00:00Z",
        "sessionId": session, "sessionSequence": seq, "workflowId": "wf", "workflowSequence": wseq
    }))
    .unwrap();
    match Validator::default().parse(&bytes).unwrap() {
        Parsed::Record {
            record: Record::Authority(ev),
            ..
        } => StoredEvent::from(&ev),
        other => panic!("{other:?}"),
    }
}

fn put(space: SideSpace, key: &str) -> SideWrite {
    SideWrite {
        space,
        key: key.into(),
        expect: Expect::Absent,
        value: Some(Bytes::copy_from_slice(key.as_bytes())),
    }
}

/// The side keys the test gives session `sid` in every space but the
/// tombstones (keys shaped like the engine's: by session, by prefix, by
/// an id of the session's own).
fn keys_of(sid: &str) -> Vec<(SideSpace, String)> {
    SideSpace::ALL
        .into_iter()
        .filter(|s| *s != SideSpace::Tombstone)
        .flat_map(|space| {
            [
                (space, sid.to_owned()),
                (space, format!("{sid}/00000000000000000001")),
                (space, format!("00000000000000000009/kind/{sid}/x")),
            ]
        })
        .collect()
}

/// Writes a journal (run tree and workflow) and a record in every side
/// space for `sid`.
async fn populate<S: Store>(s: &S, sid: &str) {
    let mut b = batch(sid, 0, vec![event(sid, 1, "a"), event(sid, 2, "a")]);
    b.events.push(wf_event(sid, 3, 1));
    for (space, key) in keys_of(sid) {
        b.side.push(put(space, &key));
    }
    s.append(b).await.unwrap();
}

async fn assert_intact<S: Store>(s: &S, sid: &str) {
    assert_eq!(s.head(sid).await.unwrap(), 3, "{sid}");
    let id = event(sid, 2, "a").event_id;
    assert_eq!(s.find_events(sid, &[id.as_str()]).await.unwrap().len(), 1);
    assert_eq!(s.read_session(sid, 0, 10).await.unwrap().events.len(), 3);
    assert_eq!(s.read_run(sid, "r", 0, 10).await.unwrap().events.len(), 2);
    assert_eq!(
        s.read_workflow(sid, "wf", 0, 10)
            .await
            .unwrap()
            .events
            .len(),
        1
    );
    for (space, key) in keys_of(sid) {
        assert!(s.side(space, &key).await.unwrap().is_some(), "{sid} {key}");
    }
}

async fn assert_gone<S: Store>(s: &S, sid: &str) {
    assert_eq!(s.head(sid).await.unwrap(), 0);
    let ids = [event(sid, 1, "a").event_id, event(sid, 2, "a").event_id];
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(s.find_events(sid, &ids).await.unwrap(), vec![]);
    assert!(s.read_session(sid, 0, 10).await.unwrap().events.is_empty());
    assert!(s.read_run(sid, "r", 0, 10).await.unwrap().events.is_empty());
    assert!(s
        .read_workflow(sid, "wf", 0, 10)
        .await
        .unwrap()
        .events
        .is_empty());
    for (space, key) in keys_of(sid) {
        assert_eq!(s.side(space, &key).await.unwrap(), None, "{sid} {key}");
    }
    assert!(s.side(SideSpace::Tombstone, sid).await.unwrap().is_some());
    let listed = s.list_sessions(None, 100).await.unwrap();
    assert!(!listed.iter().any(|l| l == sid), "{listed:?}");
}

/// Suite case `delete_removes_every_record_of_a_session_in_every_space`.
pub async fn delete_removes_every_record_of_a_session_in_every_space<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    // Neighbours whose ids extend or precede the deleted one's in byte order.
    for sid in ["s", "s-2", "r", "s/x"] {
        populate(&s, sid).await;
    }
    let tomb = Bytes::from_static(b"{\"v\":1}");
    // A delete on a stale head changes nothing.
    let err = s
        .append(delete_batch("s", 2, keys_of("s"), tomb.clone()))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::HeadConflict {
            expected: 2,
            current: 3
        }
    );
    assert_intact(&s, "s").await;
    assert_eq!(s.side(SideSpace::Tombstone, "s").await.unwrap(), None);

    let done = s
        .append(delete_batch("s", 3, keys_of("s"), tomb.clone()))
        .await
        .unwrap();
    assert_eq!((done.head, done.redelivered), (0, false));
    assert_gone(&s, "s").await;
    for sid in ["s-2", "r", "s/x"] {
        assert_intact(&s, sid).await;
    }
    assert_eq!(
        s.list_sessions(None, 10).await.unwrap(),
        vec!["r".to_owned(), "s-2".to_owned(), "s/x".to_owned()]
    );
    // A neighbour goes on from its head.
    s.append(batch("s-2", 3, vec![event_at("s-2", 4, 3, "b")]))
        .await
        .unwrap();
    s.close().await.unwrap();
    drop(s);
    let again = open(dir.join("store")).await.unwrap();
    assert_gone(&again, "s").await;
    assert_intact(&again, "r").await;
    assert_eq!(again.head("s-2").await.unwrap(), 4);
    // Every listing of every space misses the deleted session's records.
    let deleted = keys_of("s");
    for space in SideSpace::ALL {
        for (k, _) in again.list_side(space, None, 1000).await.unwrap() {
            assert!(
                !deleted.contains(&(space, k.clone())),
                "{} {k}",
                space.name()
            );
        }
    }
}

/// Suite case `a_tombstone_refuses_every_later_batch_of_its_session`.
pub async fn a_tombstone_refuses_every_later_batch_of_its_session<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let first = batch("s", 0, vec![event("s", 1, "a"), event("s", 2, "a")]);
    s.append(first.clone()).await.unwrap();
    populate(&s, "t").await;
    let tomb = Bytes::from_static(b"{\"v\":1}");
    s.append(delete_batch("s", 2, [], tomb.clone()))
        .await
        .unwrap();
    let refused = [
        // A late redelivery of what it held: refused, not resurrected.
        first,
        // A fresh start at head 0.
        batch("s", 0, vec![event("s", 1, "b")]),
        // A side-only batch (how a session is created).
        {
            let mut b = batch("s", 0, Vec::new());
            b.side.push(put(SideSpace::Session, "s"));
            b
        },
        // A second delete.
        delete_batch("s", 0, [], tomb.clone()),
    ];
    for b in refused {
        let err = s.append(b).await.unwrap_err();
        assert_eq!(err, deleted("s"));
        assert_eq!(err.code(), "session_deleted");
        assert_eq!(s.head("s").await.unwrap(), 0);
        assert_eq!(s.side(SideSpace::Session, "s").await.unwrap(), None);
    }
    // A batch that deletes its session may carry no events.
    let mut b = delete_batch("t", 3, [], tomb.clone());
    b.events.push(event("t", 4, "z"));
    assert_eq!(s.append(b).await.unwrap_err(), deleted("t"));
    assert_intact(&s, "t").await;
    // Another session's side batch may still touch records keyed by "s".
    let mut b = batch("t", 3, vec![event_at("t", 4, 3, "c")]);
    b.side.push(put(SideSpace::Timer, "s"));
    s.append(b).await.unwrap();
    // Tombstones are durable and listed like any side record.
    s.close().await.unwrap();
    drop(s);
    let again = open(dir.join("store")).await.unwrap();
    assert_eq!(
        again.side(SideSpace::Tombstone, "s").await.unwrap(),
        Some(tomb)
    );
    assert_eq!(
        again
            .append(batch("s", 0, vec![event("s", 1, "c")]))
            .await
            .unwrap_err(),
        deleted("s")
    );
    let listed = again
        .list_side(SideSpace::Tombstone, None, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
}
