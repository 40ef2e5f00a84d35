//! `narad delete` as a real process on real redb and SQLite files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use narad_engine::{Engine, NewSession, Principal, StartRun};
use narad_store::Store;

fn narad(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_narad"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A session `s-open` with a running run, and `s-done` with a message.
fn fill(url: &str) -> String {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let e = Engine::new(narad_stores::open(url).await.unwrap());
        let me = Principal::new("t");
        for sid in ["s-open", "s-done"] {
            let new = NewSession {
                session_id: Some(sid.into()),
                ..NewSession::default()
            };
            e.create_session(&me, new).await.unwrap();
        }
        e.message(&me, "s-done", "hi".into()).await.unwrap();
        let started = e
            .start_run(&me, "s-open", StartRun::default())
            .await
            .unwrap();
        e.store().close().await.unwrap();
        match started {
            narad_engine::Started::Running(r) => r,
            other => panic!("{other:?}"),
        }
    })
}

#[test]
fn delete_names_open_work_and_forced_deletes_everything() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        format!("redb:{}", dir.path().join("a.redb").display()),
        format!("sqlite:{}", dir.path().join("b.sqlite").display()),
    ] {
        let run = fill(&url);
        let (code, out, err) = narad(&["delete", "--store", &url, "s-open"]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            err.contains("session_has_open_work") && err.contains(&run),
            "{err}"
        );
        let (code, out, err) = narad(&["delete", "--store", &url, "s-open", "--force", "--json"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("\"deleted\":\"s-open\"") && out.contains(&run),
            "{out}"
        );
        let (code, out, err) = narad(&["delete", "--store", &url, "s-done"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("deleted s-done: 1 events"), "{out}");
        let (code, _, err) = narad(&["delete", "--store", &url, "s-done"]);
        assert_eq!(code, 1);
        assert!(err.contains("session_deleted"), "{err}");
        let (code, out, _) = narad(&["sessions", "--store", &url]);
        assert_eq!(code, 0);
        assert!(!out.contains("s-open") && !out.contains("s-done"), "{out}");
        let (code, _, _) = narad(&["verify", "--store", &url]);
        assert_eq!(code, 0);
    }
}
