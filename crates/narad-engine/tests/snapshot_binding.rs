//! A stored reducer snapshot is bound to the journal it was derived from:
//! edited, swapped-in and truncated snapshot records are ignored, the
//! session is replayed, and the engine's verdicts are the journal's. On
//! real redb and SQLite files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{assert_valid, earlier_layout, me, put_snapshot, snapshot_of};
use narad_engine::{
    AllowAll, Engine, EngineConfig, EngineStats, IdSource, ManualClock, NewSession, RandomIds,
    SequentialIds, StartRun, Started, Terminal,
};
use narad_store::Store;
use serde_json::json;

fn engine<S: Store + 'static>(store: S, ids: Arc<dyn IdSource>) -> Engine<S> {
    Engine::with_host(
        store,
        Arc::new(ManualClock::at_unix(1_780_000_000)),
        ids,
        Arc::new(AllowAll),
        EngineConfig {
            snapshot_every: 5,
            ..EngineConfig::default()
        },
    )
}

/// A session with a running run and 12 events; its snapshot covers 10.
/// With sequential ids, two stores given the same `words` hold sessions of
/// the same id and positions whose bytes differ by the message text.
async fn running_session<S: Store + 'static>(e: &Engine<S>, words: &str) -> (String, String) {
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let Started::Running(run) = e.start_run(&me(), &sid, StartRun::default()).await.unwrap() else {
        panic!("the slot is free")
    };
    for i in 0..10 {
        e.message(&me(), &sid, json!(format!("{words} {i}")))
            .await
            .unwrap();
    }
    (sid, run)
}

fn stats(from_snapshot: u64, snapshots_rejected: u64) -> EngineStats {
    EngineStats {
        hydrations: 1,
        from_snapshot,
        retries: 0,
        snapshots_rejected,
        snapshots_earlier: 0,
    }
}

/// Replaces every `from` in a snapshot record; the record stays parseable
/// JSON where it was (the checker's part is binary around its JSON, so the
/// bytes are edited, not text).
fn edit(record: &[u8], from: &str, to: &str) -> Vec<u8> {
    let (head, mut body) = record.split_at(12);
    let mut out = head.to_vec();
    while let Some(at) = body.windows(from.len()).position(|w| w == from.as_bytes()) {
        out.extend_from_slice(&body[..at]);
        out.extend_from_slice(to.as_bytes());
        body = &body[at + from.len()..];
    }
    out.extend_from_slice(body);
    assert_ne!(out, record, "{from} is in the record");
    out
}

/// The layout before snapshots were bound: head, then the body.
fn version_1(record: &[u8]) -> Vec<u8> {
    let n = u32::from_be_bytes(record[8..12].try_into().unwrap()) as usize;
    [&record[..8], &record[12 + n..]].concat()
}

/// The record labelled with the previous layout's version (2, SHA-256
/// digests): refused by its version alone. The header comes first, and its
/// first field is the version.
fn version_2(record: &[u8]) -> Vec<u8> {
    let (from, to) = (br#""version":3"#, br#""version":2"#);
    let at = record.windows(from.len()).position(|w| w == from).unwrap();
    let mut out = record.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

async fn scenario<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = S>,
{
    let (a, b) = (dir.join("a"), dir.join("b"));
    let (sid, run, other_session) = {
        let e = engine(open(a.clone()).await, Arc::new(SequentialIds::default()));
        let (sid, run) = running_session(&e, "alpha").await;
        let (other, _) = running_session(&e, "gamma").await;
        e.store().close().await.unwrap();
        (sid, run, other)
    };
    {
        // The same ids and positions in another store, other bytes.
        let e = engine(open(b.clone()).await, Arc::new(SequentialIds::default()));
        assert_eq!(running_session(&e, "beta!").await.0, sid);
        e.store().close().await.unwrap();
    }
    let foreign_journal = {
        let store = open(b).await;
        let bytes = snapshot_of(&store, &sid).await;
        store.close().await.unwrap();
        bytes
    };
    let store = open(a.clone()).await;
    let good = snapshot_of(&store, &sid).await;
    let foreign_session = snapshot_of(&store, &other_session).await;
    store.close().await.unwrap();
    // The tampered state says the run finished: a trusting engine would
    // refuse to end it and allow a second top-level run.
    let running = r#""state":"running""#;
    let cases = [
        ("as written", good.clone(), stats(1, 0)),
        (
            "edited state",
            edit(&good, running, r#""state":"finished""#),
            stats(0, 1),
        ),
        ("another session", foreign_session, stats(0, 1)),
        ("another journal", foreign_journal, stats(0, 1)),
        ("truncated", good[..good.len() / 2].to_vec(), stats(0, 1)),
        ("version 1", version_1(&good), stats(0, 1)),
        ("version 2", version_2(&good), stats(0, 1)),
        // Not damage: counted apart, and replayed all the same.
        (
            "an earlier layout",
            earlier_layout(&good),
            EngineStats {
                snapshots_earlier: 1,
                ..stats(0, 0)
            },
        ),
    ];
    for (name, record, want) in cases {
        let store = open(a.clone()).await;
        put_snapshot(&store, &sid, record).await;
        let e = engine(store, Arc::new(RandomIds));
        let state = e.state_json(&me(), &sid).await.unwrap();
        assert_eq!(e.stats(), want, "{name}");
        let replayed = assert_valid(&e, &sid).await.state_json(&sid).unwrap();
        assert_eq!(state, replayed, "{name}");
        // The journal's verdict: the run is running, the slot is taken.
        let busy = e.start_run(&me(), &sid, StartRun::default()).await;
        assert_eq!(busy.unwrap_err().code(), "session_slot_busy", "{name}");
        e.store().close().await.unwrap();
    }
    // After an earlier layout, the next append writes this layout's.
    let store = open(a.clone()).await;
    put_snapshot(&store, &sid, earlier_layout(&good)).await;
    let e = engine(store, Arc::new(RandomIds));
    e.message(&me(), &sid, json!("after the upgrade"))
        .await
        .unwrap();
    let rewritten = snapshot_of(e.store(), &sid).await;
    let magic = rewritten.windows(8).position(|w| w == b"narad.ck").unwrap();
    assert_eq!(rewritten[magic + 8], 12);
    e.store().close().await.unwrap();
    let e = engine(open(a.clone()).await, Arc::new(RandomIds));
    e.state_json(&me(), &sid).await.unwrap();
    assert_eq!(e.stats(), stats(1, 0));
    e.store().close().await.unwrap();
    let store = open(a).await;
    put_snapshot(&store, &sid, edit(&good, running, r#""state":"finished""#)).await;
    let e = engine(store, Arc::new(RandomIds));
    e.end_run(
        &me(),
        &sid,
        &run,
        Terminal::Finished {
            usage: None,
            artifact_ids: vec![],
        },
    )
    .await
    .unwrap();
    assert_eq!(e.stats().snapshots_rejected, 1);
    assert_valid(&e, &sid).await;
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_snapshots_that_do_not_match_their_journal_are_replayed_past() {
    let dir = tempfile::tempdir().unwrap();
    scenario(dir.path(), |p| async move {
        narad_store_redb::RedbStore::open(p.with_extension("redb"))
            .await
            .unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_snapshots_that_do_not_match_their_journal_are_replayed_past() {
    let dir = tempfile::tempdir().unwrap();
    scenario(dir.path(), |p| async move {
        narad_store_sqlite::SqliteStore::open(p.with_extension("sqlite"))
            .await
            .unwrap()
    })
    .await;
}

/// A snapshot body of several MiB: as written it is used, and with one
/// byte of its transcript flipped it is refused and the session replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_snapshot_is_used_only_when_its_digest_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.redb");
    let open = || async { narad_store_redb::RedbStore::open(&path).await.unwrap() };
    let (sid, good) = {
        let e = engine(open().await, Arc::new(SequentialIds::default()));
        let (sid, _) = running_session(&e, "long").await;
        // 30 messages of 200 KB: the snapshot after them is past 4 MiB
        // (the first two or so are handed to the store with the transcript,
        // `HANDOVER_BYTES`; those since stay in the snapshot).
        for i in 0..30 {
            let text = format!("{i:02}{}", "x".repeat(200_000));
            e.message(&me(), &sid, json!(text)).await.unwrap();
        }
        let good = snapshot_of(e.store(), &sid).await;
        e.store().close().await.unwrap();
        (sid, good)
    };
    assert!(good.len() > 4 << 20, "{} bytes", good.len());
    let mut flipped = good.clone();
    let at = flipped.len() - 1_000_000;
    flipped[at] ^= 0x01;
    for (name, record, want) in [
        ("as written", good, stats(1, 0)),
        ("one byte flipped", flipped, stats(0, 1)),
    ] {
        let store = open().await;
        put_snapshot(&store, &sid, record).await;
        let e = engine(store, Arc::new(RandomIds));
        let state = e.state_json(&me(), &sid).await.unwrap();
        assert_eq!(e.stats(), want, "{name}");
        let replayed = assert_valid(&e, &sid).await.state_json(&sid).unwrap();
        // Compared whole; on failure, only where they part is printed.
        let at = state
            .bytes()
            .zip(replayed.bytes())
            .position(|(a, b)| a != b);
        assert!(
            state == replayed,
            "{name}: differ at {at:?} of {} and {} bytes",
            state.len(),
            replayed.len()
        );
        e.store().close().await.unwrap();
    }
}
