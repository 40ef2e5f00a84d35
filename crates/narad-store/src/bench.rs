//! Drivers for the store benchmarks (`cargo bench -p narad-store-redb`,
//! `-p narad-store-sqlite`): durable appends through the [`Store`] trait,
//! the machine's raw write + fdatasync limit, and the printing of figures
//! and ratios. Figures only; nothing here asserts a speed.

// Benchmark-support code: a panic here aborts a benchmark run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::suite::{batch, event};
use crate::{Expect, SideSpace, SideWrite, Store, StoreError, StoredEvent};

/// Throughput and latency of one run.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub events_per_s: f64,
    pub appends_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// A loop of fixed-size `write` + `fdatasync` on one file: the durable-write
/// ceiling of this disk. Returns syncs per second.
pub fn raw_fdatasync(dir: &Path, size: usize, n: usize) -> f64 {
    try_raw_fdatasync(dir, size, n).unwrap()
}

/// [`raw_fdatasync`], reporting a missing directory or a full disk as an
/// error. The scratch file `raw-fsync` in `dir` is removed afterwards.
pub fn try_raw_fdatasync(dir: &Path, size: usize, n: usize) -> std::io::Result<f64> {
    let path = dir.join("raw-fsync");
    let run = || -> std::io::Result<f64> {
        let mut f = std::fs::File::create(&path)?;
        let buf = vec![b'x'; size];
        let t = Instant::now();
        for _ in 0..n {
            f.write_all(&buf)?;
            f.sync_data()?;
        }
        Ok(n as f64 / t.elapsed().as_secs_f64().max(1e-9))
    };
    let out = run();
    let _ = std::fs::remove_file(&path);
    out
}

/// The events a session appends in a run, built before timing starts.
pub fn events(session: &str, total: u64) -> Vec<StoredEvent> {
    (1..=total).map(|q| event(session, q, "bench")).collect()
}

/// `sessions` concurrent writers, each appending `per_session` events to its
/// own session in batches of `batch_size`, durably, through the trait.
pub async fn appends<S: Store + 'static>(
    store: Arc<S>,
    sessions: usize,
    batch_size: usize,
    per_session: u64,
    run: &str,
) -> Figures {
    try_appends(store, sessions, batch_size, per_session, run)
        .await
        .unwrap()
}

/// [`appends`] where each batch also writes one side record of
/// `side_bytes` bytes under its session's key in
/// [`SideSpace::SessionIndex`]: what the engine's batches carry besides
/// their events (its session-index entry).
pub async fn appends_with_side<S: Store + 'static>(
    store: Arc<S>,
    sessions: usize,
    batch_size: usize,
    per_session: u64,
    run: &str,
    side_bytes: usize,
) -> Figures {
    appends_sided(
        store,
        sessions,
        batch_size,
        per_session,
        run,
        Some(side_bytes),
    )
    .await
    .unwrap()
}

/// [`appends`], reporting a failed append (e.g. a full disk) as an error.
pub async fn try_appends<S: Store + 'static>(
    store: Arc<S>,
    sessions: usize,
    batch_size: usize,
    per_session: u64,
    run: &str,
) -> Result<Figures, StoreError> {
    appends_sided(store, sessions, batch_size, per_session, run, None).await
}

/// [`try_appends`], each batch with a side record of `side_bytes` if given.
async fn appends_sided<S: Store + 'static>(
    store: Arc<S>,
    sessions: usize,
    batch_size: usize,
    per_session: u64,
    run: &str,
    side_bytes: Option<usize>,
) -> Result<Figures, StoreError> {
    let prepared: Vec<(String, Vec<StoredEvent>)> = (0..sessions)
        .map(|i| {
            let sid = format!("{run}-{i}");
            let evs = events(&sid, per_session);
            (sid, evs)
        })
        .collect();
    let t = Instant::now();
    let tasks: Vec<_> = prepared
        .into_iter()
        .map(|(sid, evs)| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut head = 0;
                for chunk in evs.chunks(batch_size.max(1)) {
                    let t = Instant::now();
                    let mut b = batch(&sid, head, chunk.to_vec());
                    if let Some(n) = side_bytes {
                        b.side.push(SideWrite {
                            space: SideSpace::SessionIndex,
                            key: sid.clone(),
                            expect: Expect::Any,
                            value: Some(bytes::Bytes::from(vec![b'x'; n])),
                        });
                    }
                    let out = store.append(b).await?;
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                    head = out.head;
                }
                Ok::<_, StoreError>(lat)
            })
        })
        .collect();
    let mut lat = Vec::new();
    let mut failed = None;
    for task in tasks {
        match task.await {
            Ok(Ok(l)) => lat.extend(l),
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => failed = failed.or(Some(StoreError::Backend("a writer task stopped".into()))),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let secs = t.elapsed().as_secs_f64().max(1e-9);
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        lat.get(((lat.len().max(1) - 1) as f64 * p) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    Ok(Figures {
        events_per_s: (sessions as u64 * per_session) as f64 / secs,
        appends_per_s: lat.len() as f64 / secs,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    })
}

/// One line of figures, with the durable appends/s as a share of the raw
/// fdatasync ceiling and of the raw backend.
pub fn print(backend: &str, label: &str, f: Figures, raw_sync: f64, raw_backend: f64) {
    println!(
        "{backend:<7} {label:<22} {:>10.0} events/s {:>8.0} appends/s  p50 {:>8.0} us  p99 {:>8.0} us  appends = {:.2}x raw fdatasync, {:.2}x raw {backend}",
        f.events_per_s,
        f.appends_per_s,
        f.p50_us,
        f.p99_us,
        f.appends_per_s / raw_sync,
        f.appends_per_s / raw_backend,
    );
}

/// The four configurations of the issue: single events and batches of 100,
/// with 1 and 64 concurrent sessions. Returns `(label, sessions, batch, per_session)`.
pub fn configurations(quick: bool) -> Vec<(&'static str, usize, usize, u64)> {
    let k = if quick { 1 } else { 4 };
    vec![
        ("1 session, batch 1", 1, 1, 100 * k),
        ("1 session, batch 100", 1, 100, 2_000 * k),
        ("64 sessions, batch 1", 64, 1, 5 * k),
        ("64 sessions, batch 100", 64, 100, 200 * k),
    ]
}

/// Runs every configuration against `store` and prints one line each, then
/// how many batches shared each durable transaction (`stats` reads the
/// backend's group-commit counters).
pub async fn run_all<S: Store + 'static>(
    backend: &str,
    store: Arc<S>,
    quick: bool,
    raw_sync: f64,
    raw_backend: f64,
    stats: impl Fn(&S) -> Option<crate::group::GroupStats>,
) {
    for (i, (label, sessions, size, per)) in configurations(quick).into_iter().enumerate() {
        let before = stats(&store);
        let f = appends(Arc::clone(&store), sessions, size, per, &format!("r{i}")).await;
        print(backend, label, f, raw_sync, raw_backend);
        let (Some(before), Some(after)) = (before, stats(&store)) else {
            continue;
        };
        let (b, t) = (
            after.batches - before.batches,
            after.transactions - before.transactions,
        );
        println!(
            "{backend:<7} {label:<22} group commit: {b} batches in {t} transactions ({:.1} per fsync)",
            b as f64 / t.max(1) as f64
        );
    }
}
