//! `narad migrate` of a store larger than its memory bound, as a real
//! process under `common`'s address-space limit: the copy and the
//! comparison that follows it read a page of each store at a time, never a
//! whole journal or a whole side space.
//!
//! The bound is 96 MiB, not `common`'s 64: migrate holds two stores open,
//! each with the CLI's 16 MiB page cache for redb, and a page of each (a
//! journal page is up to 4 MiB). Reading the source journal whole, as it
//! did, costs more than the bound by itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use bytes::Bytes;
use common::{assert_children_rss_under, bounded, run, write_sessions};
use narad_store::{Batch, Expect, SideSpace, SideWrite, Store};

/// Reducer snapshots written beside the journal: 32 of 2 MiB.
const SNAPSHOTS: usize = 32;
const SNAPSHOT_BYTES: usize = 2 << 20;

/// This test's name, and the variable that makes it the child that writes
/// the snapshots into the store at its path.
const TEST: &str = "a_store_larger_than_the_bound_migrates_and_compares_in_bounded_memory";
const WRITER: &str = "NARAD_TEST_SNAPSHOT_WRITER";

/// Peak RSS of a migrate child, in KiB.
const MIGRATE_RSS_KIB: i64 = 96 * 1024;

/// A 100 MB session and 64 MiB of snapshot records are migrated from redb
/// to SQLite and compared; a second run copies nothing and compares
/// again. Every record arrives.
#[test]
fn a_store_larger_than_the_bound_migrates_and_compares_in_bounded_memory() {
    if let Some(path) = std::env::var_os(WRITER) {
        return write_snapshots(std::path::Path::new(&path));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.jsonl");
    write_sessions(&file, 1, 1000, 100_000);
    let src_path = dir.path().join("src.redb");
    let src = format!("redb:{}", src_path.display());
    let dst = format!("sqlite:{}", dir.path().join("dst.sqlite").display());
    let f = file.display().to_string();
    let (code, _, err) = run(bounded(&["import", "--store", &src, &f]));
    assert_eq!(code, 0, "{err}");

    // Written by a child (this test, run again), with the store's own
    // API. Written in this process instead, they made the next child
    // report 207 MB: a spawned child's peak counts what this process had
    // resident when it was spawned.
    let writer = std::process::Command::new(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads", "1"])
        .env(WRITER, &src_path)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(writer.success());
    let before = common::children_peak_rss_kib();

    let (code, out, err) = run(bounded(&["migrate", "--from", &src, "--to", &dst]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("1 sessions verified in the target (1000 events copied this run)"),
        "{out}"
    );
    assert!(out.contains(&format!(", snapshot {SNAPSHOTS}, ")), "{out}");
    let (code, out, err) = run(bounded(&["migrate", "--from", &src, "--to", &dst]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(0 events copied this run)"), "{out}");
    eprintln!("import and the writer child peaked at {before} KiB");
    assert_children_rss_under(
        "migrating 100 MB of journal and 64 MiB of snapshots",
        MIGRATE_RSS_KIB,
    );

    // The target holds each snapshot whole.
    let dst_path = dir.path().join("dst.sqlite");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = narad_store_sqlite::SqliteStore::open(&dst_path)
            .await
            .unwrap();
        for i in 0..SNAPSHOTS {
            let v = s.side(SideSpace::Snapshot, &format!("big-{i}")).await;
            let v = v.unwrap().unwrap();
            assert!(v.len() == SNAPSHOT_BYTES && v.iter().all(|b| *b == i as u8));
        }
        s.close().await.unwrap();
    });
}

/// [`SNAPSHOTS`] records of [`SNAPSHOT_BYTES`] in the snapshot space of the
/// redb store at `path`.
fn write_snapshots(path: &std::path::Path) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let small = narad_store_redb::RedbOptions::default().cache_bytes(1 << 20);
        let s = narad_store_redb::RedbStore::open_with(path, small)
            .await
            .unwrap();
        for i in 0..SNAPSHOTS {
            let batch = Batch {
                side: vec![SideWrite {
                    space: SideSpace::Snapshot,
                    key: format!("big-{i}"),
                    expect: Expect::Any,
                    value: Some(Bytes::from(vec![i as u8; SNAPSHOT_BYTES])),
                }],
                ..Batch::default()
            };
            s.append(batch).await.unwrap();
        }
        s.close().await.unwrap();
    });
}
