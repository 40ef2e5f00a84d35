//! Two real processes append to the same sessions of one SQLite file; the
//! final journals are contiguous and complete.
//!
//! The test binary runs itself as the child: `writer_process` does its work
//! only when `NARAD_SQLITE_CHILD` names a database, and is otherwise a no-op
//! entry point, not a test of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_store::suite::{batch, event};
use narad_store::{Store, StoreError};
use narad_store_sqlite::SqliteStore;

const SESSIONS: usize = 3;
const PER_WRITER: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_process() {
    let (Ok(path), Ok(tag)) = (
        std::env::var("NARAD_SQLITE_CHILD"),
        std::env::var("NARAD_SQLITE_TAG"),
    ) else {
        return;
    };
    let s = SqliteStore::open(&path).await.unwrap();
    for session in 0..SESSIONS {
        let sid = format!("s{session}");
        let mut won = 0;
        while won < PER_WRITER {
            let head = s.head(&sid).await.unwrap();
            let ev = event(&sid, head + 1, &format!("{tag}-{won}"));
            match s.append(batch(&sid, head, vec![ev])).await {
                Ok(_) => won += 1,
                Err(StoreError::HeadConflict { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_database() {
    if std::env::var_os("NARAD_SQLITE_CHILD").is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    drop(SqliteStore::open(&path).await.unwrap());
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|tag| {
            std::process::Command::new(&exe)
                .args(["--exact", "writer_process", "--test-threads", "1"])
                .env("NARAD_SQLITE_CHILD", &path)
                .env("NARAD_SQLITE_TAG", tag)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer process failed");
    }
    let s = SqliteStore::open(&path).await.unwrap();
    for session in 0..SESSIONS {
        let sid = format!("s{session}");
        let all = s.read_session(&sid, 0, 1000).await.unwrap().events;
        assert_eq!(all.len() as u64, 2 * PER_WRITER, "{sid} is incomplete");
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.position.session_sequence, i as u64 + 1, "{sid} has a gap");
        }
        for tag in ["a", "b"] {
            let n = all
                .iter()
                .filter(|e| e.event_id.contains(&format!("-{tag}-")))
                .count() as u64;
            assert_eq!(n, PER_WRITER, "{sid}: writer {tag}");
        }
    }
}
