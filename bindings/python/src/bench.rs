//! The Rust side of the binding benchmark (`examples/bench.py`): the same
//! command sequence the Python side runs, on the same engine, as a Rust
//! host writes it (typed commands on tokio tasks). Not public API.

use std::time::Instant;

use narad_engine::{
    EngineError, EventScope, Principal, StartRun, Started, Terminal, TextOptions, ToolOutcome,
};
use serde_json::json;

use crate::protocol::Eng;

/// Commands in one iteration of [`turn`].
pub const COMMANDS_PER_TURN: u64 = 8;

/// One agent turn on `sid`: message, run, tool call, three streamed-text
/// events, end. The same sequence as `bench.py`'s `turn`.
async fn turn(e: &Eng, p: &Principal, sid: &str) -> Result<(), EngineError> {
    e.message(p, sid, "what is the weather?").await?;
    let run = match e.start_run(p, sid, StartRun::default()).await? {
        Started::Running(r) | Started::Queued(r) => r,
    };
    let tool = e
        .start_tool_call(p, sid, &run, "weather", json!({"city": "Oslo"}))
        .await?;
    e.finish_tool_call(p, sid, &tool, ToolOutcome::success(json!({"temp": 3})))
        .await?;
    let text = e
        .start_text(p, sid, EventScope::Run(run.clone()), TextOptions::default())
        .await?;
    text.delta("It is 3 degrees.").await?;
    text.complete().await?;
    e.end_run(p, sid, &run, Terminal::finished()).await
}

/// Runs `turns` turns on each of `sessions` fresh sessions concurrently;
/// returns `(commands, seconds)`.
pub async fn run(
    e: Eng,
    p: Principal,
    sessions: usize,
    turns: usize,
) -> Result<(u64, f64), EngineError> {
    let mut ids = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        ids.push(e.create_session(&p, Default::default()).await?);
    }
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(sessions);
    for sid in ids {
        let (e, p) = (e.clone(), p.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..turns {
                turn(&e, &p, &sid).await?;
            }
            Ok::<(), EngineError>(())
        }));
    }
    for t in tasks {
        t.await
            .map_err(|_| EngineError::InvalidCommand("a benchmark task failed".into()))??;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((COMMANDS_PER_TURN * (sessions * turns) as u64, secs))
}
