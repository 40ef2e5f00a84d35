//! The Rust side of the binding benchmark (`examples/bench.py`): the same
//! command sequence the Python side runs, through the same `protocol`
//! layer and the same engine, without Python. Not public API.

use std::time::Instant;

use narad_engine::{EngineError, Principal};

use crate::protocol::{self, Eng, RunArgs};

/// Commands in one iteration of [`turn`].
pub const COMMANDS_PER_TURN: u64 = 8;

/// One agent turn on `sid`: message, run, tool call, three streamed-text
/// events, end. The same sequence as `bench.py`'s `turn`.
async fn turn(e: &Eng, p: &Principal, sid: &str) -> Result<(), EngineError> {
    protocol::message(e, p, sid, "\"what is the weather?\"").await?;
    let (_, run) = protocol::start_run(e, p, sid, RunArgs::default()).await?;
    let tool =
        protocol::start_tool_call(e, p, sid, &run, "weather", "{\"city\":\"Oslo\"}", false).await?;
    protocol::finish_tool_call(e, p, sid, &tool, "success", "{\"temp\":3}", None, None).await?;
    let mid = protocol::new_id("msg");
    protocol::text_started(e, p, sid, &run, &mid, "assistant").await?;
    protocol::text_delta(e, p, sid, &run, &mid, "It is 3 degrees.").await?;
    protocol::text_completed(e, p, sid, &run, &mid).await?;
    protocol::end_run(e, p, sid, &run, "finished", None, Vec::new(), None, None).await
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
        ids.push(protocol::create_session(&e, &p, None, None, None).await?);
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
