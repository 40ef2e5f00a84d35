//! The typed commands: streamed text and reasoning handles, progress,
//! documents, extensions and usage, against the untyped `append` path
//! on real redb files; and the refusals of `append` that name the fix.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_valid, engine, journal, me, session};
use narad_engine::{
    DocumentKind, EngineError, EventScope, Patch, Progress, ProgressStatus, StartRun, StopTarget,
    Terminal, TextOptions, ToolOutcome, Usage,
};
use serde_json::json;

#[tokio::test]
async fn a_streamed_reply_through_the_handle_is_the_journal_the_untyped_path_writes() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (engine(da.path()).await, engine(db.path()).await);
    let (sa, sb) = (session(&a).await, session(&b).await);
    let ra = a.start_run(&me(), &sa, StartRun::new()).await.unwrap();
    let rb = b.start_run(&me(), &sb, StartRun::new()).await.unwrap();
    let (ra, rb) = (ra.run_id().to_owned(), rb.run_id().to_owned());
    let words: Vec<String> = (0..25).map(|i| format!("w{i} ")).collect();

    // Typed: the scope is given once, the ids are kept by the handles.
    let opts = TextOptions {
        message_id: Some("m1".into()),
        ..TextOptions::default()
    };
    let reply = a
        .start_text(&me(), &sa, EventScope::Run(ra.clone()), opts)
        .await
        .unwrap();
    let thinking = reply.reasoning().await.unwrap();
    assert_eq!(thinking.reasoning_id(), "reasoning:m1");
    thinking.delta("think").await.unwrap();
    thinking.complete().await.unwrap();
    for w in &words {
        reply.delta(w).await.unwrap();
    }
    reply.complete().await.unwrap();

    // Untyped: every field by hand.
    let at = || EventScope::Run(rb.clone());
    let ap = |ty: &'static str, body: serde_json::Value| {
        let b = b.clone();
        let sb = sb.clone();
        let at = at();
        async move { b.append(&me(), &sb, ty, at, body).await.unwrap() }
    };
    ap(
        "message.text.started",
        json!({"messageId": "m1", "role": "assistant", "messageScope": "run"}),
    )
    .await;
    let rid = json!({"reasoningId": "reasoning:m1", "messageId": "m1"});
    ap("reasoning.started", rid.clone()).await;
    ap(
        "reasoning.delta",
        json!({"reasoningId": "reasoning:m1", "messageId": "m1", "delta": "think"}),
    )
    .await;
    ap("reasoning.completed", rid).await;
    for w in &words {
        ap("message.text.delta", json!({"messageId": "m1", "delta": w})).await;
    }
    ap("message.text.completed", json!({"messageId": "m1"})).await;

    let (ja, jb) = (journal(&a, &sa).await, journal(&b, &sb).await);
    assert_eq!(ja.len(), 1 + 1 + 3 + 25 + 1);
    assert_eq!(ja, jb, "the handle writes exactly the untyped journal");
    assert_valid(&a, &sa).await;
    // The transcript joins the reasoning to the reply.
    let state: serde_json::Value =
        serde_json::from_str(&a.state_json(&me(), &sa).await.unwrap()).unwrap();
    let text: String = words.concat();
    assert_eq!(state["transcript"]["messages"][0]["content"], text.as_str());
    assert_eq!(state["transcript"]["reasoning"][0]["messageId"], "m1");
}

#[tokio::test]
async fn progress_documents_extensions_and_usage_are_typed() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path()).await;
    let sid = session(&e).await;
    let run = e.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let run = run.run_id();
    let id = e
        .record_progress(&me(), &sid, run, Progress::new("agent.phase", "Planning"))
        .await
        .unwrap();
    e.record_progress(
        &me(),
        &sid,
        run,
        Progress::new("agent.phase", "Planned")
            .id(&id)
            .status(ProgressStatus::Completed)
            .detail("2 steps"),
    )
    .await
    .unwrap();
    let scope = EventScope::Run(run.to_owned());
    let r1 = e
        .put_document(
            &me(),
            &sid,
            DocumentKind::State,
            scope.clone(),
            json!({"step": 1, "items": []}),
        )
        .await
        .unwrap();
    let r2 = e
        .patch_document(
            &me(),
            &sid,
            DocumentKind::State,
            scope.clone(),
            Patch::new().replace("/step", 2).add("/items/-", "a"),
        )
        .await
        .unwrap();
    assert_eq!((r1, r2), (1, 2));
    let ui = e
        .patch_document(
            &me(),
            &sid,
            DocumentKind::Ui,
            EventScope::Session,
            Patch::new().add("/open", true),
        )
        .await
        .unwrap();
    assert_eq!(ui, 1);
    // A patch that does not apply appends nothing.
    let before = journal(&e, &sid).await.len();
    let err = e
        .patch_document(
            &me(),
            &sid,
            DocumentKind::State,
            scope.clone(),
            Patch::new().remove("/missing"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "patch_failed");
    assert_eq!(journal(&e, &sid).await.len(), before);
    e.record_custom(&me(), &sid, scope.clone(), "acme.note", json!({"k": 1}))
        .await
        .unwrap();
    e.record_raw(&me(), &sid, EventScope::Session, "text/plain", "aGk=")
        .await
        .unwrap();
    // snake_case usage is refused; typed usage is journaled camelCase.
    let bad = Terminal::Finished {
        usage: Some(json!({"input_tokens": 3})),
        artifact_ids: vec![],
    };
    let err = e.end_run(&me(), &sid, run, bad).await.unwrap_err();
    assert!(err.to_string().contains("`inputTokens`"), "{err}");
    e.end_run(
        &me(),
        &sid,
        run,
        Terminal::finished_with(Usage::tokens(10, 5).elapsed_ms(40).with("cachedTokens", 2)),
    )
    .await
    .unwrap();
    let last: serde_json::Value =
        serde_json::from_slice(journal(&e, &sid).await.last().unwrap()).unwrap();
    assert_eq!(
        last["usage"],
        json!({"promptTokens": 10, "completionTokens": 5, "totalTokens": 15,
               "elapsedMs": 40, "cachedTokens": 2})
    );
    let state: serde_json::Value =
        serde_json::from_str(&e.state_json(&me(), &sid).await.unwrap()).unwrap();
    let doc = &state["documents"]["documents"][format!("state:run:{run}")];
    assert_eq!(doc["value"], json!({"step": 2, "items": ["a"]}));
    assert_valid(&e, &sid).await;
}

#[tokio::test]
async fn append_refusals_name_the_fix_and_append_nothing() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path()).await;
    let sid = session(&e).await;
    let run = e.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let run = run.run_id().to_owned();
    let before = journal(&e, &sid).await.len();
    let cases = [
        (
            "run.finished",
            EventScope::Run(run.clone()),
            json!({}),
            "Engine::end_run",
        ),
        (
            "progress.recorded",
            EventScope::Session,
            json!({"progressId": "p", "category": "c", "label": "l", "status": "active", "privacy": "public"}),
            "pass EventScope::Run(run_id)",
        ),
        (
            "message.text.started",
            EventScope::Run(run.clone()),
            json!({"messageId": "m", "role": "assistant", "sessionId": "other"}),
            "`sessionId` contradicts",
        ),
        (
            "message.text.started",
            EventScope::Run(run.clone()),
            json!({"messageId": "m", "role": "assistant", "messageScope": "session"}),
            "`messageScope` contradicts",
        ),
        (
            "message.text.started",
            EventScope::Run(run.clone()),
            json!({"role": "assistant"}),
            "messageId",
        ),
    ];
    for (ty, scope, body, fix) in cases {
        let err = e.append(&me(), &sid, ty, scope, body).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains(fix), "{ty}: {text}");
        assert!(
            !text.starts_with(err.code()),
            "the message repeats the code: {text}"
        );
    }
    assert_eq!(journal(&e, &sid).await.len(), before);
    // The scope field is filled from the scope: given once.
    e.append(
        &me(),
        &sid,
        "message.text.started",
        EventScope::Run(run.clone()),
        json!({"messageId": "m", "role": "assistant"}),
    )
    .await
    .unwrap();
    assert_valid(&e, &sid).await;
}

#[tokio::test]
async fn a_retried_message_with_its_id_appends_nothing_and_a_changed_one_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let e = engine(d.path()).await;
    let sid = session(&e).await;
    let id = e
        .message_with_id(&me(), &sid, "turn-1", "hello")
        .await
        .unwrap();
    let after_first = journal(&e, &sid).await;
    let again = e
        .message_with_id(&me(), &sid, "turn-1", "hello")
        .await
        .unwrap();
    assert_eq!(again, id);
    assert_eq!(journal(&e, &sid).await, after_first, "a retry appended");
    // After a restart (a cold engine on the same file) too: the journal is the record.
    drop(e);
    let e = engine(d.path()).await;
    e.message_with_id(&me(), &sid, "turn-1", "hello")
        .await
        .unwrap();
    let err = e
        .message_with_id(&me(), &sid, "turn-1", "goodbye")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict");
    assert!(
        !err.to_string().contains("goodbye"),
        "the message echoes content"
    );
    assert_eq!(journal(&e, &sid).await, after_first);
}

/// A command about an id the session (or store) does not hold names that
/// id, escaped onto one line, with the stable code.
#[tokio::test]
async fn unknown_ids_are_named_in_their_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let sid = session(&e).await;
    let err = e.message(&me(), "s-none\nx", "hi").await.unwrap_err();
    assert_eq!(err.code(), "unknown_session");
    assert_eq!(err.to_string(), "no session `s-none\\nx` in this store");
    let err = e
        .finish_tool_call(&me(), &sid, "t-none", ToolOutcome::success(json!(1)))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        EngineError::UnknownToolCall {
            tool_call_id: "t-none".into()
        }
    );
    assert_eq!(err.to_string(), "no tool call `t-none` in this session");
    let err = e
        .stop(&me(), &sid, StopTarget::Run("r-none".into()))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "no run `r-none` in this session");
    let child = StartRun {
        parent_run_id: Some("r-parent".into()),
        ..StartRun::new()
    };
    let err = e.start_run(&me(), &sid, child).await.unwrap_err();
    assert_eq!(
        err,
        EngineError::UnknownRun {
            run_id: "r-parent".into()
        }
    );
    assert!(journal(&e, &sid).await.is_empty(), "nothing was appended");
}
