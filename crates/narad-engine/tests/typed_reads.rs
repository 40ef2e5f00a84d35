//! Typed reads: the typed state equals `state_json` on every project
//! trace; the transcript view joins reasoning; listing, history and stop
//! answer consistently.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{engine, me, session};
use narad_core::checker::Checker;
use narad_engine::{
    EventScope, NewSession, SessionState, StartRun, StopTarget, TextOptions, ToolCallState,
    ARGS_SUMMARY_MAX,
};
use narad_store::HistoryQuery;
use serde_json::Value;

/// The keys the typed state adds to `state_json`'s layout.
fn without_details(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    o.remove("interrupts");
    o.remove("usage");
    for tool in o["tools"].as_object_mut().unwrap().values_mut() {
        let t = tool.as_object_mut().unwrap();
        for k in ["name", "argsSummary", "result"] {
            t.remove(k);
        }
    }
    v
}

/// What the journal says of the details, computed here independently of
/// the engine's fold: tool names and outcomes, interrupt kinds and
/// expiries, and the session's prompt-token total.
fn check_details(name: &str, sid: &str, typed: &SessionState, lines: &[Value]) -> usize {
    let mut checked = 0;
    let mine = || lines.iter().filter(|v| v["sessionId"] == sid);
    for (id, call) in &typed.tools {
        let started = mine()
            .find(|v| v["type"] == "tool.call.started" && v["toolCallId"] == id.as_str())
            .unwrap_or_else(|| panic!("{name}: {sid}: no start for {id}"));
        assert_eq!(
            call.name.as_deref(),
            started["toolName"].as_str(),
            "{name}: {id}"
        );
        let full = started["args"].to_string();
        let summary = call.args_summary.as_deref().unwrap();
        match summary.strip_suffix('…') {
            Some(cut) if full.len() > ARGS_SUMMARY_MAX => assert!(full.starts_with(cut)),
            _ => assert_eq!(summary, full, "{name}: {id}"),
        }
        let finished =
            mine().find(|v| v["type"] == "tool.call.finished" && v["toolCallId"] == id.as_str());
        assert_eq!(
            call.result
                .as_ref()
                .map(|r| serde_json::to_value(r.outcome).unwrap()),
            finished.map(|f| f["outcome"].clone()),
            "{name}: {id}"
        );
        assert_eq!(call.result.is_some(), call.state == ToolCallState::Finished);
        checked += 1;
    }
    for (id, open) in &typed.interrupts {
        let req = mine()
            .find(|v| v["type"] == "interrupt.requested" && v["interruptId"] == id.as_str())
            .unwrap_or_else(|| panic!("{name}: {sid}: no request for {id}"));
        assert_eq!(open.kind.as_deref(), req["kind"].as_str(), "{name}: {id}");
        assert_eq!(open.title.as_deref(), req["title"].as_str(), "{name}: {id}");
        assert_eq!(
            open.expires_at.as_deref(),
            req["expiresAt"].as_str(),
            "{name}: {id}"
        );
        checked += 1;
    }
    let terminals = || {
        mine().filter(|v| {
            matches!(
                v["type"].as_str(),
                Some("run.finished" | "run.error" | "run.cancelled")
            ) && v["usage"].is_object()
        })
    };
    let prompt: Vec<u64> = terminals()
        .filter_map(|v| v["usage"]["promptTokens"].as_u64())
        .collect();
    let want = (!prompt.is_empty()).then(|| prompt.iter().sum::<u64>());
    assert_eq!(typed.usage.session.prompt_tokens, want, "{name}: {sid}");
    checked + terminals().count()
}

#[test]
fn typed_state_equals_state_json_on_every_project_trace() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../conformance/traces");
    let (mut compared, mut details) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut c = Checker::default();
        let mut sessions = std::collections::BTreeSet::new();
        let mut accepted: Vec<&str> = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if c.push_bytes(line.as_bytes()).is_err() {
                break; // an invalid trace: compare the state before its refusal
            }
            accepted.push(line);
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                if let Some(s) = v["sessionId"].as_str() {
                    sessions.insert(s.to_owned());
                }
            }
        }
        let values: Vec<Value> = accepted
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        for sid in sessions {
            let Some(json) = c.state_json(&sid) else {
                continue;
            };
            let mut want: Value = serde_json::from_str(&json).unwrap();
            for k in ["pending", "graphs", "watch"] {
                want.as_object_mut().unwrap().remove(k);
            }
            let typed = SessionState::from_checker(&c, &sid)
                .unwrap_or_else(|| panic!("{name}: {sid} has no typed state"))
                .with_journal(&sid, accepted.iter().map(|l| l.as_bytes()));
            assert_eq!(
                without_details(serde_json::to_value(&typed).unwrap()),
                want,
                "{name}: {sid}"
            );
            details += check_details(&name, &sid, &typed, &values);
            compared += 1;
        }
    }
    assert!(compared > 20, "only {compared} sessions compared");
    assert!(details > 20, "only {details} details checked");
}

#[tokio::test]
async fn transcript_listing_history_and_stop_answer_consistently() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path()).await;
    let sid = session(&e).await;
    let empty = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    e.message(&me(), &sid, "hello").await.unwrap();
    let run = e.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let run = run.run_id().to_owned();
    let reply = e
        .start_text(
            &me(),
            &sid,
            EventScope::Run(run.clone()),
            TextOptions::default(),
        )
        .await
        .unwrap();
    let r = reply.reasoning().await.unwrap();
    r.delta("greet").await.unwrap();
    r.complete().await.unwrap();
    reply.delta("hi").await.unwrap();
    reply.complete().await.unwrap();
    let state = e.state(&me(), &sid).await.unwrap();
    let view = state.transcript_view(true);
    assert_eq!(view.len(), 2);
    assert_eq!(
        (view[0].role.as_str(), view[0].text.as_str()),
        ("user", "hello")
    );
    assert_eq!(view[1].reasoning, ["greet"]);
    assert!(state.transcript_view(false)[1].reasoning.is_empty());
    assert_eq!(state.tree(&run).len(), 1);
    assert_eq!(
        state.runs[&run].state,
        narad_core::checker::RunState::Running
    );

    // Listing includes the session with no events.
    let all = e.list_sessions(&me(), None, 10).await.unwrap();
    assert!(all.contains(&empty) && all.contains(&sid), "{all:?}");
    assert_eq!(e.list_sessions(&me(), None, 1).await.unwrap().len(), 1);
    assert_eq!(
        e.list_sessions(&me(), None, 0).await.unwrap_err().code(),
        "invalid_limit"
    );
    // History: unknown session and a zero limit are refused.
    let q = HistoryQuery::default();
    assert_eq!(
        e.history(&me(), "nope", &q).await.unwrap_err().code(),
        "unknown_session"
    );
    let zero = HistoryQuery {
        limit: 0,
        ..HistoryQuery::default()
    };
    assert_eq!(
        e.history(&me(), &sid, &zero).await.unwrap_err().code(),
        "invalid_limit"
    );
    // Stop with nothing running says so.
    e.stop(&me(), &sid, StopTarget::ActiveRoot).await.unwrap();
    let err = e
        .stop(&me(), &sid, StopTarget::ActiveRoot)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "nothing_running");
    assert!(err.to_string().contains("nothing is running"));
    e.close().await.unwrap();
}

#[tokio::test]
async fn attach_yields_parsed_records_with_their_exact_bytes() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path()).await;
    let sid = session(&e).await;
    let mut live = e.attach(&me(), &sid).await.unwrap().follow;
    e.message(&me(), &sid, "hello").await.unwrap();
    let item = live.next_item().await.unwrap().unwrap();
    assert_eq!(item.record.envelope.session_sequence, 1);
    assert_eq!(item.record.wire.bytes(), &item.event.bytes[..]);
    let stored = common::journal(&e, &sid).await;
    assert_eq!(&item.event.bytes[..], &stored[0][..]);
}

/// Tool calls, an open interrupt and usage, read back typed through
/// `Engine::state` on any store.
async fn details_through_state<S: narad_store::Store + 'static>(store: S) {
    use narad_engine::{Interrupt, Outcome, Resolve, Terminal, ToolOutcome, Usage};
    use std::time::{Duration, UNIX_EPOCH};
    let e = narad_engine::Engine::with_host(
        store,
        std::sync::Arc::new(narad_engine::ManualClock::at_unix(1_780_000_000)),
        std::sync::Arc::new(narad_engine::SequentialIds::default()),
        std::sync::Arc::new(narad_engine::AllowAll),
        narad_engine::EngineConfig::default(),
    );
    let sid = session(&e).await;
    let run = e.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let run = run.run_id().to_owned();
    let search = e
        .start_tool_call(
            &me(),
            &sid,
            &run,
            "search",
            serde_json::json!({"q": "rust"}),
        )
        .await
        .unwrap();
    e.finish_tool_call(&me(), &sid, &search, ToolOutcome::success("ok".into()))
        .await
        .unwrap();
    let long = "x".repeat(300);
    let fetch = e
        .start_tool_call(&me(), &sid, &run, "fetch", serde_json::json!({"url": long}))
        .await
        .unwrap();
    let state = e.state(&me(), &sid).await.unwrap();
    let open = &state.tools[&fetch];
    assert_eq!(open.name.as_deref(), Some("fetch"));
    assert!(open.result.is_none());
    let summary = open.args_summary.as_deref().unwrap();
    assert!(summary.starts_with(r#"{"url":"xxx"#) && summary.ends_with('…'));
    e.finish_tool_call(
        &me(),
        &sid,
        &fetch,
        ToolOutcome::error("not_found", "No such page."),
    )
    .await
    .unwrap();

    let expiry = UNIX_EPOCH + Duration::from_secs(1_780_003_600);
    let (iid, _) = e
        .request_interrupt(
            &me(),
            &sid,
            Interrupt::on_run(&run, "approval", ["approve", "deny"])
                .title("Send it?")
                .expires_at(expiry),
        )
        .await
        .unwrap();
    let state = e.state(&me(), &sid).await.unwrap();
    assert_eq!(state.tools[&search].name.as_deref(), Some("search"));
    assert_eq!(
        state.tools[&search].result.as_ref().map(|r| r.outcome),
        Some(Outcome::Success)
    );
    let failed = state.tools[&fetch].result.as_ref().unwrap();
    assert_eq!(
        (
            failed.outcome,
            failed.code.as_deref(),
            failed.message.as_deref()
        ),
        (Outcome::Error, Some("not_found"), Some("No such page."))
    );
    let open = state.open_interrupts();
    assert_eq!(open.len(), 1);
    let (id, info) = open[0];
    assert_eq!(id, iid);
    assert_eq!(info.scope, narad_engine::InterruptScope::Run(run.clone()));
    assert_eq!(info.kind.as_deref(), Some("approval"));
    assert_eq!(info.title.as_deref(), Some("Send it?"));
    assert_eq!(info.actions, ["approve", "deny"]);
    assert_eq!(info.expires_at.as_deref(), Some("2026-05-28T21:26:40.000Z"));
    // Where they overlap, the typed state is `state_json`.
    let json: Value = serde_json::from_str(&e.state_json(&me(), &sid).await.unwrap()).unwrap();
    let mut want = json;
    for k in ["pending", "graphs", "watch"] {
        want.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(without_details(serde_json::to_value(&state).unwrap()), want);

    e.resolve_interrupt(&me(), Resolve::new(&iid, "approve"))
        .await
        .unwrap();
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::finished_with(Usage::tokens(10, 5).elapsed_ms(100).with("cachedTokens", 2)),
    )
    .await
    .unwrap();
    let second = e.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let second = second.run_id().to_owned();
    e.end_run(
        &me(),
        &sid,
        &second,
        Terminal::finished_with(Usage::tokens(1, 2)),
    )
    .await
    .unwrap();
    let state = e.state(&me(), &sid).await.unwrap();
    assert!(state.open_interrupts().is_empty());
    let u = &state.usage;
    assert_eq!(
        (
            u.session.prompt_tokens,
            u.session.completion_tokens,
            u.session.total_tokens
        ),
        (Some(11), Some(7), Some(18))
    );
    assert_eq!(u.session.elapsed_ms, Some(100));
    assert!(u.session.extra.is_empty(), "extras are not added up");
    assert_eq!(u.runs[&run].total_tokens, Some(15));
    assert_eq!(u.runs[&second].total_tokens, Some(3));
    // The reads above folded incrementally from the engine's cache; a fold
    // of the whole journal from scratch gives the same state.
    let lines = common::journal(&e, &sid).await;
    let fresh: SessionState =
        serde_json::from_str::<SessionState>(&e.state_json(&me(), &sid).await.unwrap())
            .unwrap()
            .with_journal(&sid, lines.iter().map(|b| &b[..]));
    assert_eq!(
        serde_json::to_value(&fresh).unwrap(),
        serde_json::to_value(&state).unwrap()
    );
    e.close().await.unwrap();
}

#[tokio::test]
async fn tool_interrupt_and_usage_details_read_typed_on_redb() {
    let d = tempfile::tempdir().unwrap();
    let s = narad_store_redb::RedbStore::open(d.path().join("a.redb"))
        .await
        .unwrap();
    details_through_state(s).await;
}

#[tokio::test]
async fn tool_interrupt_and_usage_details_read_typed_on_sqlite() {
    let d = tempfile::tempdir().unwrap();
    let s = narad_store_sqlite::SqliteStore::open(d.path().join("a.db"))
        .await
        .unwrap();
    details_through_state(s).await;
}

/// §9.2: reasoning of a turn whose final text lands on a later message id
/// (an approval resume) is kept, joined to that later message; reasoning
/// with no later message yet stands as an entry of its own.
#[tokio::test]
async fn reasoning_whose_message_never_appeared_is_kept_in_the_view() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path()).await;
    let sid = session(&e).await;
    e.message(&me(), &sid, "Book it").await.unwrap();
    let run = e.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let run = run.run_id().to_owned();
    let at = EventScope::run(&run);
    // Reasoning for an attempt (msg-a) whose text never starts.
    let r = e
        .start_reasoning(&me(), &sid, &at, None, Some("msg-a".into()))
        .await
        .unwrap();
    r.delta("check the fare").await.unwrap();
    r.complete().await.unwrap();
    let view = e.state(&me(), &sid).await.unwrap().transcript_view(true);
    let last = view.last().unwrap();
    assert_eq!(
        (last.message_id.as_str(), last.text.as_str()),
        ("msg-a", "")
    );
    assert_eq!(last.reasoning, ["check the fare"]);
    // The resumed delivery writes the final text on a later id.
    let t = e
        .start_text(
            &me(),
            &sid,
            &at,
            TextOptions {
                message_id: Some("msg-b".into()),
                ..TextOptions::default()
            },
        )
        .await
        .unwrap();
    t.delta("Booked.").await.unwrap();
    t.complete().await.unwrap();
    let view = e.state(&me(), &sid).await.unwrap().transcript_view(true);
    assert_eq!(view.len(), 2, "the user message and the reply: {view:?}");
    assert_eq!(view[1].message_id, "msg-b");
    assert_eq!(view[1].reasoning, ["check the fare"]);
    // Without reasoning, nothing of it shows.
    let plain = e.state(&me(), &sid).await.unwrap().transcript_view(false);
    assert!(plain.iter().all(|m| m.reasoning.is_empty()));
    assert_eq!(plain.len(), 2);
}
