//! A long transcript in the store, on redb, SQLite and PostgreSQL: once a
//! session's messages pass `HANDOVER_BYTES`, the engine's snapshot holds
//! their id hashes instead of the messages (which are one `closed` side
//! record, written with the snapshot), and an engine restored from it
//! decides, plans and reads as one that replayed the whole journal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;

use common::{me, snapshotting};
use narad_core::checker::HANDOVER_BYTES;
use narad_store::{SideSpace, Store};

/// Text of about 1 KiB, numbered.
fn text(i: usize) -> String {
    format!("{i:05} {}", "lorem ipsum ".repeat(85))
}

/// The session's stored transcript record, if any: its key and value.
async fn transcript_record<S: Store>(store: &S) -> Option<(String, bytes::Bytes)> {
    store
        .list_side(SideSpace::Closed, None, 100_000)
        .await
        .unwrap()
        .into_iter()
        .find(|(k, _)| k.ends_with('m'))
}

async fn scenario<S, F, Fut>(open: F)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let e = snapshotting(open().await);
    let sid = common::session(&e).await;
    let n = HANDOVER_BYTES / 1024 + 64;
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("u{i}");
        e.message_with_id(&me(), &sid, &id, text(i)).await.unwrap();
        ids.push(id);
    }
    e.write_snapshot(&me(), &sid).await.unwrap();
    let (key, record) = transcript_record(e.store()).await.expect("handed over");
    let snapshot = common::snapshot_of(e.store(), &sid).await;
    // The snapshot holds an 8-byte hash a message and those since the
    // handover, not the transcript.
    assert!(
        snapshot.len() * 4 < record.len(),
        "snapshot {} bytes, transcript {} bytes",
        snapshot.len(),
        record.len()
    );
    // A restarted engine restores the snapshot without the messages and
    // reads the same whole state.
    common::restarts_to_same_state(e, &open, &sid).await;

    // A new message is decided at once; an old id is looked up: the same
    // message again is answered as before, another is refused.
    let e = snapshotting(open().await);
    let before = common::journal(&e, &sid).await;
    e.message_with_id(&me(), &sid, &ids[3], text(3))
        .await
        .unwrap();
    assert_eq!(common::journal(&e, &sid).await, before, "a retry wrote");
    let err = e
        .message_with_id(&me(), &sid, &ids[4], "other")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict", "{err}");
    e.message_with_id(&me(), &sid, "fresh", "hello")
        .await
        .unwrap();
    let mut reference = common::assert_valid(&e, &sid).await;
    assert_eq!(
        e.state_json(&me(), &sid).await.unwrap(),
        reference.state_json(&sid).unwrap()
    );
    e.store().close().await.unwrap();
    drop(e);

    // An import of a record that reuses a stored message's id is refused
    // as a full replay refuses it.
    let e = snapshotting(open().await);
    let all = common::journal(&e, &sid).await;
    let head = all.len();
    let last = String::from_utf8(all[head - 1].clone()).unwrap();
    let reuse = last
        .replace(
            "\"messageId\":\"fresh\"",
            &format!("\"messageId\":\"{}\"", ids[9]),
        )
        .replace(
            &format!("\"sessionSequence\":{head}"),
            &format!("\"sessionSequence\":{}", head + 1),
        )
        .replace("\"eventId\":\"", "\"eventId\":\"again-");
    let want = reference.push_bytes(reuse.as_bytes()).unwrap_err().code;
    assert_eq!(want, "message_duplicate");
    let err = e.import(&me(), &[reuse.into_bytes()]).await.unwrap_err();
    assert_eq!(err.code(), want);
    // A past state reads the messages it had.
    let at = e.state_at(&me(), &sid, head as u64).await.unwrap();
    assert_eq!(at.state_json(), reference.state_json(&sid));
    e.store().close().await.unwrap();
    drop(e);

    // A damaged transcript record, or none where the snapshot names one,
    // is refused as damage, never read as fewer messages.
    let mut bad = record.to_vec();
    let at = bad.len() / 2;
    bad[at] ^= 0x20;
    for value in [Some(bad.into()), None, Some(record.clone())] {
        let value_is_the_record = value.as_ref() == Some(&record);
        let e = snapshotting(open().await);
        common::put_closed(e.store(), &sid, key.clone(), value).await;
        e.store().close().await.unwrap();
        drop(e);
        let e = snapshotting(open().await);
        let read = e.state_json(&me(), &sid).await;
        e.store().close().await.unwrap();
        if value_is_the_record {
            // Given back as written, it reads as before.
            assert_eq!(read.unwrap(), reference.state_json(&sid).unwrap());
        } else {
            let err = read.unwrap_err();
            assert_eq!(err.code(), "corrupt_record", "{err}");
        }
    }
    let e = snapshotting(open().await);
    assert!(transcript_record(e.store()).await.is_some());
    // Deleting the session deletes its transcript record.
    e.delete_session(&me(), &sid, true).await.unwrap();
    assert!(transcript_record(e.store()).await.is_none());
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.redb");
    scenario(|| async { narad_store_redb::RedbStore::open(&path).await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    scenario(|| async { narad_store_sqlite::SqliteStore::open(&path).await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    let Some(url) = common::postgres_url() else {
        return;
    };
    let schema = format!("transcript_store_{}", std::process::id());
    scenario(|| async {
        narad_store_postgres::PostgresStore::open(&url, &schema)
            .await
            .unwrap()
    })
    .await;
}
