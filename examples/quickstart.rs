//! Quickstart: one agent session through the engine on the embedded default
//! store — a run with a backend tool call, an approval interrupt resolved,
//! streamed assistant text, progress and a nested run — stopped and
//! reopened mid-way, then a short summary: what happened, where the store
//! is, and the command that shows it.
//!
//! `cargo run --example quickstart [-- --store URL] [--jsonl]` — the store
//! defaults to `redb:narad-quickstart.redb` in the current directory (kept,
//! so `narad show` can read it); `--jsonl` prints the raw journal too. No
//! server needed.

use narad_engine::{
    Engine, EngineError, EventScope, Interrupt, InterruptScope, NewSession, Principal, Resolve,
    StartRun, Started, Terminal, ToolOutcome,
};
use narad_store::Store;
use serde_json::json;

fn run_id(s: Started) -> Result<String, EngineError> {
    match s {
        Started::Running(r) => Ok(r),
        Started::Queued(_) => Err(EngineError::InvalidCommand("the slot was busy".into())),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = narad_examples::store_url("redb:narad-quickstart.redb");
    let me = Principal::new("quickstart");

    // 1. The engine on the store; a session; the user's message; a run.
    let engine = Engine::new(narad_stores::open(&url).await?);
    let sid = engine.create_session(&me, NewSession::default()).await?;
    engine
        .message(&me, &sid, json!("Find the Narad spec and summarize it"))
        .await?;
    let run = run_id(engine.start_run(&me, &sid, StartRun::default()).await?)?;
    let planning = json!({"progressId": "plan", "category": "phase", "label": "Planning",
                          "status": "active", "privacy": "public"});
    engine
        .append(
            &me,
            &sid,
            "progress.recorded",
            EventScope::run(&run),
            planning,
        )
        .await?;
    let tool = engine
        .start_tool_call(&me, &sid, &run, "search", json!({"query": "narad v1"}))
        .await?;

    // 2. Refused commands write nothing: the run cannot end with work open.
    let early = Terminal::Finished {
        usage: None,
        artifact_ids: vec![],
    };
    let err = engine
        .end_run(&me, &sid, &run, early)
        .await
        .err()
        .ok_or("open work was accepted")?;
    eprintln!("refused as expected: {}", err.code());

    // 3. The process stops mid-way; a new engine continues the same journal.
    engine.store().close().await?;
    drop(engine);
    let engine = Engine::new(narad_stores::open(&url).await?);
    engine
        .finish_tool_call(&me, &sid, &tool, ToolOutcome::success(json!({"hits": 1})))
        .await?;

    // 4. A nested run does the reading.
    let child = run_id(
        engine
            .start_run(
                &me,
                &sid,
                StartRun {
                    parent_run_id: Some(run.clone()),
                    ..StartRun::default()
                },
            )
            .await?,
    )?;
    let read = engine
        .start_tool_call(&me, &sid, &child, "read", json!({"url": "spec"}))
        .await?;
    engine
        .finish_tool_call(&me, &sid, &read, ToolOutcome::success(json!("…")))
        .await?;
    engine
        .end_run(
            &me,
            &sid,
            &child,
            Terminal::Finished {
                usage: None,
                artifact_ids: vec![],
            },
        )
        .await?;

    // 5. Approval: the interrupt pauses the run; resolving it by id resumes it.
    let ask = Interrupt {
        scope: InterruptScope::run(&run),
        kind: "approval".into(),
        actions: vec!["approve".into(), "deny".into()],
        input: Some(json!({"question": "Publish the summary?"})),
        expires_at: None,
        title: None,
    };
    let (interrupt, _) = engine.request_interrupt(&me, &sid, ask).await?;
    let yes = Resolve {
        interrupt_id: interrupt,
        decision: "approve".into(),
        reason: None,
        expected_revision: None,
        members: None,
    };
    engine.resolve_interrupt(&me, yes).await?;

    // 6. Streamed assistant text, then the end of the run.
    let s = EventScope::Session;
    engine
        .append(
            &me,
            &sid,
            "message.text.started",
            s.clone(),
            json!({"messageId": "answer", "role": "assistant", "messageScope": "session"}),
        )
        .await?;
    for delta in ["Narad is ", "a protocol for ", "durable agent sessions."] {
        engine
            .append(
                &me,
                &sid,
                "message.text.delta",
                s.clone(),
                json!({"messageId": "answer", "delta": delta}),
            )
            .await?;
    }
    engine
        .append(
            &me,
            &sid,
            "message.text.completed",
            s,
            json!({"messageId": "answer"}),
        )
        .await?;
    let done = json!({"progressId": "plan", "category": "phase", "label": "Planning",
                      "status": "completed", "privacy": "public"});
    engine
        .append(&me, &sid, "progress.recorded", EventScope::run(&run), done)
        .await?;
    let usage = Some(json!({"promptTokens": 120, "completionTokens": 45, "totalTokens": 165}));
    engine
        .end_run(
            &me,
            &sid,
            &run,
            Terminal::Finished {
                usage,
                artifact_ids: vec![],
            },
        )
        .await?;

    // 7. The durable journal, checked; a short summary of what happened.
    let raw = std::env::args().any(|a| a == "--jsonl");
    let checker = if raw {
        narad_examples::print_journal(engine.store(), &sid).await?
    } else {
        narad_examples::check_journal(engine.store(), &sid).await?
    };
    let state = engine.state(&me, &sid).await?;
    let finished = state
        .runs
        .values()
        .filter(|r| r.state == narad_core::checker::RunState::Finished)
        .count();
    println!(
        "session {sid}: {} events, accepted by the checker",
        checker.session_head(&sid).unwrap_or(0)
    );
    println!(
        "  {} runs ({finished} finished), {} tool calls, {} transcript messages",
        state.runs.len(),
        state.tools.len(),
        state.transcript.messages.len()
    );
    println!("  stored in {url}");
    println!("  look inside: cargo run -p narad-cli -- show --store {url} --session {sid}");
    if !raw {
        println!("  (add `-- --jsonl` to print the raw journal)");
    }
    engine.close().await?;
    Ok(())
}
