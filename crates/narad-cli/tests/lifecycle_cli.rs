//! `narad delete` as a real process on real redb and SQLite files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::narad;

use narad_engine::{Engine, NewSession, Principal, StartRun};
use narad_store::Store;

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
        e.message(&me, "s-done", "hi").await.unwrap();
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
        // An unknown session is named, escaped onto one line.
        let (code, _, err) = narad(&["delete", "--store", &url, "s-none\nx"]);
        assert_eq!(code, 1);
        assert_eq!(
            err,
            "narad: unknown_session: no session `s-none\\nx` in this store\n"
        );
        let (code, out, _) = narad(&["sessions", "--store", &url]);
        assert_eq!(code, 0);
        assert!(!out.contains("s-open") && !out.contains("s-done"), "{out}");
        let (code, _, _) = narad(&["verify", "--store", &url]);
        assert_eq!(code, 0);
    }
}

#[test]
fn sessions_filters_read_the_index_and_verify_and_reindex_check_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.redb");
    let url = format!("redb:{}", path.display());
    let run = fill(&url);
    let (code, out, err) = narad(&["sessions", "--store", &url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.contains(&format!("s-open\thead=1\tactive=run:{run}")),
        "{out}"
    );
    let (_, out, _) = narad(&["sessions", "--store", &url, "--status", "running"]);
    assert!(
        out.starts_with("s-open\t") && out.lines().count() == 1,
        "{out}"
    );
    let (_, out, _) = narad(&["sessions", "--store", &url, "--status", "idle"]);
    assert!(
        out.starts_with("s-done\t") && out.contains("status=idle"),
        "{out}"
    );
    let (_, out, _) = narad(&["sessions", "--store", &url, "--workspace", "none"]);
    assert!(out.is_empty(), "{out}");
    let (_, out, _) = narad(&[
        "sessions",
        "--store",
        &url,
        "--updated-after",
        "2999-01-01T00:00:00Z",
    ]);
    assert!(out.is_empty(), "{out}");
    let (code, _, err) = narad(&["sessions", "--store", &url, "--status", "sleepy"]);
    assert_eq!(code, 1);
    assert!(err.contains("invalid_command"), "{err}");
    let (code, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(code, 0, "{out}");
    // Damage the index behind the engine's back: verify reports, reindex repairs.
    {
        let db = redb::Database::open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let def = redb::TableDefinition::<(u8, &str), &[u8]>::new("side");
            let mut t = tx.open_table(def).unwrap();
            t.remove((narad_store::SideSpace::SessionIndex.id(), "s-open"))
                .unwrap();
        }
        tx.commit().unwrap();
    }
    let (code, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("s-open: session index differs"), "{out}");
    let (code, out, _) = narad(&["reindex", "--store", &url]);
    assert_eq!(code, 0);
    assert!(
        out.contains("s-open: reindexed") && out.contains("1 reindexed"),
        "{out}"
    );
    let (code, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(code, 0, "{out}");
    let (_, out, _) = narad(&["sessions", "--store", &url, "--status", "running"]);
    assert!(out.starts_with("s-open\t"), "{out}");
}

#[test]
fn prune_lists_with_dry_run_keeps_open_work_and_deletes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("a.db").display());
    fill(&url);
    // Everything is older than one second by the time it runs.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, out, err) = narad(&["prune", "--store", &url, "--older-than", "1s", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("would delete s-done") && out.contains("kept s-open"),
        "{out}"
    );
    let (_, out, _) = narad(&["sessions", "--store", &url]);
    assert_eq!(out.lines().count(), 2, "{out}");
    let (code, out, _) = narad(&["prune", "--store", &url, "--older-than", "1s"]);
    assert_eq!(code, 0);
    assert!(out.contains("1 deleted, 1 kept with open work"), "{out}");
    let (_, out, _) = narad(&["sessions", "--store", &url]);
    assert!(
        out.starts_with("s-open\t") && out.lines().count() == 1,
        "{out}"
    );
    let (code, _, err) = narad(&["prune", "--store", &url, "--older-than", "soon"]);
    assert_eq!(code, 1);
    assert!(err.contains("invalid_command"), "{err}");
    // Idle since before 1970: nothing is, and the cut-off, which the
    // engine cannot write as a timestamp, used to panic.
    let (code, out, err) = narad(&["prune", "--store", &url, "--older-than", "1000000000000h"]);
    assert_eq!(
        (code, out.trim()),
        (0, "0 deleted, 0 kept with open work"),
        "{err}"
    );
}

/// An open interrupt whose index entry is gone (what an import by an
/// older build left): verify names it, reindex adds the entry, and
/// resolve then finds the interrupt by its id.
#[test]
fn verify_and_reindex_cover_the_interrupt_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.redb");
    let url = format!("redb:{}", path.display());
    let run = fill(&url);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let iid = rt.block_on(async {
        let e = Engine::new(narad_stores::open(&url).await.unwrap());
        let ask = narad_engine::Interrupt::on_run(&run, "approval", ["approve"]);
        let (iid, _) = e
            .request_interrupt(&Principal::new("t"), "s-open", ask)
            .await
            .unwrap();
        e.store().close().await.unwrap();
        iid
    });
    {
        let db = redb::Database::open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let def = redb::TableDefinition::<(u8, &str), &[u8]>::new("side");
            let mut t = tx.open_table(def).unwrap();
            let key = (narad_store::SideSpace::Interrupt.id(), iid.as_str());
            assert!(t.remove(key).unwrap().is_some());
        }
        tx.commit().unwrap();
    }
    let (code, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(code, 1, "{out}");
    let want = "s-open: interrupt index lacks 1 of its interrupts (narad reindex repairs it)";
    assert!(out.contains(want), "{out}");
    assert!(out.contains("damaged (interrupt_index: 1)"), "{out}");
    let (code, out, _) = narad(&["reindex", "--store", &url]);
    assert_eq!(
        (code, out.as_str()),
        (0, "s-open: reindexed\n2 sessions checked, 1 reindexed\n")
    );
    let (code, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = narad(&["resolve", "--store", &url, &iid, "approve"]);
    assert_eq!(code, 0, "{out}{err}");
}
