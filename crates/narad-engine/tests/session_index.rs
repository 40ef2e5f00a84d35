//! The session index on redb, SQLite and PostgreSQL: after random command
//! sequences (create, message, runs, interrupts, labels, archive, delete)
//! every stored entry equals its rebuild from the journal, and
//! `Engine::sessions` answers every filter as a scan of the rebuilds would,
//! page by page. Archive: commands refused, reads work, announced.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use narad_engine::{
    AllowAll, Engine, EngineConfig, Interrupt, ManualClock, NewSession, Principal, Resolve,
    SequentialIds, SessionEntry, SessionQuery, SessionStatus, StartRun, Started, Terminal,
};
use narad_store::{SideSpace, Store};

fn me() -> Principal {
    Principal::new("tester")
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// One random command on one of `sids`; refusals are part of the game.
async fn step<S: Store + 'static>(
    e: &Engine<S>,
    clock: &ManualClock,
    rng: &mut Lcg,
    sids: &mut Vec<String>,
) {
    clock.advance(Duration::from_secs(1 + rng.next(100)));
    if sids.is_empty() || rng.next(8) == 0 {
        let new = NewSession {
            workspace_id: Some(format!("ws-{}", rng.next(2))),
            ..NewSession::default()
        };
        sids.push(e.create_session(&me(), new).await.unwrap());
        return;
    }
    let sid = sids[rng.next(sids.len() as u64) as usize].clone();
    let active = e
        .index_entry(&sid)
        .await
        .ok()
        .flatten()
        .and_then(|x| x.active_execution)
        .map(|a| a.id);
    let _ = match rng.next(9) {
        0 => e.message(&me(), &sid, "hi").await.map(|_| ()),
        1 | 2 => {
            let start = StartRun {
                queue_if_busy: rng.next(2) == 0,
                ..StartRun::default()
            };
            e.start_run(&me(), &sid, start).await.map(|_| ())
        }
        3 => match active {
            Some(run) => {
                let i = Interrupt::on_run(run, "approval", ["approve"]);
                e.request_interrupt(&me(), &sid, i).await.map(|_| ())
            }
            None => Ok(()),
        },
        4 => {
            let page = e.open_interrupts(&me(), None, 1000).await.unwrap();
            match page.open.iter().find(|i| i.session_id == sid) {
                Some(i) => e
                    .resolve_interrupt(
                        &me(),
                        Resolve {
                            interrupt_id: i.interrupt_id.clone(),
                            decision: "approve".into(),
                            reason: None,
                            expected_revision: None,
                            members: None,
                        },
                    )
                    .await
                    .map(|_| ()),
                None => Ok(()),
            }
        }
        5 => match active {
            Some(run) => {
                let done = Terminal::Finished {
                    usage: None,
                    artifact_ids: Vec::new(),
                };
                e.end_run(&me(), &sid, &run, done).await
            }
            None => Ok(()),
        },
        6 => {
            let labels = BTreeMap::from([("team".to_owned(), format!("t{}", rng.next(2)))]);
            e.set_labels(&me(), &sid, labels).await
        }
        7 => e.archive(&me(), &sid).await,
        _ => {
            let forced = rng.next(2) == 0;
            let r = e.delete_session(&me(), &sid, forced).await;
            if r.is_ok() {
                sids.retain(|s| *s != sid);
            }
            r.map(|_| ())
        }
    };
}

/// Every index entry equals its rebuild; every live session has one.
async fn assert_index_matches_rebuild<S: Store + 'static>(
    e: &Engine<S>,
    sids: &[String],
) -> Vec<SessionEntry> {
    let stored = e
        .store()
        .list_side(SideSpace::SessionIndex, None, 100_000)
        .await
        .unwrap();
    let keys: Vec<&str> = stored.iter().map(|(k, _)| k.as_str()).collect();
    let mut want: Vec<&str> = sids.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(keys, want);
    let mut rebuilt = Vec::new();
    for sid in sids {
        assert_eq!(e.check_index(sid).await.unwrap(), None, "{sid}");
        rebuilt.push(e.rebuild_index_entry(sid).await.unwrap());
    }
    rebuilt.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    rebuilt
}

/// All pages of a query, two at a time.
async fn all_pages<S: Store + 'static>(e: &Engine<S>, q: &SessionQuery) -> Vec<SessionEntry> {
    let (mut out, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = e.sessions(&me(), q, after.as_deref(), 2).await.unwrap();
        assert!(page.sessions.len() <= 2);
        out.extend(page.sessions);
        match page.next {
            Some(n) => after = Some(n),
            None => return out,
        }
    }
}

async fn random_sequences<S: Store + 'static>(store: S) {
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    let e = Engine::with_host(
        store,
        clock.clone(),
        Arc::new(SequentialIds::default()),
        Arc::new(AllowAll),
        EngineConfig {
            snapshot_every: 7,
            ..EngineConfig::default()
        },
    );
    let mut rng = Lcg(16);
    let mut sids = Vec::new();
    let mut seen = BTreeMap::new();
    for round in 0..4 {
        for _ in 0..60 {
            step(&e, &clock, &mut rng, &mut sids).await;
        }
        let rebuilt = assert_index_matches_rebuild(&e, &sids).await;
        for r in &rebuilt {
            *seen.entry(r.status).or_insert(0) += 1;
        }
        // Every filter answers as a scan of the rebuilds would.
        let mid = SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000 + 2_500 * (round + 1));
        let queries = [
            SessionQuery::default(),
            SessionQuery {
                status: vec![SessionStatus::AwaitingInput, SessionStatus::Running],
                ..SessionQuery::default()
            },
            SessionQuery {
                workspace_id: Some("ws-1".into()),
                ..SessionQuery::default()
            },
            SessionQuery {
                labels: BTreeMap::from([("team".to_owned(), "t1".to_owned())]),
                ..SessionQuery::default()
            },
            SessionQuery {
                updated_after: Some(mid),
                ..SessionQuery::default()
            },
            SessionQuery {
                updated_before: Some(mid),
                status: vec![SessionStatus::Finished],
                ..SessionQuery::default()
            },
        ];
        for q in &queries {
            let got = all_pages(&e, q).await;
            let at = narad_engine::host::timestamp;
            let want: Vec<SessionEntry> = rebuilt
                .iter()
                .filter(|r| q.status.is_empty() || q.status.contains(&r.status))
                .filter(|r| q.workspace_id.is_none() || q.workspace_id == r.workspace_id)
                .filter(|r| q.labels.iter().all(|(k, v)| r.labels.get(k) == Some(v)))
                .filter(|r| {
                    q.updated_after
                        .is_none_or(|t| r.updated_at.clone().unwrap() > at(t))
                })
                .filter(|r| {
                    q.updated_before
                        .is_none_or(|t| r.updated_at.clone().unwrap() < at(t))
                })
                .cloned()
                .collect();
            assert_eq!(got, want, "{q:?}");
        }
    }
    // The sequence reached every status but paused (no command pauses here).
    for s in [
        SessionStatus::Idle,
        SessionStatus::Running,
        SessionStatus::AwaitingInput,
        SessionStatus::Finished,
        SessionStatus::Archived,
    ] {
        assert!(seen.contains_key(&s), "{s:?} never seen: {seen:?}");
    }
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_matches_rebuild_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let s = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    random_sequences(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_matches_rebuild_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let s = narad_store_sqlite::SqliteStore::open(dir.path().join("a.db"))
        .await
        .unwrap();
    random_sequences(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_matches_rebuild_on_postgres() {
    let Some(url) = common::postgres_url() else {
        return;
    };
    let schema = format!("session_index_{}", std::process::id());
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    random_sequences(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_session_refuses_commands_serves_reads_and_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    let e = common::fixed_host(store, Arc::new(AllowAll));
    let new = NewSession {
        workspace_id: Some("ws".into()),
        ..NewSession::default()
    };
    let labels = BTreeMap::from([("tier".to_owned(), "gold".to_owned())]);
    let sid = e
        .create_session_labeled(&me(), new, labels.clone())
        .await
        .unwrap();
    let q = SessionQuery {
        labels: labels.clone(),
        ..SessionQuery::default()
    };
    let found = e.sessions(&me(), &q, None, 10).await.unwrap().sessions;
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].status, &found[0].labels),
        (SessionStatus::Idle, &labels)
    );
    assert_eq!(e.check_index(&sid).await.unwrap(), None);
    let Started::Running(run) = e.start_run(&me(), &sid, StartRun::default()).await.unwrap() else {
        panic!("queued")
    };
    // Open work cannot be archived.
    let err = e.archive(&me(), &sid).await.unwrap_err();
    assert_eq!(err.code(), "session_has_open_work");
    let done = Terminal::Finished {
        usage: None,
        artifact_ids: Vec::new(),
    };
    e.end_run(&me(), &sid, &run, done).await.unwrap();
    let head = e.store().head(&sid).await.unwrap();
    e.archive(&me(), &sid).await.unwrap();
    e.archive(&me(), &sid).await.unwrap();
    let entry = e.index_entry(&sid).await.unwrap().unwrap();
    assert_eq!(entry.status, SessionStatus::Archived);
    for err in [
        e.message(&me(), &sid, "late").await.unwrap_err(),
        e.start_run(&me(), &sid, StartRun::default())
            .await
            .map(|_| ())
            .unwrap_err(),
        e.set_labels(&me(), &sid, BTreeMap::new())
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), "session_archived");
    }
    assert_eq!(e.store().head(&sid).await.unwrap(), head);
    // Reads work.
    let history = e.store().read_session(&sid, 0, 100).await.unwrap();
    assert_eq!(history.events.len() as u64, head);
    // Announced once on the workspace stream, after session.created.
    let watch = e.workspace_watch(&me(), "ws", 0, 100).await.unwrap();
    let types: Vec<String> = watch
        .events
        .iter()
        .map(|w| {
            let v: serde_json::Value = serde_json::from_slice(&w.bytes).unwrap();
            v["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types, ["session.created", "session.archived"]);
    let q = SessionQuery {
        status: vec![SessionStatus::Archived],
        ..SessionQuery::default()
    };
    assert_eq!(
        e.sessions(&me(), &q, None, 10).await.unwrap().sessions,
        vec![entry]
    );
    // An archived session can still be deleted.
    e.delete_session(&me(), &sid, false).await.unwrap();
}

/// Crash-test child: runs random commands on the store whose URL this
/// variable names until it is killed.
const CRASH_CHILD: &str = "NARAD_INDEX_CRASH_CHILD";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_crash_child() {
    let Ok(url) = std::env::var(CRASH_CHILD) else {
        return;
    };
    let seed: u64 = std::env::var("NARAD_INDEX_CRASH_SEED")
        .unwrap()
        .parse()
        .unwrap();
    let store = narad_stores::open(&url).await.unwrap();
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000 + seed * 1_000_000));
    let e = Engine::with_host(
        store,
        clock.clone(),
        Arc::new(narad_engine::RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            snapshot_every: 5,
            ..EngineConfig::default()
        },
    );
    let mut rng = Lcg(seed);
    let mut sids = Vec::new();
    loop {
        step(&e, &clock, &mut rng, &mut sids).await;
    }
}

/// SIGKILLs a writer running random commands five times at varied moments;
/// after each, the reopened store's index equals a rebuild of every
/// session (the index commits in the batch of the events, so no kill can
/// separate them). On redb, SQLite and PostgreSQL.
fn index_matches_rebuild_after_sigkill_on(url: &str) {
    let mut rng = Lcg(7);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // The store exists before the first child starts: a child killed while
    // still starting up (a loaded machine) must leave a store to reopen.
    rt.block_on(async {
        let store = narad_stores::open(url).await.unwrap();
        store.close().await.unwrap();
    });
    for round in 0..5u64 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["index_crash_child", "--exact", "--nocapture"])
            .env(CRASH_CHILD, url)
            .env("NARAD_INDEX_CRASH_SEED", (round + 1).to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400 + rng.next(600)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        rt.block_on(async {
            let store = narad_stores::open_existing(url).await.unwrap();
            let e = Engine::new(store);
            let live: Vec<String> = e
                .store()
                .list_side(SideSpace::Session, None, 100_000)
                .await
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            assert!(round == 0 || !live.is_empty(), "the child wrote nothing");
            assert_index_matches_rebuild(&e, &live).await;
            e.store().close().await.unwrap();
        });
    }
}

#[test]
fn index_matches_rebuild_after_sigkill_on_redb() {
    if std::env::var_os(CRASH_CHILD).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("crash.redb").display());
    index_matches_rebuild_after_sigkill_on(&url);
}

#[test]
fn index_matches_rebuild_after_sigkill_on_sqlite() {
    if std::env::var_os(CRASH_CHILD).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("crash.db").display());
    index_matches_rebuild_after_sigkill_on(&url);
}

#[test]
fn index_matches_rebuild_after_sigkill_on_postgres() {
    if std::env::var_os(CRASH_CHILD).is_some() {
        return;
    }
    let Some(base) = common::postgres_url() else {
        return;
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}schema=index_crash_{}", std::process::id());
    index_matches_rebuild_after_sigkill_on(&url);
}

/// The inbox loads only sessions the index shows awaiting input: after a
/// restart, sessions whose interrupts were resolved are not hydrated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_loads_only_sessions_awaiting_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.redb");
    let open = || async {
        Engine::with_host(
            narad_store_redb::RedbStore::open(&path).await.unwrap(),
            Arc::new(ManualClock::at_unix(1_780_000_000)),
            Arc::new(SequentialIds::default()),
            Arc::new(AllowAll),
            EngineConfig::default(),
        )
    };
    let e = open().await;
    let mut waiting = String::new();
    for i in 0..6 {
        let new = NewSession {
            session_id: Some(format!("s-{i}")),
            ..NewSession::default()
        };
        let sid = e.create_session(&me(), new).await.unwrap();
        let Started::Running(run) = e.start_run(&me(), &sid, StartRun::default()).await.unwrap()
        else {
            panic!("queued")
        };
        let i_req = Interrupt::on_run(run, "approval", ["approve"]);
        let (iid, _) = e.request_interrupt(&me(), &sid, i_req).await.unwrap();
        if i == 3 {
            waiting = sid;
            continue;
        }
        let r = Resolve {
            interrupt_id: iid,
            decision: "approve".into(),
            reason: None,
            expected_revision: None,
            members: None,
        };
        e.resolve_interrupt(&me(), r).await.unwrap();
    }
    e.store().close().await.unwrap();
    drop(e);
    let e = open().await;
    let page = e.open_interrupts(&me(), None, 100).await.unwrap();
    assert_eq!(page.open.len(), 1);
    assert_eq!(page.open[0].session_id, waiting);
    assert_eq!(
        e.stats().hydrations,
        1,
        "only the session awaiting input was loaded"
    );
}

/// An archived session is read-only for imports too: a journal that would
/// add events is refused with `session_archived` and nothing is appended.
#[tokio::test]
async fn an_import_into_an_archived_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let open = |name: &'static str| {
        let path = dir.path().join(name);
        async move {
            Engine::with_host(
                narad_store_redb::RedbStore::open(path).await.unwrap(),
                Arc::new(ManualClock::at_unix(1_780_000_000)),
                Arc::new(SequentialIds::default()),
                Arc::new(AllowAll),
                EngineConfig::default(),
            )
        }
    };
    let (a, b) = (open("a.redb").await, open("b.redb").await);
    let new = || NewSession {
        session_id: Some("s-arch".into()),
        ..NewSession::default()
    };
    // The same session elsewhere, with one event to import.
    b.create_session(&me(), new()).await.unwrap();
    b.message(&me(), "s-arch", "from elsewhere").await.unwrap();
    let records: Vec<Vec<u8>> = b
        .store()
        .read_session("s-arch", 0, 100)
        .await
        .unwrap()
        .events
        .iter()
        .map(|ev| ev.bytes.to_vec())
        .collect();
    assert_eq!(records.len(), 1);

    a.create_session(&me(), new()).await.unwrap();
    a.archive(&me(), "s-arch").await.unwrap();
    let err = a.import(&me(), &records).await.unwrap_err();
    assert_eq!(err.code(), "session_archived");
    assert_eq!(a.store().head("s-arch").await.unwrap(), 0);
}
