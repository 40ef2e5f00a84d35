//! Commands/s through the engine (durable appends) beside the store's raw
//! append rate measured in the same run, for 1 and 64 concurrent sessions,
//! on redb (snapshot size and cold hydrate: the `hydrate` bench). Last,
//! the same commands without and then with a `tracing` subscriber (every
//! span and event formatted, written to a sink), side by side.
//! Each round also times the store's raw appends with one side record
//! each, of the size of the engine's session-index entry (which every
//! engine batch writes in the same transaction as its events), to show how
//! much of the gap to the raw rate that write is.
//! `NARAD_BENCH_QUICK=1` shortens it. Figures only; nothing is asserted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::sync::Arc;
use std::time::Instant;

use narad_engine::{Engine, NewSession, Principal};
use narad_store::{bench, SideSpace, Store};
use narad_store_redb::RedbStore;
use narad_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use serde_json::json;

async fn commands<S: Store + 'static>(e: &Engine<S>, sessions: usize, per: usize) -> f64 {
    let me = Principal::new("bench");
    let mut sids = Vec::new();
    for _ in 0..sessions {
        sids.push(e.create_session(&me, NewSession::default()).await.unwrap());
    }
    let t = Instant::now();
    let tasks: Vec<_> = sids
        .into_iter()
        .map(|sid| {
            let e = e.clone();
            let me = me.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    e.message(&me, &sid, json!(format!("message {i}")))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (sessions * per) as f64 / t.elapsed().as_secs_f64()
}

/// One side of a round: the store's raw appends or the engine's commands,
/// `sessions` concurrent writers of `per` appends each.
async fn round(
    raw: &Arc<RedbStore>,
    e: &Engine<RedbStore>,
    engine: bool,
    sessions: usize,
    per: usize,
    name: &str,
) -> f64 {
    if engine {
        commands(e, sessions, per).await
    } else {
        bench::appends(Arc::clone(raw), sessions, 1, per as u64, name)
            .await
            .appends_per_s
    }
}

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let raw = Arc::new(RedbStore::open(dir.path().join("raw.redb")).await.unwrap());
        let e = Engine::new(
            RedbStore::open(dir.path().join("engine.redb"))
                .await
                .unwrap(),
        );
        // Interleaved rounds, alternating which side goes first, so that a
        // change in the machine's load falls on both sides; the median of
        // each side and of the per-round ratios is printed, no best-of.
        let rounds = if quick { 3 } else { 7 };
        // The size of one session-index entry as the engine writes it.
        let me = Principal::new("bench");
        let sid = e.create_session(&me, NewSession::default()).await.unwrap();
        e.message(&me, &sid, json!("sizing")).await.unwrap();
        let entry = e
            .store()
            .side(SideSpace::SessionIndex, &sid)
            .await
            .unwrap()
            .map_or(0, |b| b.len());
        // Each side of a round runs about half a second or more: at 64
        // sessions, 40 commands a session (0.1-0.4 s a side) let a few
        // slow fsyncs move one round's ratio from 0.72 to 1.00.
        let (per1, per64) = if quick { (100, 10) } else { (1000, 150) };
        for (sessions, per) in [(1usize, per1), (64, per64)] {
            let mut figures: [Vec<f64>; 2] = Default::default();
            let mut ratios = Vec::new();
            let (mut sided, mut sided_ratios) = (Vec::new(), Vec::new());
            for r in 0..rounds {
                let mut pair = [0.0; 2];
                for step in 0..2 {
                    let engine = (r + step) % 2 == 1;
                    let name = format!("raw-{sessions}-{r}");
                    pair[usize::from(engine)] =
                        round(&raw, &e, engine, sessions, per, &name).await;
                }
                figures[0].push(pair[0]);
                figures[1].push(pair[1]);
                ratios.push(pair[1] / pair[0]);
                let name = format!("side-{sessions}-{r}");
                let with_side =
                    bench::appends_with_side(Arc::clone(&raw), sessions, 1, per as u64, &name, entry)
                        .await
                        .appends_per_s;
                sided.push(with_side);
                sided_ratios.push(pair[1] / with_side);
            }
            let rounds_text: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            let [raw_rates, engine_rates] = &mut figures;
            println!(
                "engine {sessions:>2} session(s): {:>8.0} commands/s  store raw {:>8.0} appends/s  ratio {:.2} (median of {rounds} interleaved rounds: {})",
                median(engine_rates),
                median(raw_rates),
                median(&mut ratios),
                rounds_text.join(" ")
            );
            let rounds_text: Vec<String> = sided_ratios.iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "       store raw with a {entry}-byte side record per append (the engine's index entry): {:>8.0} appends/s  engine ratio to it {:.2} (rounds: {})",
                median(&mut sided),
                median(&mut sided_ratios),
                rounds_text.join(" ")
            );
        }
        raw.close().await.unwrap();
    });
    tracing_cost(dir.path(), if quick { 1 } else { 4 });
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Commands/s with no `tracing` subscriber and with a debug-level one
/// (every span formatted, written to a sink), alternating over five
/// rounds on a current-thread runtime so the subscriber (a thread-local
/// default) sees every engine span; the median of each side is printed.
/// On SQLite with `synchronous=NORMAL` (no fsync per commit), so the
/// engine's CPU, not the disk, sets the pace and a cost would show. Then
/// the instrumentation of one command alone, with no subscriber and no
/// recorder: the spans, records and metrics the command loop makes.
fn tracing_cost(dir: &std::path::Path, k: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let subscriber = || {
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_writer(std::io::sink)
            .finish()
    };
    let mut figures: [[Vec<f64>; 2]; 2] = Default::default();
    let no_fsync = SqliteOptions {
        synchronous: Synchronous::Normal,
        ..SqliteOptions::default()
    };
    for round in 0..5 {
        for (side, traced) in [false, true].into_iter().enumerate() {
            let path = dir.join(format!("tracing-{round}-{side}.sqlite"));
            let measure = || {
                rt.block_on(async {
                    let store = SqliteStore::open_with(&path, no_fsync.clone()).await;
                    let e = Engine::new(store.unwrap());
                    // Long enough (about a second a side) to average out noise.
                    let one = commands(&e, 1, 2_000 * k).await;
                    let many = commands(&e, 64, 50 * k).await;
                    e.store().close().await.unwrap();
                    (one, many)
                })
            };
            let (one, many) = if traced {
                tracing::subscriber::with_default(subscriber(), measure)
            } else {
                measure()
            };
            figures[0][side].push(one);
            figures[1][side].push(many);
        }
    }
    for (label, [quiet, traced]) in ["1 session:  ", "64 sessions:"].iter().zip(&mut figures) {
        let (q, t) = (median(quiet), median(traced));
        println!(
            "tracing {label} no subscriber {q:>8.0} commands/s  debug subscriber {t:>8.0} commands/s  ratio {:.2} (SQLite without fsync, median of 5 alternating rounds)",
            t / q
        );
    }
    // One command's instrumentation with nothing installed: command, plan
    // and append spans with their late records, the command counter and
    // the append histogram.
    let n = 1_000_000u32;
    let t = Instant::now();
    for i in 0..n {
        let command = tracing::info_span!(
            "narad.command",
            command = "message",
            session = "s",
            outcome = tracing::field::Empty
        );
        let plan = tracing::debug_span!("narad.plan", drafts = tracing::field::Empty);
        plan.in_scope(|| std::hint::black_box(i));
        plan.record("drafts", 1);
        let append = tracing::debug_span!("narad.append", session = "s", events = 1, side = 0);
        append.record("outcome", "ok");
        metrics::histogram!("narad_append_seconds").record(0.001);
        command.record("outcome", "ok");
        metrics::counter!("narad_commands_total", "command" => "message", "outcome" => "ok")
            .increment(1);
    }
    let per_command_ns = t.elapsed().as_nanos() as f64 / f64::from(n);
    println!(
        "tracing instrumentation of one command with no subscriber and no recorder: {per_command_ns:.1} ns"
    );
}
