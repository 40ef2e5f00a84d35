//! Typed reads: the typed state equals `state_json` on every project
//! trace; the transcript view joins reasoning; listing, history and stop
//! answer consistently.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{engine, me, session};
use narad_core::checker::Checker;
use narad_engine::{EventScope, NewSession, SessionState, StartRun, StopTarget, TextOptions};
use narad_store::HistoryQuery;
use serde_json::Value;

#[test]
fn typed_state_equals_state_json_on_every_project_trace() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../conformance/traces");
    let mut compared = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut c = Checker::default();
        let mut sessions = std::collections::BTreeSet::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if c.push_bytes(line.as_bytes()).is_err() {
                break; // an invalid trace: compare the state before its refusal
            }
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                if let Some(s) = v["sessionId"].as_str() {
                    sessions.insert(s.to_owned());
                }
            }
        }
        for sid in sessions {
            let Some(json) = c.state_json(&sid) else {
                continue;
            };
            let mut want: Value = serde_json::from_str(&json).unwrap();
            for k in ["pending", "graphs", "watch"] {
                want.as_object_mut().unwrap().remove(k);
            }
            let typed = SessionState::from_checker(&c, &sid)
                .unwrap_or_else(|| panic!("{name}: {sid} has no typed state"));
            assert_eq!(serde_json::to_value(&typed).unwrap(), want, "{name}: {sid}");
            compared += 1;
        }
    }
    assert!(compared > 20, "only {compared} sessions compared");
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
