//! Closed history in the store, on redb, SQLite and PostgreSQL: the
//! engine's snapshot leaves closed runs and tool calls out (each is a
//! `closed` side record written with the snapshot), so it follows open
//! work, and an engine restored from it decides, plans and reads as one
//! that replayed the whole journal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;

use common::{finished, me, snapshotting};
use narad_core::checker::Checker;
use narad_engine::{Engine, StartRun, StopTarget, ToolOutcome};
use narad_store::{SideSpace, Store};
use serde_json::json;

async fn postgres(url: &str, schema: &str) -> narad_store_postgres::PostgresStore {
    narad_store_postgres::PostgresStore::open(url, schema)
        .await
        .unwrap()
}

/// `n` runs of `sid`, each with a finished tool call; their ids.
async fn runs<S: Store + 'static>(e: &Engine<S>, sid: &str, n: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let run = common::running(e, sid).await;
        let tool = e
            .start_tool_call(&me(), sid, &run, "search", json!({}))
            .await
            .unwrap();
        e.finish_tool_call(&me(), sid, &tool, ToolOutcome::success(json!(1)))
            .await
            .unwrap();
        e.end_run(&me(), sid, &run, finished()).await.unwrap();
        out.push((run, tool));
    }
    out
}

async fn closed_records<S: Store>(store: &S) -> usize {
    store
        .list_side(SideSpace::Closed, None, 100_000)
        .await
        .unwrap()
        .len()
}

async fn snapshot_len<S: Store>(store: &S, sid: &str) -> usize {
    common::snapshot_of(store, sid).await.len()
}

async fn scenario<S, F, Fut>(open: F)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let e = snapshotting(open().await);
    let sid = common::session(&e).await;
    let first = runs(&e, &sid, 10).await;
    let small = snapshot_len(e.store(), &sid).await;
    let more = runs(&e, &sid, 40).await;
    let later = snapshot_len(e.store(), &sid).await;
    // Fifty closed runs and tool calls, and the snapshot did not grow
    // with them: they are side records.
    assert!(later <= small + 64, "{small} -> {later}");
    let kept = closed_records(e.store()).await;
    assert!(kept >= 80, "{kept} closed records");
    // A restarted engine restores the snapshot without them, and reads the
    // same whole state.
    common::restarts_to_same_state(e, &open, &sid).await;

    // Commands on closed runs and tool calls are refused as before.
    let e = snapshotting(open().await);
    let (run, tool) = first[3].clone();
    let before = common::journal(&e, &sid).await;
    let err = e.end_run(&me(), &sid, &run, finished()).await.unwrap_err();
    assert_eq!(err.code(), "run_terminated", "{err}");
    let err = e
        .finish_tool_call(&me(), &sid, &tool, ToolOutcome::success(json!(2)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool_call_finished_twice", "{err}");
    let err = e
        .start_run(&me(), &sid, StartRun::new().id(run.as_str()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "run_already_started", "{err}");
    let err = e
        .start_run(&me(), &sid, StartRun::child_of(more[5].0.as_str()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "parent_invalid", "{err}");
    let err = e
        .stop(&me(), &sid, StopTarget::run(&more[1].0))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "stop_target_invalid", "{err}");
    assert_eq!(
        common::journal(&e, &sid).await,
        before,
        "a refused command wrote"
    );
    // A new run, and one reusing a closed tool call's id, as before.
    let fresh = common::running(&e, &sid).await;
    let err = e
        .start_tool_call_with_id(&me(), &sid, &fresh, &more[7].1, "search", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool_call_duplicate", "{err}");
    e.end_run(&me(), &sid, &fresh, finished()).await.unwrap();
    // What a checker that replayed the whole journal says, the engine said.
    let all = common::journal(&e, &sid).await;
    let mut reference = Checker::default();
    for b in &all {
        reference.push_bytes(b).unwrap();
    }
    assert_eq!(
        e.state_json(&me(), &sid).await.unwrap(),
        reference.state_json(&sid).unwrap()
    );
    e.store().close().await.unwrap();
    drop(e);

    // An import names closed history the same way.
    let e = snapshotting(open().await);
    let reuse = String::from_utf8(all[all.len() - 2].clone()).unwrap();
    let head = all.len();
    let reuse = reuse
        .replace(&fresh, &first[0].0)
        .replace(
            &format!("\"sessionSequence\":{}", head - 1),
            &format!("\"sessionSequence\":{}", head + 1),
        )
        .replace("\"eventId\":\"", "\"eventId\":\"again-");
    let want = reference.push_bytes(reuse.as_bytes()).unwrap_err().code;
    let err = e.import(&me(), &[reuse.into_bytes()]).await.unwrap_err();
    assert_eq!(err.code(), want);
    // A state at a past position reads the closed history it had.
    let at = e.state_at(&me(), &sid, head as u64).await.unwrap();
    assert_eq!(at.state_json(), reference.state_json(&sid));

    // Deleting the session deletes its closed records.
    e.delete_session(&me(), &sid, true).await.unwrap();
    assert_eq!(closed_records(e.store()).await, 0);
    e.store().close().await.unwrap();
}

/// The stored closed record of run `run`: its key and value.
async fn closed_of<S: Store>(store: &S, run: &str) -> (String, bytes::Bytes) {
    let all = store
        .list_side(SideSpace::Closed, None, 1000)
        .await
        .unwrap();
    let suffix = format!("r{run}");
    all.into_iter().find(|(k, _)| k.ends_with(&suffix)).unwrap()
}

/// A closed record that is not one is reported as damaged, never decided
/// without.
async fn damaged<S, F, Fut>(open: F)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let e = snapshotting(open().await);
    let sid = common::session(&e).await;
    let done = runs(&e, &sid, 10).await;
    let (key, _) = closed_of(e.store(), &done[0].0).await;
    common::put_closed(e.store(), &sid, key, Some(vec![0xff, 0xfe].into())).await;
    e.store().close().await.unwrap();
    drop(e);
    let e = snapshotting(open().await);
    let err = e
        .end_run(&me(), &sid, &done[0].0, finished())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "corrupt_record", "{err}");

    // A record that says it was written past the session's head (as by
    // another writer the journal has not seen) is never taken as history:
    // the engine reloads, and gives up as contended when it stays so.
    let (_, bytes) = closed_of(e.store(), &done[1].0).await;
    let mut future = bytes.to_vec();
    let head = e.store().head(&sid).await.unwrap();
    future[1..9].copy_from_slice(&(head + 100).to_be_bytes());
    common::put_closed(
        e.store(),
        &sid,
        format!("{}:{sid}/rghost", sid.len()),
        Some(future.into()),
    )
    .await;
    let err = e
        .start_run(&me(), &sid, StartRun::new().id("ghost"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "contended", "{err}");
    e.store().close().await.unwrap();
}

/// Two engines over one store: one restored from a snapshot while the
/// other closes runs and stores a newer snapshot with their records. The
/// first reloads rather than read closed history written past its head,
/// and answers as a full replay does.
async fn two_writers<S, F, Fut>(open: F)
where
    S: Store + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    let a = snapshotting(open().await);
    let sid = common::session(&a).await;
    runs(&a, &sid, 5).await;
    a.store().close().await.unwrap();
    drop(a);
    let a = snapshotting(open().await);
    assert!(a.state_json(&me(), &sid).await.is_ok());
    let b = snapshotting(open().await);
    let later = runs(&b, &sid, 5).await;
    b.write_snapshot(&me(), &sid).await.unwrap();
    let err = a
        .start_run(&me(), &sid, StartRun::new().id(later[2].0.as_str()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "run_already_started", "{err}");
    let err = a
        .finish_tool_call(&me(), &sid, &later[4].1, ToolOutcome::success(json!(2)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool_call_finished_twice", "{err}");
    let replayed = common::assert_valid(&a, &sid)
        .await
        .state_json(&sid)
        .unwrap();
    assert_eq!(a.state_json(&me(), &sid).await.unwrap(), replayed);
    a.store().close().await.unwrap();
    b.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.redb");
    scenario(|| async { narad_store_redb::RedbStore::open(&path).await.unwrap() }).await;
    let path = dir.path().join("b.redb");
    damaged(|| async { narad_store_redb::RedbStore::open(&path).await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    scenario(|| async { narad_store_sqlite::SqliteStore::open(&path).await.unwrap() }).await;
    let path = dir.path().join("b.db");
    damaged(|| async { narad_store_sqlite::SqliteStore::open(&path).await.unwrap() }).await;
    let path = dir.path().join("c.db");
    two_writers(|| async { narad_store_sqlite::SqliteStore::open(&path).await.unwrap() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    let Some(url) = common::postgres_url() else {
        return;
    };
    let pid = std::process::id();
    let schema = format!("closed_history_{pid}");
    scenario(|| postgres(&url, &schema)).await;
    let schema = format!("closed_damaged_{pid}");
    damaged(|| postgres(&url, &schema)).await;
    let schema = format!("closed_writers_{pid}");
    two_writers(|| postgres(&url, &schema)).await;
}
