//! Several engine processes on one database, and connection loss.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use narad_core::checker::Checker;
use narad_engine::{AllowAll, Engine, EngineConfig, NewSession, Principal, RandomIds, SystemClock};
use narad_store::Store;
use narad_store_postgres::PostgresStore;
use serde_json::json;

const CHILD: &str = "NARAD_PG_CHILD";
const ROUNDS: usize = 10;
const SESSIONS: usize = 20;

fn engine(store: PostgresStore) -> Engine<PostgresStore> {
    Engine::with_host(
        store,
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig {
            max_retries: 200,
            ..EngineConfig::default()
        },
    )
}

async fn write_rounds(e: &Engine<PostgresStore>, tag: &str, sessions: &[String]) {
    let me = Principal::new(tag);
    for round in 0..ROUNDS {
        for sid in sessions {
            e.message(&me, sid, json!(format!("{tag} round {round}")))
                .await
                .unwrap();
        }
    }
}

/// Child engine: appends ROUNDS messages to every session it is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_child_process() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let (schema, rest) = spec.split_once(';').unwrap();
    let (tag, sessions) = rest.split_once(';').unwrap();
    let sessions: Vec<String> = sessions.split(',').map(str::to_owned).collect();
    let e = engine(
        PostgresStore::open(&common::url().unwrap(), schema)
            .await
            .unwrap(),
    );
    write_rounds(&e, tag, &sessions).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_engine_processes_share_twenty_sessions_without_gaps() {
    if std::env::var_os(CHILD).is_some() || !common::ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let schema = common::schema_for(dir.path());
    let a = engine(
        PostgresStore::open(&common::url().unwrap(), &schema)
            .await
            .unwrap(),
    );
    let me = Principal::new("parent");
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(a.create_session(&me, NewSession::default()).await.unwrap());
    }
    // Subscribers on engine A, attached before anyone writes.
    let mut follows = Vec::new();
    for sid in &sessions {
        follows.push(a.subscribe(&me, sid, 0).await.unwrap());
    }
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["b", "c"]
        .iter()
        .map(|tag| {
            std::process::Command::new(&exe)
                .args(["--exact", "engine_child_process", "--test-threads", "1"])
                .env(CHILD, format!("{schema};{tag};{}", sessions.join(",")))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    write_rounds(&a, "a", &sessions).await;
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a child engine failed");
    }
    let total = 3 * ROUNDS;
    for (sid, follow) in sessions.iter().zip(follows.iter_mut()) {
        let mut seen = Vec::new();
        while seen.len() < total {
            let ev = tokio::time::timeout(std::time::Duration::from_secs(30), follow.next())
                .await
                .expect("the subscriber stalled")
                .unwrap()
                .unwrap();
            seen.push(ev);
        }
        let seqs: Vec<u64> = seen.iter().map(|e| e.position.session_sequence).collect();
        assert_eq!(seqs, (1..=total as u64).collect::<Vec<_>>(), "{sid}");
        let from_others = seen
            .iter()
            .filter(|e| {
                let t = String::from_utf8_lossy(&e.bytes);
                t.contains("\"b round") || t.contains("\"c round")
            })
            .count();
        assert_eq!(from_others, 2 * ROUNDS, "{sid}");
        let mut checker = Checker::default();
        for ev in a
            .store()
            .read_session(sid, 0, usize::MAX)
            .await
            .unwrap()
            .events
        {
            checker.push_bytes(&ev.bytes).unwrap();
        }
        assert_eq!(a.store().head(sid).await.unwrap(), total as u64);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_whose_connection_dies_is_applied_exactly_once_on_redelivery() {
    if std::env::var_os(CHILD).is_some() || !common::ready() {
        return;
    }
    let url = common::url().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = common::schema_for(dir.path());
    let store = PostgresStore::open(&url, &schema).await.unwrap();
    use narad_store::suite::{batch, event};
    store
        .append(batch("s", 0, vec![event("s", 1, "a")]))
        .await
        .unwrap();

    // Hold the session's head row so the next append waits inside its
    // transaction, then kill that append's connection.
    let (blocker, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    blocker.batch_execute("BEGIN").await.unwrap();
    blocker
        .execute(
            &format!("SELECT head FROM {schema}.heads WHERE session = 's' FOR UPDATE"),
            &[],
        )
        .await
        .unwrap();
    let b = batch("s", 1, vec![event("s", 2, "a"), event("s", 3, "a")]);
    let pending = {
        let (store, b) = (store.clone(), b.clone());
        tokio::spawn(async move { store.append(b).await })
    };
    let mut killed = 0;
    // Bounded wait (30 s): a loaded machine may take a while to reach the lock.
    for _ in 0..1500 {
        // Only the backend this connection's lock blocks: the
        // three-process test in this binary runs at once, and its appends
        // wait on their own head rows. (Matching the waiting statement's
        // text failed once under load: the blocked backend still showed
        // its previous statement, `COMMIT`.)
        let row = blocker
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE pid <> pg_backend_pid() AND pg_backend_pid() = ANY(pg_blocking_pids(pid))",
                &[],
            )
            .await
            .unwrap();
        killed = row.get::<_, i64>(0);
        if killed > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    if killed != 1 {
        // What every other backend was doing, for the failure report.
        for r in blocker
            .query(
                "SELECT pid, coalesce(state, ''), coalesce(wait_event_type, ''),
                        coalesce(wait_event, ''), left(coalesce(query, ''), 120)
                 FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
                &[],
            )
            .await
            .unwrap()
        {
            let (pid, state, wtype, wait, q): (i32, String, String, String, String) =
                (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
            eprintln!("backend {pid}: {state} {wtype}/{wait}: {q}");
        }
    }
    assert_eq!(killed, 1, "the append never waited on the lock");
    blocker.batch_execute("ROLLBACK").await.unwrap();
    let lost = pending.await.unwrap();
    assert!(
        lost.is_err(),
        "the append survived its connection: {lost:?}"
    );
    // Outcome unknown to the caller: it redelivers the same batch.
    let again = store.append(b.clone()).await.unwrap();
    assert_eq!((again.head, again.positions.clone()), (3, vec![2, 3]));
    // And once more, as if that reply had been lost too: nothing new.
    let third = store.append(b).await.unwrap();
    assert!(third.redelivered);
    let all = store.read_session("s", 0, 100).await.unwrap().events;
    assert_eq!(all.len(), 3, "applied exactly once");
}
