//! `Engine::state_at` and `Engine::fork` on redb and SQLite: a past state
//! equals a replay of the prefix; a fork's journal is accepted by the
//! checker, keeps every ordering, records its origin, keeps open work open
//! and continuable, and continuing it leaves the source unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use narad_core::checker::Checker;
use narad_engine::{
    AllowAll, Engine, EngineConfig, Interrupt, ManualClock, NewSession, Principal, Resolve,
    SequentialIds, StartRun, Started, Terminal,
};
use narad_store::Store;
use serde_json::Value;

fn me() -> Principal {
    Principal::new("tester")
}

async fn journal<S: Store>(s: &S, sid: &str) -> Vec<Vec<u8>> {
    let page = s.read_session(sid, 0, usize::MAX).await.unwrap();
    page.events.into_iter().map(|e| e.bytes.to_vec()).collect()
}

fn replay(events: &[Vec<u8>]) -> Checker {
    let mut c = Checker::default();
    for (i, b) in events.iter().enumerate() {
        c.push_bytes(b)
            .unwrap_or_else(|r| panic!("event {}: {r}", i + 1));
    }
    c
}

fn field(b: &[u8], k: &str) -> Value {
    serde_json::from_slice::<Value>(b).unwrap()[k].clone()
}

async fn scenario<S: Store + 'static>(store: S) {
    let e = Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        EngineConfig {
            snapshot_every: 3,
            ..EngineConfig::default()
        },
    );
    let new = NewSession {
        session_id: Some("src".into()),
        workspace_id: Some("ws".into()),
        ..NewSession::default()
    };
    e.create_session(&me(), new).await.unwrap();
    e.message(&me(), "src", "first turn").await.unwrap();
    let Started::Running(run) = e
        .start_run(&me(), "src", StartRun::default())
        .await
        .unwrap()
    else {
        panic!("queued")
    };
    let (iid, _) = e
        .request_interrupt(
            &me(),
            "src",
            Interrupt::on_run(run.clone(), "approval", ["approve", "deny"]),
        )
        .await
        .unwrap();
    let at_interrupt = e.store().head("src").await.unwrap();
    // The source goes on past the fork point.
    let resolve = |iid: String| Resolve {
        interrupt_id: iid,
        decision: "approve".into(),
        reason: None,
        expected_revision: None,
        members: None,
    };
    e.resolve_interrupt(&me(), resolve(iid.clone()))
        .await
        .unwrap();
    let done = || Terminal::Finished {
        usage: None,
        artifact_ids: Vec::new(),
    };
    e.end_run(&me(), "src", &run, done()).await.unwrap();
    let source = journal(e.store(), "src").await;
    let head = source.len() as u64;

    // state_at: equal to a replay of the prefix, at every point.
    for k in 1..=head {
        let past = e.state_at(&me(), "src", k).await.unwrap();
        let want = replay(&source[..k as usize]);
        assert_eq!(past.state_json(), want.state_json("src"), "at {k}");
        assert_eq!(
            format!("{:?}", past.state()),
            format!(
                "{:?}",
                narad_engine::SessionState::from_checker(&want, "src")
            ),
            "typed at {k}"
        );
        assert!(past.state().is_some());
    }
    let err = e.state_at(&me(), "src", head + 1).await.unwrap_err();
    assert_eq!(err.code(), "invalid_command");
    // Before the first event there is no state: refused, as past the head.
    let err = e.state_at(&me(), "src", 0).await.unwrap_err();
    assert_eq!(err.code(), "invalid_command");

    // Fork where the interrupt is open.
    let fork = e.fork(&me(), "src", at_interrupt).await.unwrap();
    assert_ne!(fork, "src");
    let forked = journal(e.store(), &fork).await;
    assert_eq!(forked.len() as u64, at_interrupt);
    let checked = replay(&forked);
    for (a, b) in source.iter().zip(&forked) {
        assert_eq!(field(b, "sessionId"), Value::from(fork.clone()));
        assert_ne!(field(a, "eventId"), field(b, "eventId"));
        for k in [
            "type",
            "sessionSequence",
            "sequence",
            "runId",
            "rootRunId",
            "timestamp",
        ] {
            assert_eq!(field(a, k), field(b, k), "{k}");
        }
    }
    let open = checked
        .run(&fork, &run)
        .unwrap()
        .open_interrupt
        .clone()
        .unwrap();
    assert_ne!(open.id, iid, "interrupt ids are re-identified");
    let entry = e.index_entry(&fork).await.unwrap().unwrap();
    assert_eq!(entry.forked_from, Some(("src".to_owned(), at_interrupt)));
    assert_eq!(entry.workspace_id.as_deref(), Some("ws"));
    assert_eq!(e.check_index(&fork).await.unwrap(), None);

    // Continue the fork: resolve its interrupt (found by its new id), deny
    // this time, end the run; the source is byte-for-byte unchanged.
    let page = e.open_interrupts(&me(), None, 100).await.unwrap();
    let listed: Vec<_> = page
        .open
        .iter()
        .map(|i| (i.session_id.clone(), i.interrupt_id.clone()))
        .collect();
    assert_eq!(listed, vec![(fork.clone(), open.id.clone())]);
    let mut deny = resolve(open.id.clone());
    deny.decision = "deny".into();
    assert_eq!(
        e.resolve_interrupt(&me(), deny).await.unwrap().session_id,
        fork
    );
    e.message(&me(), &fork, "another path").await.unwrap();
    e.end_run(&me(), &fork, &run, done()).await.unwrap();
    replay(&journal(e.store(), &fork).await);
    assert_eq!(journal(e.store(), "src").await, source);
    assert_eq!(e.check_index("src").await.unwrap(), None);
    // Forking out of range is refused.
    assert_eq!(
        e.fork(&me(), "src", head + 1).await.unwrap_err().code(),
        "invalid_command"
    );
    assert_eq!(
        e.fork(&me(), "src", 0).await.unwrap_err().code(),
        "invalid_command"
    );
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_and_state_at_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let s = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    scenario(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_and_state_at_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let s = narad_store_sqlite::SqliteStore::open(dir.path().join("a.db"))
        .await
        .unwrap();
    scenario(s).await;
}
