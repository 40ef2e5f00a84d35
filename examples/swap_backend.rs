//! Swap the backend: the same agent code runs on SQLite, then the sessions
//! are copied to redb (what `narad migrate` does) and the agent carries on
//! there. Only the store URL changes.
//!
//! `cargo run --example swap_backend` (no `--store`: it runs on private
//! temporary stores, removed at exit)

use narad_engine::{Engine, NewSession, Principal, StartRun, Started, Terminal, ToolOutcome};
use narad_store::{Batch, SideSpace, SideWrite, Store};
use narad_stores::AnyStore;
use serde_json::json;

/// The agent: knows nothing of the backend.
async fn agent(
    engine: &Engine<AnyStore>,
    sid: &str,
    step: &str,
) -> Result<(), narad_engine::EngineError> {
    let me = Principal::new("agent");
    let Started::Running(run) = engine.start_run(&me, sid, StartRun::default()).await? else {
        return Err(narad_engine::EngineError::InvalidCommand(
            "slot busy".into(),
        ));
    };
    let tool = engine
        .start_tool_call(&me, sid, &run, "step", json!({"name": step}))
        .await?;
    engine
        .finish_tool_call(&me, sid, &tool, ToolOutcome::success(json!("ok")))
        .await?;
    engine
        .end_run(
            &me,
            sid,
            &run,
            Terminal::Finished {
                usage: None,
                artifact_ids: vec![],
            },
        )
        .await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    narad_examples::refuse_store_flag("swap_backend");
    let scratch = narad_examples::Scratch::new("narad-swap")?;
    let sqlite = format!("sqlite:{}", scratch.join("a.sqlite").display());
    let redb = format!("redb:{}", scratch.join("b.redb").display());

    let on_sqlite = Engine::new(narad_stores::open(&sqlite).await?);
    let sid = on_sqlite
        .create_session(&Principal::new("agent"), NewSession::default())
        .await?;
    agent(&on_sqlite, &sid, "first, on SQLite").await?;
    on_sqlite.store().close().await?;

    // Copy the journal byte for byte, with the session's host record.
    let (from, to) = (
        narad_stores::open(&sqlite).await?,
        narad_stores::open(&redb).await?,
    );
    let events = from.read_session(&sid, 0, usize::MAX).await?.events;
    let meta = from.side(SideSpace::Session, &sid).await?;
    let side = meta
        .map(|v| SideWrite {
            space: SideSpace::Session,
            key: sid.clone(),
            expect: narad_store::Expect::Absent,
            value: Some(v),
        })
        .into_iter()
        .collect();
    to.append(Batch {
        session_id: sid.clone(),
        expected_head: 0,
        events,
        side,
        ..Batch::default()
    })
    .await?;
    from.close().await?;

    let on_redb = Engine::new(to);
    agent(&on_redb, &sid, "second, on redb").await?;
    let checker = narad_examples::print_journal(on_redb.store(), &sid).await?;
    eprintln!(
        "{} events, one journal across two backends",
        checker.session_head(&sid).unwrap_or(0)
    );
    on_redb.store().close().await?;
    Ok(())
}
