//! `narad bench append|replay|engine`: the store, core and engine
//! benchmarks against a store URL. Figures only.

use std::sync::Arc;
use std::time::Instant;

use narad_core::checker::Checker;
use narad_engine::{Engine, NewSession, Principal};
use narad_store::{bench, Store};
use narad_stores::AnyStore;
use serde_json::{json, Value};

use crate::store_cmds::{self, Outcome};

fn emit(json_out: bool, figures: Value) {
    if json_out {
        println!("{figures}");
        return;
    }
    if let Value::Object(m) = figures {
        for (k, v) in m {
            println!("{k}: {v}");
        }
    }
}

pub async fn append(store: AnyStore, full: bool, json_out: bool) -> Outcome {
    let store = Arc::new(store);
    let mut out = serde_json::Map::new();
    for (i, (label, sessions, size, per)) in bench::configurations(!full).into_iter().enumerate() {
        let f = bench::appends(
            Arc::clone(&store),
            sessions,
            size,
            per,
            &format!("bench{i}-{}", std::process::id()),
        )
        .await;
        out.insert(
            label.to_owned(),
            json!({"events_per_s": f.events_per_s.round(), "appends_per_s": f.appends_per_s.round(),
                   "p50_us": f.p50_us.round(), "p99_us": f.p99_us.round()}),
        );
    }
    let dir = std::env::temp_dir();
    out.insert(
        "raw_fdatasync_per_s".into(),
        json!(bench::raw_fdatasync(&dir, 1024, if full { 500 } else { 100 }).round()),
    );
    let _ = std::fs::remove_file(dir.join("raw-fsync"));
    emit(json_out, Value::Object(out));
    store.close().await.map_err(|e| e.to_string())?;
    Ok(0)
}

pub async fn replay(store: AnyStore, json_out: bool) -> Outcome {
    let sessions = store_cmds::all_sessions(&store).await?;
    let (mut events, mut refused) = (0u64, 0u64);
    let t = Instant::now();
    for sid in &sessions {
        let mut c = Checker::default();
        for ev in store_cmds::journal(&store, sid, 0).await? {
            events += 1;
            if c.push_bytes(&ev.bytes).is_err() {
                refused += 1;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    emit(
        json_out,
        json!({"sessions": sessions.len(), "events": events, "refused": refused,
               "seconds": (secs * 1000.0).round() / 1000.0,
               "events_per_s": (events as f64 / secs.max(1e-9)).round()}),
    );
    Ok(0)
}

pub async fn engine(store: AnyStore, full: bool, json_out: bool) -> Outcome {
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
    emit(json_out, Value::Object(out));
    e.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}
