//! Driver of the space-reclaim benchmark (`cargo bench -p
//! narad-store-redb --bench reclaim`, `-p narad-store-sqlite`): write
//! sessions, delete 90% of them ([`crate::lifecycle`]), compact with the
//! backend's own compaction, and print the file size after each step.
//! Figures only; nothing here asserts a size.

// Benchmark-support code: a panic here aborts a benchmark run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::lifecycle::delete_batch;
use crate::suite::{batch, event};
use crate::{Expect, SideSpace, SideWrite, Store, StoreError};

/// File sizes (bytes) of one run.
#[derive(Debug, Clone, Copy)]
pub struct Reclaimed {
    pub sessions: usize,
    pub deleted: usize,
    pub full: u64,
    pub after_delete: u64,
    pub after_compact: u64,
    pub delete_s: f64,
    pub compact_s: f64,
}

/// Every file of the store at `path` (`path`, `path-wal`, `path-shm`), summed.
pub fn size_of(path: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|ext| {
            let mut p = path.as_os_str().to_owned();
            p.push(ext);
            std::fs::metadata(PathBuf::from(p)).ok().map(|m| m.len())
        })
        .sum()
}

/// Writes `sessions` sessions of `events` events (and a session and a
/// snapshot record each), closes, measures; reopens, deletes 90% of them,
/// closes, measures; runs `compact`, measures.
pub async fn reclaim<S, F, Fut, C, CFut>(
    path: &Path,
    open: F,
    compact: C,
    sessions: usize,
    events: u64,
) -> Reclaimed
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
    C: Fn(PathBuf) -> CFut,
    CFut: Future<Output = Result<(), StoreError>>,
{
    let measure = |p: PathBuf| async move { size_of(&p) };
    reclaim_measured(path, open, compact, measure, sessions, events).await
}

/// [`reclaim`] with the size taken by `measure` (a server backend's
/// relation sizes) instead of the files at `path`.
pub async fn reclaim_measured<S, F, Fut, C, CFut, M, MFut>(
    path: &Path,
    open: F,
    compact: C,
    measure: M,
    sessions: usize,
    events: u64,
) -> Reclaimed
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
    C: Fn(PathBuf) -> CFut,
    CFut: Future<Output = Result<(), StoreError>>,
    M: Fn(PathBuf) -> MFut,
    MFut: Future<Output = u64>,
{
    let ids: Vec<String> = (0..sessions).map(|i| format!("session-{i:06}")).collect();
    let blob = Bytes::from(vec![b'x'; 512]);
    let s = Arc::new(open(path.to_owned()).await.unwrap());
    run_parallel(&s, &ids, |sid| {
        let mut b = batch(
            sid,
            0,
            (1..=events).map(|q| event(sid, q, "reclaim")).collect(),
        );
        for space in [SideSpace::Session, SideSpace::Snapshot] {
            b.side.push(SideWrite {
                space,
                key: sid.to_owned(),
                expect: Expect::Absent,
                value: Some(blob.clone()),
            });
        }
        b
    })
    .await;
    s.close().await.unwrap();
    drop(s);
    let full = measure(path.to_owned()).await;

    let s = Arc::new(open(path.to_owned()).await.unwrap());
    let doomed: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 != 0)
        .map(|(_, s)| s.clone())
        .collect();
    let t = Instant::now();
    run_parallel(&s, &doomed, |sid| {
        delete_batch(
            sid,
            events,
            [
                (SideSpace::Session, sid.to_owned()),
                (SideSpace::Snapshot, sid.to_owned()),
            ],
            Bytes::from_static(b"{\"v\":1}"),
        )
    })
    .await;
    let delete_s = t.elapsed().as_secs_f64();
    s.close().await.unwrap();
    drop(s);
    let after_delete = measure(path.to_owned()).await;
    let t = Instant::now();
    compact(path.to_owned()).await.unwrap();
    let compact_s = t.elapsed().as_secs_f64();
    let after_compact = measure(path.to_owned()).await;
    Reclaimed {
        sessions,
        deleted: doomed.len(),
        full,
        after_delete,
        after_compact,
        delete_s,
        compact_s,
    }
}

/// Appends one batch per id, 64 at a time (so group commit batches them).
async fn run_parallel<S: Store + 'static>(
    s: &Arc<S>,
    ids: &[String],
    make: impl Fn(&str) -> crate::Batch,
) {
    for chunk in ids.chunks(64) {
        let mut tasks = Vec::new();
        for sid in chunk {
            let (s, b) = (Arc::clone(s), make(sid));
            tasks.push(tokio::spawn(async move { s.append(b).await }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
    }
}

/// Prints one run's figures.
pub fn print(backend: &str, r: &Reclaimed) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "{backend}: {} sessions, {} deleted: full {:.1} MiB, after delete {:.1} MiB, \
         after compaction {:.1} MiB ({:.0}% of full); delete {:.1}s, compaction {:.1}s",
        r.sessions,
        r.deleted,
        mib(r.full),
        mib(r.after_delete),
        mib(r.after_compact),
        100.0 * r.after_compact as f64 / r.full.max(1) as f64,
        r.delete_s,
        r.compact_s
    );
}

/// The whole reclaim bench of an embedded backend: 10k sessions (1k with
/// `NARAD_BENCH_QUICK=1`) of 20 events in a fresh directory under the
/// system temp dir, which is removed afterwards; prints the figures.
pub fn run_embedded<S, F, Fut, C, CFut>(backend: &str, file: &str, open: F, compact: C)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
    C: Fn(PathBuf) -> CFut,
    CFut: Future<Output = Result<(), StoreError>>,
{
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    let dir = std::env::temp_dir().join(format!("narad-reclaim-{backend}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(reclaim(
        &dir.join(file),
        open,
        compact,
        if quick { 1_000 } else { 10_000 },
        20,
    ));
    let _ = std::fs::remove_dir_all(&dir);
    print(backend, &r);
}
