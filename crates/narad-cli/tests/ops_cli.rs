//! The operator commands (`interrupts`, `resolve`, `stop`) as real
//! processes on real redb and SQLite files, against sessions set up through
//! the engine API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::narad;

use std::time::{Duration, SystemTime};

use narad_engine::{Engine, Interrupt, InterruptScope, NewSession, Principal, StartRun, Started};
use narad_store::Store;
use serde_json::Value;

struct Setup {
    /// Session with a run waiting on `run_interrupt`.
    waiting: String,
    run: String,
    run_interrupt: String,
    /// Session whose workflow waits on `wf_interrupt`.
    wf_session: String,
    wf_interrupt: String,
    /// Session with a plain running run (with an open tool call) to stop.
    busy: String,
    busy_run: String,
}

fn run_id(s: Started) -> String {
    match s {
        Started::Running(r) | Started::Queued(r) => r,
    }
}

/// Sessions with open interrupts and a running run, written through the
/// engine; the store is closed before any `narad` process opens it.
fn setup(url: &str) -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let e = Engine::new(narad_stores::open(url).await.unwrap());
        let me = Principal::new("test");
        let expires = SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800); // 2100
        let waiting = e.create_session(&me, NewSession::default()).await.unwrap();
        let run = run_id(
            e.start_run(&me, &waiting, StartRun::default())
                .await
                .unwrap(),
        );
        let (run_interrupt, _) = e
            .request_interrupt(
                &me,
                &waiting,
                Interrupt {
                    scope: InterruptScope::Run(run.clone()),
                    kind: "approval".into(),
                    actions: vec!["approve".into(), "deny".into()],
                    input: None,
                    expires_at: Some(expires.into()),
                    title: None,
                },
            )
            .await
            .unwrap();
        let wf_session = e.create_session(&me, NewSession::default()).await.unwrap();
        let wf = e
            .start_workflow(&me, &wf_session, None, None)
            .await
            .unwrap();
        let wf_run = StartRun {
            workflow_id: Some(wf.clone()),
            ..StartRun::default()
        };
        let wf_run = run_id(e.start_run(&me, &wf_session, wf_run).await.unwrap());
        e.end_run(
            &me,
            &wf_session,
            &wf_run,
            narad_engine::Terminal::Finished {
                usage: None,
                artifact_ids: Vec::new(),
            },
        )
        .await
        .unwrap();
        let (wf_interrupt, _) = e
            .request_interrupt(
                &me,
                &wf_session,
                Interrupt {
                    scope: InterruptScope::Workflow(wf),
                    kind: "review".into(),
                    actions: vec!["continue".into()],
                    input: None,
                    expires_at: None,
                    title: None,
                },
            )
            .await
            .unwrap();
        let busy = e.create_session(&me, NewSession::default()).await.unwrap();
        let busy_run = run_id(e.start_run(&me, &busy, StartRun::default()).await.unwrap());
        e.start_tool_call(&me, &busy, &busy_run, "search", serde_json::json!({}))
            .await
            .unwrap();
        e.store().close().await.unwrap();
        Setup {
            waiting,
            run,
            run_interrupt,
            wf_session,
            wf_interrupt,
            busy,
            busy_run,
        }
    })
}

fn operator_commands(url: &str) {
    let s = setup(url);

    // Plain: one tab-separated line per open interrupt.
    let (code, out, err) = narad(&["interrupts", "--store", url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    let line = out.lines().find(|l| l.contains(&s.run_interrupt)).unwrap();
    let fields: Vec<&str> = line.split('\t').collect();
    assert_eq!(fields[0], s.waiting);
    assert_eq!(fields[1], s.run_interrupt);
    assert_eq!(fields[2], format!("run:{}", s.run));
    assert_eq!(fields[3], "kind=approval");
    assert_eq!(fields[4], "title=-");
    assert_eq!(fields[5], "actions=approve,deny");
    assert!(
        fields[6].starts_with("expires=2100-01-01T00:00:00"),
        "{line}"
    );

    // JSON: one object per line, parsed back.
    let (code, out, err) = narad(&["interrupts", "--store", url, "--json"]);
    assert_eq!(code, 0, "{err}");
    let objects: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2, "{out}");
    let wf = objects
        .iter()
        .find(|o| o["interruptId"] == s.wf_interrupt.as_str())
        .unwrap();
    assert_eq!(wf["sessionId"], s.wf_session.as_str());
    assert_eq!(wf["scope"], "workflow");
    assert_eq!(wf["kind"], "review");
    assert_eq!(wf["actions"], serde_json::json!(["continue"]));
    assert_eq!(wf["expiresAt"], Value::Null);
    let run = objects
        .iter()
        .find(|o| o["interruptId"] == s.run_interrupt.as_str())
        .unwrap();
    assert_eq!(run["scopeId"], s.run.as_str());

    // A decision that was not offered is the checker's refusal, typed, and
    // changes nothing.
    let (code, _, err) = narad(&["resolve", "--store", url, &s.run_interrupt, "maybe"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("narad: decision_invalid: "), "{err}");

    // Resolve both; then none is open, and a second resolve is refused.
    let (code, out, err) = narad(&[
        "resolve",
        "--store",
        url,
        &s.run_interrupt,
        "approve",
        "--reason",
        "checked",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!("resolved {} in {} as approve", s.run_interrupt, s.waiting)
    );
    let (code, out, err) = narad(&[
        "resolve",
        "--store",
        url,
        &s.wf_interrupt,
        "continue",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["sessionId"], s.wf_session.as_str());
    let (code, out, err) = narad(&["interrupts", "--store", url]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let (code, out, err) = narad(&["resolve", "--store", url, &s.run_interrupt, "approve"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("narad: interrupt_already_resolved: "),
        "{err}"
    );
    assert!(
        err.contains("`continue`") || err.contains("decision"),
        "{err}"
    );
    let (code, _, err) = narad(&["resolve", "--store", url, "no-such-interrupt", "approve"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "narad: unknown_interrupt: no open interrupt `no-such-interrupt` in this store\n"
    );
    let (code, _, err) = narad(&["stop", "--store", url, "--session", "no-such-session"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "narad: unknown_session: no session `no-such-session` in this store\n"
    );

    // The resolved run resumed in the journal.
    let (_, journal, _) = narad(&["export", "--store", url, "--session", &s.waiting]);
    let types: Vec<String> = journal
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        &types[types.len() - 2..],
        ["interrupt.resolved", "run.resumed"]
    );

    // Stop: the open tool call closes and the run is cancelled.
    let (code, out, err) = narad(&[
        "stop",
        "--store",
        url,
        "--session",
        &s.busy,
        "--run",
        &s.busy_run,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), format!("stopped {} in {}", s.busy_run, s.busy));
    let (_, journal, _) = narad(&["export", "--store", url, "--session", &s.busy]);
    let last: Value = serde_json::from_str(journal.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run.cancelled");
    assert_eq!(last["runId"], s.busy_run.as_str());
    assert!(journal.contains("\"outcome\":\"cancelled\""), "{journal}");
    // Nothing left to stop: refused with the engine's code.
    let (code, _, err) = narad(&["stop", "--store", url, "--session", &s.busy]);
    assert_eq!(code, 1);
    assert!(err.starts_with("narad: nothing_running: "), "{err}");
    let (code, _, err) = narad(&["stop", "--store", url, "--session", "no-such-session"]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");

    // Every journal these commands wrote passes the checker.
    let (code, out, err) = narad(&["verify", "--store", url]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn operator_commands_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    operator_commands(&format!("redb:{}", dir.path().join("ops.redb").display()));
}

#[test]
fn operator_commands_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    operator_commands(&format!(
        "sqlite:{}",
        dir.path().join("ops.sqlite").display()
    ));
}

#[test]
fn operator_commands_do_not_create_a_missing_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.sqlite");
    let url = format!("sqlite:{}", path.display());
    for args in [
        vec!["interrupts", "--store", &url],
        vec!["resolve", "--store", &url, "i-1", "approve"],
        vec!["stop", "--store", &url, "--session", "s-1"],
    ] {
        let (code, _, err) = narad(&args);
        assert_ne!(code, 0, "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(!path.exists());
}
