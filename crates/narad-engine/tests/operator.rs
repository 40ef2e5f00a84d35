//! `Engine::open_interrupts`: the open interrupts of every session, paged
//! through the interrupt index, after a restart, leaving out resolved ones
//! and sessions the principal may not read — on a real redb file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use narad_engine::{
    Action, Authorizer, Engine, EngineConfig, Interrupt, InterruptScope, ListedInterrupt,
    ManualClock, NewSession, Principal, Resolve, SequentialIds, StartRun, Started,
};
use narad_store::Store;
use narad_store_redb::RedbStore;

/// Allows everything but reading the session `s-hidden`.
#[derive(Debug)]
struct NoHidden;

impl Authorizer for NoHidden {
    fn allows(&self, _: &Principal, action: Action<'_>) -> bool {
        !matches!(
            action,
            Action::Read {
                session_id: "s-hidden"
            }
        )
    }
}

async fn engine(path: &std::path::Path) -> Engine<RedbStore> {
    Engine::with_host(
        RedbStore::open(path).await.unwrap(),
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        Arc::new(SequentialIds::default()),
        Arc::new(NoHidden),
        EngineConfig::default(),
    )
}

/// Every page of `limit` index entries, to the end.
async fn all_open(e: &Engine<RedbStore>, limit: usize) -> (Vec<ListedInterrupt>, usize) {
    let (mut open, mut pages, mut after) = (Vec::new(), 0, None::<String>);
    loop {
        let page = e
            .open_interrupts(&Principal::new("op"), after.as_deref(), limit)
            .await
            .unwrap();
        pages += 1;
        open.extend(page.open);
        match page.next {
            Some(n) => after = Some(n),
            None => return (open, pages),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_interrupts_pages_the_index_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ops.redb");
    let me = Principal::new("tester");
    let expires = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    let e = engine(&path).await;
    let mut ids = Vec::new();
    for sid in ["s-a", "s-b", "s-c", "s-hidden"] {
        let new = NewSession {
            session_id: Some(sid.into()),
            ..NewSession::default()
        };
        e.create_session(&me, new).await.unwrap();
        let Started::Running(run) = e.start_run(&me, sid, StartRun::default()).await.unwrap()
        else {
            panic!("queued")
        };
        let (iid, _) = e
            .request_interrupt(
                &me,
                sid,
                Interrupt {
                    scope: InterruptScope::Run(run),
                    kind: format!("approval.{sid}"),
                    actions: vec!["approve".into(), "deny".into()],
                    input: None,
                    expires_at: Some(expires.into()),
                    title: None,
                },
            )
            .await
            .unwrap();
        ids.push(iid);
    }
    let resolve = Resolve {
        interrupt_id: ids[1].clone(),
        decision: "deny".into(),
        reason: None,
        expected_revision: None,
        members: None,
    };
    e.resolve_interrupt(&me, resolve).await.unwrap();
    e.store().close().await.unwrap();
    drop(e);

    // A new engine that has touched no session finds them in the store.
    let e = engine(&path).await;
    let (open, pages) = all_open(&e, 1).await;
    // One index entry per page, and the empty page that ends the index.
    assert_eq!(pages, 5);
    let mut got: Vec<(&str, &str, &str)> = open
        .iter()
        .map(|i| {
            (
                i.session_id.as_str(),
                i.interrupt_id.as_str(),
                i.kind.as_str(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("s-a", ids[0].as_str(), "approval.s-a"),
            ("s-c", ids[2].as_str(), "approval.s-c")
        ]
    );
    for i in &open {
        assert_eq!(i.actions, ["approve", "deny"]);
        assert_eq!(i.title, None);
        assert!(i.expires_at.as_deref().unwrap().starts_with("2026-09-21T"));
        assert!(matches!(i.scope, InterruptScope::Run(_)));
    }
    // One big page says the same (grouped by session, not in index order).
    let (mut again, pages) = all_open(&e, 1000).await;
    let mut open = open;
    let key = |i: &ListedInterrupt| i.interrupt_id.clone();
    again.sort_by_key(key);
    open.sort_by_key(key);
    assert_eq!((again, pages), (open, 2));
}
