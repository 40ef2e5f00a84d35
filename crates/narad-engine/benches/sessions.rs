//! `sessions` filtered by status over 100k sessions (10k with
//! `NARAD_BENCH_QUICK=1`) on redb: the session index against the
//! replay-all listing `narad sessions` used before it (read every journal,
//! replay it through the checker, look at its slot), in one run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::time::Instant;

use narad_core::checker::Checker;
use narad_engine::{Engine, NewSession, Principal, SessionQuery, SessionStatus, StartRun};
use narad_store::Store;
use narad_store_redb::RedbStore;

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let n: usize = if quick { 10_000 } else { 100_000 };
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let e = Engine::new(RedbStore::open(dir.path().join("s.redb")).await.unwrap());
        let me = Principal::new("bench");
        let t = Instant::now();
        for chunk in (0..n).collect::<Vec<_>>().chunks(256) {
            let mut tasks = Vec::new();
            for &i in chunk {
                let (e, me) = (e.clone(), me.clone());
                tasks.push(tokio::spawn(async move {
                    let new = NewSession {
                        session_id: Some(format!("s-{i:06}")),
                        ..NewSession::default()
                    };
                    let sid = e.create_session(&me, new).await.unwrap();
                    // One in four runs; the others hold one message.
                    if i % 4 == 0 {
                        e.start_run(&me, &sid, StartRun::default()).await.unwrap();
                    } else {
                        e.message(&me, &sid, "hi").await.unwrap();
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        }
        println!("filled {n} sessions in {:.1}s", t.elapsed().as_secs_f64());

        let q = SessionQuery {
            status: vec![SessionStatus::Running],
            ..SessionQuery::default()
        };
        let t = Instant::now();
        let (mut found, mut after) = (0usize, None::<String>);
        loop {
            let page = e.sessions(&me, &q, after.as_deref(), 1000).await.unwrap();
            found += page.sessions.len();
            match page.next {
                Some(c) => after = Some(c),
                None => break,
            }
        }
        let index_s = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let store = e.store();
        let (mut replayed, mut after) = (0usize, None::<String>);
        loop {
            let ids = store.list_sessions(after.as_deref(), 1000).await.unwrap();
            let Some(last) = ids.last().cloned() else {
                break;
            };
            for sid in ids {
                let page = store.read_session(&sid, 0, usize::MAX).await.unwrap();
                let mut c = Checker::default();
                for ev in &page.events {
                    c.push_bytes(&ev.bytes).unwrap();
                }
                if c.slot(&sid).is_some() {
                    replayed += 1;
                }
            }
            after = Some(last);
        }
        let replay_s = t.elapsed().as_secs_f64();
        assert_eq!(found, replayed, "both listings find the same sessions");
        println!(
            "sessions --status running over {n} sessions ({found} match): index {:.0} ms, \
             replay-all {:.0} ms, ratio {:.1}x",
            index_s * 1e3,
            replay_s * 1e3,
            replay_s / index_s.max(1e-9)
        );
        e.store().close().await.unwrap();
    });
}
