//! Random damage to a real redb file: 40 seeded damages of the file's
//! bytes, each opened, read and checked. redb 4 panics on some damaged
//! files; none of those panics may escape the store, and every failure is
//! the typed `corrupt` error naming the file (or a clean open error).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use narad_store::{Store, StoreError};
use narad_store_redb::RedbStore;

/// Reads everything a tool would; the first failure.
async fn read_all(s: &RedbStore) -> Result<(), StoreError> {
    let sessions = s.list_sessions(None, 1000).await?;
    for sid in &sessions {
        s.head(sid).await?;
        s.read_session(sid, 0, 10_000).await?;
        s.read_run(sid, "r", 0, 10_000).await?;
    }
    Ok(())
}

fn is_typed(e: &StoreError, path: &Path) -> bool {
    match e {
        StoreError::Corrupt { path: Some(p), .. } => p == &path.display().to_string(),
        // A file too damaged to be opened at all may fail as an IO error.
        StoreError::Backend(m) => !m.contains("panicked"),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_seeded_damages_never_panic_and_fail_typed() {
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Count redb's panics (caught by the store); report any other.
        if info.location().is_some_and(|l| l.file().contains("redb")) {
            PANICS.fetch_add(1, Ordering::SeqCst);
        } else {
            previous(info);
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.redb");
    {
        let s = RedbStore::open(&clean).await.unwrap();
        narad_store::damage::fill_for_scramble(&s).await;
        s.close().await.unwrap();
    }
    let original = std::fs::read(&clean).unwrap();
    let (mut failed_open, mut failed_read, mut failed_check) = (0, 0, 0);
    for seed in 1..=40u64 {
        let bytes = narad_store::damage::scramble(&original, seed);
        let path = dir.path().join(format!("damaged-{seed}.redb"));
        std::fs::write(&path, &bytes).unwrap();
        match RedbStore::check_integrity(&path).await {
            Ok(_) => {}
            Err(e) => {
                assert!(is_typed(&e, &path), "seed {seed}: check: {e:?}");
                failed_check += 1;
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        let s = match RedbStore::open_existing(&path).await {
            Ok(s) => s,
            Err(e) => {
                assert!(is_typed(&e, &path), "seed {seed}: open: {e:?}");
                failed_open += 1;
                continue;
            }
        };
        if let Err(e) = read_all(&s).await {
            assert!(
                matches!(&e, StoreError::Corrupt { path: Some(p), .. } if *p == path.display().to_string()),
                "seed {seed}: read: {e:?}"
            );
            failed_read += 1;
        }
        let _ = s.close().await;
    }
    println!(
        "40 damaged files: {failed_check} failed redb's integrity check, {failed_open} failed to open, \
         {failed_read} failed a read; {} redb panics were caught",
        PANICS.load(Ordering::SeqCst)
    );
}
