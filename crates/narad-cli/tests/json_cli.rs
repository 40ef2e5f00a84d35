//! `--json` on `sessions`, `show` and `verify` (`interrupts --json` is in
//! ops_cli.rs): the real binary on a real redb store set up through the
//! engine, every line parsed back; and the human `show` and `verify`
//! wording (active execution in words, tool calls, interrupts, usage,
//! terminals, "1 session").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use narad_engine::{
    Engine, Interrupt, NewSession, Principal, StartRun, Started, Terminal, ToolOutcome,
};
use narad_store::Store;
use serde_json::{json, Value};

fn narad(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_narad"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn run_id(s: Started) -> String {
    match s {
        Started::Running(r) | Started::Queued(r) => r,
    }
}

struct Setup {
    /// An ended run: a finished tool call, a resolved interrupt, run.error with usage.
    ended: String,
    ended_run: String,
    /// A running run with an open tool call.
    busy: String,
    busy_run: String,
}

fn setup(url: &str) -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let e = Engine::new(narad_stores::open(url).await.unwrap());
        let me = Principal::new("test");
        let ended = e.create_session(&me, NewSession::default()).await.unwrap();
        let ended_run = run_id(e.start_run(&me, &ended, StartRun::default()).await.unwrap());
        let tool = e
            .start_tool_call(&me, &ended, &ended_run, "search", json!({"q": "weather"}))
            .await
            .unwrap();
        e.finish_tool_call(
            &me,
            &ended,
            &tool,
            ToolOutcome::success(json!({"ok": true})),
        )
        .await
        .unwrap();
        let (interrupt, _) = e
            .request_interrupt(
                &me,
                &ended,
                Interrupt::on_run(ended_run.clone(), "approval", ["approve", "deny"]),
            )
            .await
            .unwrap();
        e.resolve_interrupt(
            &me,
            narad_engine::Resolve {
                interrupt_id: interrupt,
                decision: "approve".into(),
                reason: None,
                expected_revision: None,
                members: None,
            },
        )
        .await
        .unwrap();
        e.end_run(
            &me,
            &ended,
            &ended_run,
            Terminal::Error {
                code: "model_timeout".into(),
                message: "the model did not answer".into(),
                usage: Some(json!({"promptTokens": 7, "completionTokens": 3, "totalTokens": 10})),
            },
        )
        .await
        .unwrap();
        let busy = e.create_session(&me, NewSession::default()).await.unwrap();
        let busy_run = run_id(e.start_run(&me, &busy, StartRun::default()).await.unwrap());
        e.start_tool_call(
            &me,
            &busy,
            &busy_run,
            "fetch",
            json!({"url": "x".repeat(100)}),
        )
        .await
        .unwrap();
        e.store().close().await.unwrap();
        Setup {
            ended,
            ended_run,
            busy,
            busy_run,
        }
    })
}

#[test]
fn json_outputs_parse_back_and_human_outputs_speak_words() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("s.redb").display());
    let s = setup(&url);

    // sessions --json: one object per session.
    let (code, out, err) = narad(&["sessions", "--store", &url, "--json"]);
    assert_eq!(code, 0, "{err}");
    let sessions = lines(&out);
    assert_eq!(sessions.len(), 2);
    let busy = sessions
        .iter()
        .find(|v| v["session"] == s.busy.as_str())
        .unwrap();
    assert_eq!(busy["active"], json!({"kind": "run", "id": s.busy_run}));
    assert_eq!(busy["head"], 2);
    assert!(busy["lastEventAt"].is_string());
    let ended = sessions
        .iter()
        .find(|v| v["session"] == s.ended.as_str())
        .unwrap();
    assert_eq!(ended["active"], Value::Null);

    // show --json: one object.
    let (code, out, err) = narad(&["show", "--store", &url, "--session", &s.ended, "--json"]);
    assert_eq!(code, 0, "{err}");
    let shown = lines(&out);
    assert_eq!(shown.len(), 1);
    let v = &shown[0];
    assert_eq!(v["active"], Value::Null);
    assert_eq!(v["toolCalls"][0]["name"], "search");
    assert_eq!(v["toolCalls"][0]["args"], r#"{"q":"weather"}"#);
    assert_eq!(v["toolCalls"][0]["outcome"], "success");
    assert_eq!(v["interrupts"][0]["kind"], "approval");
    assert_eq!(v["interrupts"][0]["decision"], "approve");
    assert_eq!(v["runs"][0]["id"], s.ended_run.as_str());
    assert_eq!(v["runs"][0]["state"], "error");
    assert_eq!(
        v["runs"][0]["terminal"],
        json!({"type": "run.error", "code": "model_timeout", "message": "the model did not answer"})
    );
    assert_eq!(
        v["usage"],
        json!({"promptTokens": 7, "completionTokens": 3, "totalTokens": 10})
    );

    // show, for people: words, not Rust debug form.
    let (code, out, _) = narad(&["show", "--store", &url, "--session", &s.busy]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("active execution: run {}\n", s.busy_run)),
        "{out}"
    );
    assert!(!out.contains("Run(\""), "{out}");
    assert!(out.contains("tool call"), "{out}");
    assert!(out.contains("fetch"), "{out}");
    assert!(
        out.contains("… -> open"),
        "a long args summary is cut: {out}"
    );
    let (_, out, _) = narad(&["show", "--store", &url, "--session", &s.ended]);
    assert!(out.contains("ended: run.error code=model_timeout"), "{out}");
    assert!(out.contains("interrupt "), "{out}");
    assert!(out.contains("approval"), "{out}");
    assert!(out.contains("decision=approve"), "{out}");
    assert!(
        out.contains("usage: 7 prompt, 3 completion, 10 total tokens"),
        "{out}"
    );

    // verify --json: a summary object.
    let (code, out, err) = narad(&["verify", "--store", &url, "--json"]);
    assert_eq!(code, 0, "{err}");
    let verified = lines(&out);
    assert_eq!(
        verified.last().unwrap(),
        &json!({"type": "summary", "sessions": 2, "valid": 2, "refused": 0, "damaged": 0, "damage": {}, "refusals": {}})
    );
    let (_, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(out, "2 sessions: 2 valid, 0 refused, 0 damaged\n");
}

#[test]
fn verify_says_one_session_and_counts_refusals_by_code() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.redb");
    let url = format!("redb:{}", path.display());
    // One session whose stored journal the checker refuses: tool calls
    // of a run that never started, written below the engine.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use narad_store::suite::{batch, event};
        let store = narad_stores::open(&url).await.unwrap();
        let mut evs = vec![event("bad", 1, "x")];
        evs.push(event("bad", 2, "x"));
        store.append(batch("bad", 0, evs)).await.unwrap();
        store.close().await.unwrap();
    });
    let (code, out, _) = narad(&["verify", "--store", &url]);
    assert_eq!(code, 1, "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("1 session: 0 valid, 1 refused"), "{out}");
    assert!(out.contains("refused by code: "), "{out}");
    let (_, out, _) = narad(&["verify", "--store", &url, "--json"]);
    let v = lines(&out);
    assert_eq!(v[0]["type"], "refused");
    let code = v[0]["code"].as_str().unwrap();
    assert_eq!(v.last().unwrap()["refusals"][code], 1);
}

#[test]
fn verbose_logs_go_to_stderr_and_stdout_stays_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("v.redb").display());
    let s = setup(&url);
    let (code, out, err) = narad(&[
        "-vv",
        "stop",
        "--store",
        &url,
        "--session",
        &s.busy,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(out.trim()).unwrap();
    assert!(err.contains("narad.command"), "{err}");
    assert!(
        err.contains("command=\"stop\"") || err.contains("command=stop"),
        "{err}"
    );
    assert!(!err.contains("weather") && !err.contains("xxxx"), "{err}");
    let (_, _, quiet) = narad(&["stop", "--store", &url, "--session", &s.busy]);
    assert!(!quiet.contains("narad.command"), "{quiet}");
}
