//! Suite case for a file backend whose disk runs out of room: the write
//! that does not fit is refused whole, reads go on, and once there is room
//! again the same open store writes, with nothing lost.
//!
//! The disk is filled with `RLIMIT_FSIZE` (a write past the limit fails
//! with `EFBIG`, as one past a full disk fails with `ENOSPC`), in a child
//! process of the test binary, since the limit holds for the whole
//! process; the child then lifts it, as an operator frees space.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};

use crate::suite::{batch, event};
use crate::{Store, StoreError};

/// Set (to the store's directory) in the child process of
/// [`a_full_disk_refuses_a_write_and_room_lets_the_store_write_again`].
pub const FULL_CHILD_ENV: &str = "NARAD_STORE_FULL_CHILD";

/// What the child prints when every check held.
const DONE: &str = "full-disk child: done";

/// An event of about 8 KiB, so the file grows by pages quickly.
fn big(seq: u64) -> crate::StoredEvent {
    event("full", seq, &"f".repeat(8 << 10))
}

/// The largest file in `dir`, in bytes.
fn largest_file(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0)
}

/// Sets the soft file-size limit of this process (`None`: back to the
/// hard limit).
#[cfg(unix)]
fn file_size_limit(bytes: Option<u64>) {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Fsize);
    lim.current = bytes.or(lim.maximum);
    setrlimit(Resource::Fsize, lim).unwrap();
}

/// Suite case `a_full_disk_refuses_a_write_and_room_lets_the_store_write_again`:
/// runs `child_test` (a test of this binary that calls [`full_disk_child`]
/// when [`FULL_CHILD_ENV`] is set) and checks that it got through.
pub async fn a_full_disk_refuses_a_write_and_room_lets_the_store_write_again(
    dir: &Path,
    child_test: &str,
) {
    if cfg!(not(unix)) {
        eprintln!("SKIPPED full-disk case: it needs RLIMIT_FSIZE (unix)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // Started by a shell that ignores SIGXFSZ (an ignored signal stays
    // ignored across exec), so a write past the limit fails with EFBIG
    // instead of ending the child.
    let out = std::process::Command::new("/bin/sh")
        .args(["-c", "trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(exe)
        .args([child_test, "--exact", "--nocapture", "--test-threads=1"])
        .env(FULL_CHILD_ENV, dir)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // The test harness prints the child's line after the test's name.
    let line = stdout.lines().find_map(|l| l.find(DONE).map(|at| &l[at..]));
    assert!(
        out.status.success() && line.is_some(),
        "the child failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{}", line.unwrap_or_default());
}

/// The child's part: fill the disk, check the refusal, make room, write.
#[cfg(unix)]
pub async fn full_disk_child<S, F, Fut>(dir: PathBuf, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let path = dir.join("store");
    let s = open(path.clone()).await.unwrap();
    let mut head = 0;
    for seq in 1..=3 {
        s.append(batch("full", head, vec![big(seq)])).await.unwrap();
        head = seq;
    }
    file_size_limit(Some(largest_file(&dir) + (256 << 10)));
    let mut refused = None;
    for _ in 0..10_000 {
        match s.append(batch("full", head, vec![big(head + 1)])).await {
            Ok(_) => head += 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let refused = refused.expect("the limit was never reached");
    assert!(matches!(refused, StoreError::Backend(_)), "{refused:?}");
    // The message says what failed, not only that something did earlier.
    assert!(!refused.to_string().contains("Previous"), "{refused}");
    // A second try while the disk is still full is refused too, and
    // nothing of either is written.
    assert!(s
        .append(batch("full", head, vec![big(head + 1)]))
        .await
        .is_err());
    file_size_limit(None);
    // Room again: the same store takes the next batch.
    s.append(batch("full", head, vec![big(head + 1)]))
        .await
        .unwrap();
    head += 1;
    let check = |events: Vec<crate::StoredEvent>| {
        assert_eq!(events.len() as u64, head);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.bytes, big(i as u64 + 1).bytes, "event {}", i + 1);
        }
    };
    check(s.read_session("full", 0, usize::MAX).await.unwrap().events);
    assert_eq!(s.head("full").await.unwrap(), head);
    s.close().await.unwrap();
    drop(s);
    let s = open(path).await.unwrap();
    check(s.read_session("full", 0, usize::MAX).await.unwrap().events);
    s.close().await.unwrap();
    println!("{DONE}: {head} events kept; the full disk was refused with: {refused}");
}
