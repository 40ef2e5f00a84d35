//! Quickstart: an agent session driven through the engine on the embedded
//! default store (a redb file), stopped and reopened mid-way, checked, and
//! printed as JSONL.
//!
//! `cargo run --example quickstart [PATH]` — the store file defaults to a
//! fresh one in the system's temporary directory. No server is needed.

use narad_core::checker::Checker;
use narad_engine::{
    Engine, EngineError, Interrupt, InterruptScope, NewSession, Principal, Resolve, StartRun,
    Started, Terminal, ToolOutcome,
};
use narad_store::Store;
use narad_store_redb::RedbStore;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), EngineError> {
    let given = std::env::args().nth(1).map(std::path::PathBuf::from);
    let temporary = given.is_none();
    let path = given.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("narad-quickstart-{}.redb", std::process::id()))
    });
    let me = Principal::new("quickstart");

    // 1. Open the embedded store and the engine; start a session and a run.
    let engine = Engine::new(RedbStore::open(&path).await?);
    let sid = engine.create_session(&me, NewSession::default()).await?;
    engine
        .message(&me, &sid, json!("Find the Narad spec"))
        .await?;
    let Started::Running(run) = engine.start_run(&me, &sid, StartRun::default()).await? else {
        return Err(EngineError::InvalidCommand("the slot was busy".into()));
    };
    let tool = engine
        .start_tool_call(&me, &sid, &run, "search", json!({"query": "narad v1"}))
        .await?;

    // 2. The engine refuses what would break the protocol, writing nothing:
    //    a run cannot finish while its tool call is open.
    let refused = engine
        .end_run(
            &me,
            &sid,
            &run,
            Terminal::Finished {
                usage: None,
                artifact_ids: vec![],
            },
        )
        .await;
    match refused {
        Err(e) => eprintln!("refused as expected: {} ({e})", e.code()),
        Ok(()) => {
            return Err(EngineError::InvalidCommand(
                "a terminal with open work was accepted".into(),
            ))
        }
    }

    // 3. Stop the process mid-way: close the store, open a new engine on the
    //    same file, and carry on where the journal left off.
    engine.store().close().await?;
    drop(engine);
    let engine = Engine::new(RedbStore::open(&path).await?);
    engine
        .finish_tool_call(
            &me,
            &sid,
            &tool,
            ToolOutcome::success(json!({"matches": 1})),
        )
        .await?;
    let (interrupt, _) = engine
        .request_interrupt(
            &me,
            &sid,
            Interrupt {
                scope: InterruptScope::Run(run.clone()),
                kind: "approval".into(),
                actions: vec!["approve".into(), "deny".into()],
                input: None,
                expires_at: None,
            },
        )
        .await?;
    // resolve-interrupt needs only the interrupt id.
    engine
        .resolve_interrupt(
            &me,
            Resolve {
                interrupt_id: interrupt,
                decision: "approve".into(),
                reason: None,
                expected_revision: None,
                members: None,
            },
        )
        .await?;
    engine
        .end_run(
            &me,
            &sid,
            &run,
            Terminal::Finished {
                usage: Some(json!({"totalTokens": 42})),
                artifact_ids: vec![],
            },
        )
        .await?;

    // 4. Read the durable journal back, check it, print it as JSONL.
    let page = engine.store().read_session(&sid, 0, usize::MAX).await?;
    let mut checker = Checker::default();
    for ev in &page.events {
        checker
            .push_bytes(&ev.bytes)
            .map_err(|r| EngineError::InvalidCommand(r.to_string()))?;
        println!("{}", String::from_utf8_lossy(&ev.bytes));
    }
    eprintln!(
        "{} events in {}, accepted by the checker; run is {:?}",
        page.events.len(),
        path.display(),
        checker.run_state(&sid, &run)
    );
    engine.store().close().await?;
    if temporary {
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}
