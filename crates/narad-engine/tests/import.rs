//! `Engine::import`: slices of one journal, reruns, and two engines (two
//! handles on one SQLite file) importing the same journal at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::me;
use narad_engine::Engine;
use narad_store::Store;
use narad_store_sqlite::SqliteStore;

/// `n` events of session `sid`: back-to-back runs of `run.started` and
/// `run.finished`.
fn journal(sid: &str, n: u64) -> Vec<Vec<u8>> {
    (1..=n)
        .map(|q| {
            let (root, k) = ((q - 1) / 2 + 1, (q - 1) % 2);
            let ty = if k == 0 { "run.started" } else { "run.finished" };
            format!(
                r#"{{"type":"{ty}","protocolVersion":"narad/v1","eventId":"{sid}-{q}","timestamp":"2026-08-05T00:00:00Z","sessionId":"{sid}","sessionSequence":{q},"rootRunId":"r{root}","runId":"r{root}","sequence":{}}}"#,
                k + 1
            )
            .into_bytes()
        })
        .collect()
}

/// An engine over a fresh SQLite file in `dir`.
async fn engine(dir: &std::path::Path) -> Engine<SqliteStore> {
    Engine::new(SqliteStore::open(dir.join("s.sqlite")).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_imported_in_slices_and_again_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let j = journal("s", 40);
    for slice in j.chunks(7) {
        e.import(&me(), slice).await.unwrap();
    }
    assert_eq!(e.store().head("s").await.unwrap(), 40);
    // A rerun, whole or overlapping, appends nothing.
    assert_eq!(e.import(&me(), &j).await.unwrap().1, 0);
    assert_eq!(e.import(&me(), &j[10..30]).await.unwrap().1, 0);
    common::assert_valid(&e, "s").await;
}

/// Before the fix, the loser of the race got a head or side-record
/// conflict; now it reloads, finds its events stored, and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_engines_importing_one_journal_at_once_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let a = Engine::new(SqliteStore::open(&path).await.unwrap());
    let b = Engine::new(SqliteStore::open(&path).await.unwrap());
    for round in 0..20 {
        let sid = format!("s{round}");
        let j = journal(&sid, 30);
        let (ra, rb) = tokio::join!(
            async {
                let mut n = 0;
                for slice in j.chunks(10) {
                    n += a.import(&me(), slice).await.unwrap().1;
                }
                n
            },
            async {
                let mut n = 0;
                for slice in j.chunks(10) {
                    n += b.import(&me(), slice).await.unwrap().1;
                }
                n
            }
        );
        assert_eq!(ra + rb, 30, "round {round}: each event appended once");
        assert_eq!(a.store().head(&sid).await.unwrap(), 30);
        common::assert_valid(&a, &sid).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_session_is_listed_with_its_first_event_time() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let mut j = journal("imported", 4);
    j[0] = String::from_utf8(j[0].clone())
        .unwrap()
        .replace("2026-08-05T00:00:00Z", "2026-07-01T09:30:00Z")
        .into_bytes();
    e.import(&me(), &j).await.unwrap();
    let page = e
        .sessions(&me(), &narad_engine::SessionQuery::default(), None, 10)
        .await
        .unwrap();
    let entry = page
        .sessions
        .iter()
        .find(|s| s.session_id == "imported")
        .unwrap();
    assert_eq!(entry.created_at.as_deref(), Some("2026-07-01T09:30:00Z"));
    assert_eq!(entry.updated_at.as_deref(), Some("2026-08-05T00:00:00Z"));
}

/// A refused record is named by its place, with the validator's code as
/// the error's code and a message that does not repeat it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_record_names_its_place_and_its_message_does_not_repeat_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path()).await;
    let mut j = journal("s", 4);
    j[2] = b"\xff not json".to_vec();
    let err = e.import(&me(), &j).await.unwrap_err();
    assert_eq!(err.code(), "invalid_json");
    let shown = err.to_string();
    assert!(shown.contains("record 3"), "{shown}");
    assert!(!shown.contains("invalid_json"), "{shown}");
    // Nothing of the slice was stored.
    assert_eq!(e.store().head("s").await.unwrap(), 0);
}

/// A session (in an engine of its own, since dropped) with a run paused
/// on an open interrupt: `(session, interrupt, its journal)`.
async fn with_an_open_interrupt() -> (String, String, Vec<Vec<u8>>) {
    use narad_engine::{Interrupt, StartRun};
    let dir = tempfile::tempdir().unwrap();
    let src = engine(dir.path()).await;
    let sid = common::session(&src).await;
    let run = src.start_run(&me(), &sid, StartRun::new()).await.unwrap();
    let on_run = Interrupt::on_run(run.run_id(), "approval", ["approve", "deny"]);
    let (iid, _) = src.request_interrupt(&me(), &sid, on_run).await.unwrap();
    let records = common::journal(&src, &sid).await;
    (sid, iid, records)
}

/// An imported open interrupt joins the store-wide interrupt index, as a
/// requested one does: it is listed and resolved by its id alone. A
/// second session that carries the same interrupt id is refused whole.
#[tokio::test]
async fn an_imported_interrupt_is_listed_and_resolved_by_its_id() {
    use narad_engine::{EngineError, Resolve};
    let dir = tempfile::tempdir().unwrap();
    let (sid, iid, records) = with_an_open_interrupt().await;

    let e = engine(dir.path()).await;
    e.import(&me(), &records).await.unwrap();
    let page = e.open_interrupts(&me(), None, 10).await.unwrap();
    let listed: Vec<&str> = page.open.iter().map(|i| i.interrupt_id.as_str()).collect();
    assert_eq!(listed, [iid.as_str()]);
    let done = e
        .resolve_interrupt(&me(), Resolve::new(&iid, "approve"))
        .await
        .unwrap();
    assert_eq!(done.session_id, sid);
    // A rerun of the import appends nothing and writes no index entry.
    assert_eq!(e.import(&me(), &records).await.unwrap().1, 0);

    let other: Vec<Vec<u8>> = records
        .iter()
        .map(|r| {
            String::from_utf8(r.clone())
                .unwrap()
                .replace(&sid, "s-other")
                .into_bytes()
        })
        .collect();
    let err = e.import(&me(), &other).await.unwrap_err();
    assert!(matches!(err, EngineError::InvalidCommand(_)), "{err:?}");
    assert!(err.to_string().contains(&iid), "{err}");
    assert_eq!(e.store().head("s-other").await.unwrap(), 0);
    common::assert_valid(&e, &sid).await;
}

/// A store imported by an older build holds the journal but not its
/// interrupts' index entries: `unindexed_interrupts` names them and
/// `reindex` adds them, after which the interrupt resolves by its id.
#[tokio::test]
async fn reindex_adds_the_interrupt_entries_an_older_import_left_out() {
    use narad_engine::{EngineError, Resolve};
    use narad_store::{Batch, Expect, SideSpace, SideWrite};
    let dir = tempfile::tempdir().unwrap();
    let (sid, iid, records) = with_an_open_interrupt().await;
    let e = engine(dir.path()).await;
    e.import(&me(), &records).await.unwrap();
    assert!(e.unindexed_interrupts(&sid).await.unwrap().is_empty());
    assert!(!e.reindex(&me(), &sid).await.unwrap(), "nothing to repair");
    // What an older import left: the entry removed, the journal as it is.
    let head = e.store().head(&sid).await.unwrap();
    let forget = SideWrite {
        space: SideSpace::Interrupt,
        key: iid.clone(),
        expect: Expect::Any,
        value: None,
    };
    let batch = Batch {
        session_id: sid.clone(),
        expected_head: head,
        side: vec![forget],
        ..Batch::default()
    };
    e.store().append(batch).await.unwrap();
    let resolve = || Resolve::new(&iid, "approve");
    let err = e.resolve_interrupt(&me(), resolve()).await.unwrap_err();
    assert!(
        matches!(err, EngineError::UnknownInterrupt { .. }),
        "{err:?}"
    );
    assert_eq!(e.unindexed_interrupts(&sid).await.unwrap(), [iid.as_str()]);
    assert!(e.reindex(&me(), &sid).await.unwrap());
    assert!(e.unindexed_interrupts(&sid).await.unwrap().is_empty());
    assert!(!e.reindex(&me(), &sid).await.unwrap());
    e.resolve_interrupt(&me(), resolve()).await.unwrap();
    assert_eq!(e.store().head(&sid).await.unwrap(), head + 2);
}
