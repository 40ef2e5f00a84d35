//! `narad bench append|replay|engine`: the store, core and engine
//! benchmarks against a store URL. Figures only. The benchmarks that
//! write (`append`, `engine`) refuse a store that holds sessions, so they
//! can never mix unchecked events into real data.

use std::sync::Arc;
use std::time::Instant;

use narad_core::checker::Checker;
use narad_engine::{Engine, NewSession, Principal};
use narad_store::{bench, Store};
use narad_stores::AnyStore;
use serde_json::{json, Value};

use crate::output::{out, OutputError};
use crate::store_cmds::{self, Outcome};

/// Why a benchmark did not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The store given to a writing benchmark holds sessions.
    #[error("the store holds sessions; a benchmark writes only to an empty store")]
    NotEmpty,
    /// A scratch file or directory could not be written.
    #[error("cannot write scratch data: {0}")]
    Scratch(std::io::ErrorKind),
    /// The store failed.
    #[error("{0}")]
    Store(String),
}

impl BenchError {
    /// A stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotEmpty => "bench_store_not_empty",
            Self::Scratch(_) => "bench_scratch_failed",
            Self::Store(_) => "bench_store_failed",
        }
    }
}

impl From<BenchError> for crate::output::Failure {
    fn from(e: BenchError) -> Self {
        Self::Message(format!("{}: {e}", e.code()))
    }
}

/// Refuses a store that holds any session.
pub async fn require_empty(store: &AnyStore) -> Result<(), BenchError> {
    let first = store
        .list_sessions(None, 1)
        .await
        .map_err(|e| BenchError::Store(e.to_string()))?;
    if first.is_empty() {
        Ok(())
    } else {
        Err(BenchError::NotEmpty)
    }
}

pub fn emit(json_out: bool, figures: Value) -> Result<(), OutputError> {
    if json_out {
        out!("{figures}");
        return Ok(());
    }
    if let Value::Object(m) = figures {
        for (k, v) in m {
            out!("{k}: {v}");
        }
    }
    Ok(())
}

pub async fn append(store: AnyStore, full: bool, json_out: bool) -> Outcome {
    require_empty(&store).await?;
    let scratch = tempfile::tempdir().map_err(|e| BenchError::Scratch(e.kind()))?;
    let store = Arc::new(store);
    let mut out = serde_json::Map::new();
    for (i, (label, sessions, size, per)) in bench::configurations(!full).into_iter().enumerate() {
        let f = bench::try_appends(
            Arc::clone(&store),
            sessions,
            size,
            per,
            &format!("bench{i}-{}", std::process::id()),
        )
        .await
        .map_err(|e| BenchError::Store(e.to_string()))?;
        out.insert(
            label.to_owned(),
            json!({"events_per_s": f.events_per_s.round(), "appends_per_s": f.appends_per_s.round(),
                   "p50_us": f.p50_us.round(), "p99_us": f.p99_us.round()}),
        );
    }
    let raw = bench::try_raw_fdatasync(scratch.path(), 1024, if full { 500 } else { 100 })
        .map_err(|e| BenchError::Scratch(e.kind()))?;
    out.insert("raw_fdatasync_per_s".into(), json!(raw.round()));
    emit(json_out, Value::Object(out))?;
    store.close().await.map_err(|e| e.to_string())?;
    Ok(0)
}

pub async fn replay(store: AnyStore, json_out: bool) -> Outcome {
    let sessions = store_cmds::all_sessions(&store).await?;
    let (mut events, mut refused) = (0u64, 0u64);
    let t = Instant::now();
    for sid in &sessions {
        let mut c = Checker::default();
        let mut pages = store_cmds::journal_pages(&store, sid, 0);
        while let Some(page) = pages.next().await.map_err(|e| e.to_string())? {
            for ev in page {
                events += 1;
                if c.push_bytes(&ev.bytes).is_err() {
                    refused += 1;
                }
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    emit(
        json_out,
        json!({"sessions": sessions.len(), "events": events, "refused": refused,
               "seconds": (secs * 1000.0).round() / 1000.0,
               "events_per_s": (events as f64 / secs.max(1e-9)).round()}),
    )?;
    Ok(0)
}

pub async fn engine(store: AnyStore, full: bool, json_out: bool) -> Outcome {
    require_empty(&store).await?;
    let e = Engine::new(store);
    let me = Principal::new("narad-bench");
    let mut out = serde_json::Map::new();
    for (label, sessions, per) in [
        ("1 session", 1usize, if full { 400 } else { 100 }),
        ("64 sessions", 64, if full { 20 } else { 5 }),
    ] {
        let mut sids = Vec::new();
        for _ in 0..sessions {
            sids.push(
                e.create_session(&me, NewSession::default())
                    .await
                    .map_err(|e| e.to_string())?,
            );
        }
        let t = Instant::now();
        let tasks: Vec<_> = sids
            .into_iter()
            .map(|sid| {
                let (e, me) = (e.clone(), me.clone());
                tokio::spawn(async move {
                    for i in 0..per {
                        e.message(&me, &sid, json!(format!("bench {i}"))).await?;
                    }
                    Ok::<(), narad_engine::EngineError>(())
                })
            })
            .collect();
        for t in tasks {
            t.await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
        }
        let rate = (sessions * per) as f64 / t.elapsed().as_secs_f64();
        out.insert(label.to_owned(), json!({"commands_per_s": rate.round()}));
    }
    emit(json_out, Value::Object(out))?;
    e.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}
