//! `Engine::delete_session` on redb, SQLite and PostgreSQL: open work is
//! named and refused unless forced; a delete removes every record of the
//! session (journal, metadata, snapshot, interrupt index, timers, queue)
//! and leaves its neighbours; the id is refused afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use narad_engine::{
    AllowAll, Engine, EngineError, Interrupt, InterruptScope, NewSession, Principal, StartRun,
    Started, Terminal,
};
use narad_store::{SideSpace, Store, StoreError};

fn me() -> Principal {
    Principal::new("tester")
}

fn engine<S: Store + 'static>(store: S) -> Engine<S> {
    common::fixed_host(store, Arc::new(AllowAll))
}

fn new(sid: &str) -> NewSession {
    NewSession {
        session_id: Some(sid.into()),
        ..NewSession::default()
    }
}

/// `busy`: a running run waiting on an interrupt that expires (index entry
/// and timer), a queued start and a snapshot. `idle`: one finished run.
async fn fill<S: Store + 'static>(e: &Engine<S>) -> (String, String) {
    e.create_session(&me(), new("busy")).await.unwrap();
    let Started::Running(run) = e
        .start_run(&me(), "busy", StartRun::default())
        .await
        .unwrap()
    else {
        panic!("queued")
    };
    let (iid, _) = e
        .request_interrupt(
            &me(),
            "busy",
            Interrupt {
                scope: InterruptScope::Run(run.clone()),
                kind: "approval".into(),
                actions: vec!["approve".into()],
                input: None,
                expires_at: Some(
                    (SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000)).into(),
                ),
                title: None,
            },
        )
        .await
        .unwrap();
    let queued = StartRun {
        queue_if_busy: true,
        ..StartRun::default()
    };
    assert!(matches!(
        e.start_run(&me(), "busy", queued).await.unwrap(),
        Started::Queued { .. }
    ));
    e.write_snapshot(&me(), "busy").await.unwrap();
    e.create_session(&me(), new("idle")).await.unwrap();
    let Started::Running(r) = e
        .start_run(&me(), "idle", StartRun::default())
        .await
        .unwrap()
    else {
        panic!("queued")
    };
    let done = Terminal::Finished {
        usage: None,
        artifact_ids: Vec::new(),
    };
    e.end_run(&me(), "idle", &r, done).await.unwrap();
    (run, iid)
}

/// Every side record naming `sid` (by key or, for the interrupt index, by
/// value), in every space.
async fn records_of<S: Store>(s: &S, sid: &str) -> Vec<String> {
    let mut found = Vec::new();
    for space in SideSpace::ALL {
        for (k, v) in s.list_side(space, None, 10_000).await.unwrap() {
            let names = k == sid
                || k.starts_with(&format!("{sid}/"))
                || k.contains(&format!("/{sid}/"))
                || v.as_ref() == sid.as_bytes()
                || String::from_utf8_lossy(&v).contains(&format!("\"sessionId\":\"{sid}\""));
            if names {
                found.push(format!("{}/{k}", space.name()));
            }
        }
    }
    found
}

async fn delete_scenario<S: Store + 'static>(store: S) {
    let e = engine(store);
    let (run, iid) = fill(&e).await;
    let before = records_of(e.store(), "busy").await;
    for space in ["session/", "snapshot/", "interrupt/", "timer/", "queue/"] {
        assert!(
            before.iter().any(|r| r.starts_with(space)),
            "{space} {before:?}"
        );
    }
    let head = e.store().head("busy").await.unwrap();

    // Open work: refused, named, nothing changed.
    let err = e.delete_session(&me(), "busy", false).await.unwrap_err();
    assert_eq!(err.code(), "session_has_open_work");
    let EngineError::OpenWork { open } = &err else {
        panic!("{err:?}")
    };
    assert!(
        open.contains(&run) && open.contains(&iid) && open.contains("queued 1"),
        "{open}"
    );
    assert_eq!(e.store().head("busy").await.unwrap(), head);
    assert_eq!(records_of(e.store(), "busy").await, before);

    // Followers waiting at the head when the session goes end with
    // `session_deleted` rather than wait for events that cannot come.
    let mut follow = e.subscribe(&me(), "busy", head).await.unwrap();
    let mut watch = e.watch(&me(), "busy", head).await.unwrap();
    let followed = tokio::spawn(async move {
        let f = follow.next().await;
        let w = watch.next().await;
        (f.map(|x| x.is_some()), w.map(|x| x.is_some()))
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!followed.is_finished(), "a follower at the head returned");

    // Forced: every record goes, in one batch.
    let gone = e.delete_session(&me(), "busy", true).await.unwrap();
    // The deadlock guard: generous, never a speed claim.
    let (f, w) = tokio::time::timeout(Duration::from_secs(60), followed)
        .await
        .expect("a follower of the deleted session still waits")
        .unwrap();
    let deleted = || {
        EngineError::Store(StoreError::SessionDeleted {
            session_id: "busy".into(),
        })
    };
    assert_eq!(f, Err(deleted()));
    assert_eq!(w, Err(deleted()));
    assert_eq!(gone.events, head);
    assert!(!gone.open.is_empty());
    assert_eq!(e.store().head("busy").await.unwrap(), 0);
    assert!(e
        .store()
        .read_session("busy", 0, 10)
        .await
        .unwrap()
        .events
        .is_empty());
    assert_eq!(records_of(e.store(), "busy").await, vec!["tombstone/busy"]);
    assert!(!e
        .store()
        .list_sessions(None, 10)
        .await
        .unwrap()
        .contains(&"busy".to_owned()));

    // The id is refused from now on, for commands and for a new session.
    let refused = e.message(&me(), "busy", "hello").await.unwrap_err();
    assert_eq!(refused, deleted());
    assert_eq!(refused.to_string(), "session `busy` was deleted");
    let again = e.create_session(&me(), new("busy")).await.unwrap_err();
    assert_eq!(again.code(), "session_deleted");
    let again = e.delete_session(&me(), "busy", true).await.unwrap_err();
    assert_eq!(again.code(), "session_deleted");
    // The inbox no longer lists its interrupt.
    let page = e.open_interrupts(&me(), None, 100).await.unwrap();
    assert!(page.open.is_empty(), "{page:?}");

    // The neighbour is intact, has no open work and goes on.
    e.message(&me(), "idle", "still here").await.unwrap();
    let idle_head = e.store().head("idle").await.unwrap();
    let gone = e.delete_session(&me(), "idle", false).await.unwrap();
    assert_eq!((gone.events, gone.open.is_empty()), (idle_head, true));
    assert_eq!(records_of(e.store(), "idle").await, vec!["tombstone/idle"]);
    assert_eq!(
        e.deleted_sessions(None, 10).await.unwrap(),
        vec!["busy", "idle"]
    );
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let s = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    delete_scenario(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let s = narad_store_sqlite::SqliteStore::open(dir.path().join("a.db"))
        .await
        .unwrap();
    delete_scenario(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_postgres() {
    let Some(url) = common::postgres_url() else {
        return;
    };
    let schema = format!("lifecycle_{}", std::process::id());
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    delete_scenario(s).await;
}
