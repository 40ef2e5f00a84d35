//! Dropping a command's future (a timeout, a `select!` that took another
//! branch) wherever it stands: the command is appended whole or not at
//! all, and it is settled before the session's next command, so it never
//! lands after a command called later. Real redb and SQLite files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use common::{assert_valid, fixed_host, journal, me, session};
use narad_engine::{AllowAll, Engine};
use narad_store::Store;
use serde_json::{json, Value};

/// Yields to the runtime `n` times.
async fn yields(n: usize) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

/// Polls `fut` until it finishes or `turns` yields have passed, then drops
/// it; whether it finished.
async fn dropped_after<F: Future>(fut: F, turns: usize) -> bool {
    tokio::select! {
        biased;
        _ = fut => true,
        _ = yields(turns) => false,
    }
}

/// The `content` of every user message in the session's stored journal.
async fn texts<S: Store + 'static>(e: &Engine<S>, sid: &str) -> Vec<String> {
    journal(e, sid)
        .await
        .iter()
        .map(|b| serde_json::from_slice::<Value>(b).unwrap())
        .filter(|v| v["type"] == "message.user.recorded")
        .map(|v| v["content"].as_str().unwrap().to_owned())
        .collect()
}

async fn dropped_commands_settle_in_call_order<S: Store + 'static>(open: impl Fn() -> S) {
    let e = fixed_host(open(), Arc::new(AllowAll));
    let sid = session(&e).await;
    let (mut finished, mut dropped) = (Vec::new(), Vec::new());
    for i in 0..60 {
        let text = format!("m{i}");
        if dropped_after(e.message(&me(), &sid, json!(text)), i % 8).await {
            finished.push(text);
        } else {
            dropped.push(text);
        }
    }
    assert!(
        !dropped.is_empty(),
        "no drop landed before its command finished"
    );
    e.message(&me(), &sid, json!("after")).await.unwrap();

    let got = texts(&e, &sid).await;
    assert_eq!(got.last().map(String::as_str), Some("after"));
    for t in &finished {
        assert_eq!(got.iter().filter(|g| *g == t).count(), 1, "{t}: {got:?}");
    }
    for t in &dropped {
        assert!(got.iter().filter(|g| *g == t).count() <= 1, "{t}: {got:?}");
    }
    // In call order: a dropped command never lands after a later one.
    let order: Vec<String> = (0..60).map(|i| format!("m{i}")).collect();
    let expected: Vec<&String> = order.iter().filter(|t| got.contains(t)).collect();
    assert_eq!(got[..got.len() - 1].iter().collect::<Vec<_>>(), expected);
    assert_valid(&e, &sid).await;
    let before = journal(&e, &sid).await;
    drop(e);

    // A restart reads exactly the journal the first engine answered from.
    let again = fixed_host(open(), Arc::new(AllowAll));
    assert_eq!(journal(&again, &sid).await, before);
}

fn redb(dir: &Path) -> impl Fn() -> narad_store_redb::RedbStore + '_ {
    move || block_on(narad_store_redb::RedbStore::open(dir.join("s.redb"))).expect("open redb")
}

fn sqlite(dir: &Path) -> impl Fn() -> narad_store_sqlite::SqliteStore + '_ {
    move || {
        block_on(narad_store_sqlite::SqliteStore::open(dir.join("s.sqlite"))).expect("open sqlite")
    }
}

/// Opens a store from inside the test's runtime.
fn block_on<F: Future>(f: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_command_is_whole_or_absent_and_never_after_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    dropped_commands_settle_in_call_order(redb(dir.path())).await;
    dropped_commands_settle_in_call_order(sqlite(dir.path())).await;
}
