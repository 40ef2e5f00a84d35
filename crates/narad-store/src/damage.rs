//! The backend-agnostic damaged-store suite: each backend's tests call
//! [`damage_suite!`](crate::damage_suite) with a function that opens a
//! store at a path and a [`Tamper`] that damages the closed store's rows
//! the way only a raw writer can (the backend's own tables, bypassing the
//! store). Every read must then answer a typed
//! [`StoreError::Corrupt`] naming the session
//! and position, and no paging loop may run without end.
//!
//! ```text
//! narad_store::damage_suite!(|path| narad_store_redb::RedbStore::open(path), RedbTamper);
//! ```

// Test-support code: a panic here is a test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};

use crate::suite::{batch, event};
use crate::{Damage, HistoryQuery, Store, StoreError, StoredEvent};

/// Raw damage to a closed store, written with the backend's own API.
pub trait Tamper {
    /// Puts `bytes` as the event row `(session, seq)`, keeping (or making)
    /// its key and index entries; the head record is left alone.
    fn put_row(&self, path: &Path, session: &str, seq: u64, bytes: &[u8]);
}

/// The stored bytes of one row, read through the store.
async fn bytes_of<S: Store>(s: &S, session: &str, seq: u64) -> Vec<u8> {
    let page = s.read_session(session, seq - 1, 1).await.unwrap();
    page.events[0].bytes.to_vec()
}

fn assert_corrupt(
    r: Result<impl std::fmt::Debug, StoreError>,
    damage: Damage,
    session: &str,
    at: u64,
) {
    match r {
        Err(StoreError::Corrupt {
            damage: d,
            session: Some(s),
            position: Some(p),
            ..
        }) if d == damage && s == session && p == at => {}
        other => panic!("expected {damage:?} at {session}/{at}, got {other:?}"),
    }
}

/// Pages through a session the way tools do, from the last event's
/// position; gives up (a test failure, not a hang) after `bound` pages.
async fn page_all<S: Store>(
    s: &S,
    session: &str,
    bound: usize,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut out = Vec::new();
    let mut cursor = 0;
    for _ in 0..bound {
        let page = s.read_session(session, cursor, 4096).await?;
        let before = cursor;
        for ev in &page.events {
            cursor = crate::row::advance(session, cursor, ev.position.session_sequence)?;
        }
        out.extend(page.events);
        if page.next.is_none() {
            return Ok(out);
        }
        crate::row::advance(session, before, cursor)?;
    }
    panic!("paging {session} did not end within {bound} pages");
}

/// Suite case: the first row's bytes copied over rows 4096 and 4097 of a
/// 5,000-event session (the loop of issue 13) are refused at 4096, by the
/// session, run-tree and history reads alike.
pub async fn a_row_copied_over_later_rows_is_corrupt_not_a_loop<S, F, Fut>(
    dir: &Path,
    open: F,
    tamper: &impl Tamper,
) where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let path = dir.join("store");
    let s = open(path.clone()).await.unwrap();
    for start in (1..=5000u64).step_by(1000) {
        let evs = (start..start + 1000)
            .map(|i| event("big", i, "a"))
            .collect();
        s.append(batch("big", start - 1, evs)).await.unwrap();
    }
    let first = bytes_of(&s, "big", 1).await;
    s.close().await.unwrap();
    drop(s);
    tamper.put_row(&path, "big", 4096, &first);
    tamper.put_row(&path, "big", 4097, &first);
    let s = open(path).await.unwrap();
    assert_eq!(
        s.read_session("big", 0, 4095).await.unwrap().events.len(),
        4095
    );
    assert_corrupt(
        s.read_session("big", 4095, 10).await,
        Damage::WrongPosition,
        "big",
        4096,
    );
    assert_corrupt(
        page_all(&s, "big", 10).await,
        Damage::WrongPosition,
        "big",
        4096,
    );
    assert_corrupt(
        s.read_run("big", "r", 4000, 500).await,
        Damage::WrongPosition,
        "big",
        4096,
    );
    assert_corrupt(
        s.read_history("big", &HistoryQuery::default().limit(5000))
            .await,
        Damage::WrongPosition,
        "big",
        4096,
    );
    assert_corrupt(
        s.read_history("big", &HistoryQuery::default().run("r", Some(4090)))
            .await,
        Damage::WrongPosition,
        "big",
        4096,
    );
    let err = s.read_session("big", 4095, 10).await.unwrap_err();
    assert_eq!(err.code(), "corrupt");
    let text = err.to_string();
    assert!(text.contains("`big`") && text.contains("4096"), "{text}");
    s.close().await.unwrap();
}

/// Suite case: a session holding another session's bytes, a row that is
/// no event at all, and a row whose event is not the one its eventId index
/// names are refused where they are.
pub async fn foreign_and_unreadable_rows_are_corrupt<S, F, Fut>(
    dir: &Path,
    open: F,
    tamper: &impl Tamper,
) where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let path = dir.join("store");
    let s = open(path.clone()).await.unwrap();
    for sid in ["a", "b", "c", "d"] {
        let evs = (1..=3).map(|i| event(sid, i, "a")).collect();
        s.append(batch(sid, 0, evs)).await.unwrap();
    }
    let a2 = bytes_of(&s, "a", 2).await;
    s.close().await.unwrap();
    drop(s);
    tamper.put_row(&path, "b", 2, &a2);
    tamper.put_row(&path, "c", 3, b"\xff not an event");
    // A row rewritten with another event of its own position: the eventId
    // index still names the old id.
    tamper.put_row(&path, "d", 3, &event("d", 3, "z").bytes);
    let s = open(path).await.unwrap();
    let id = |sid: &str, seq: u64| event(sid, seq, "a").event_id;
    assert_corrupt(
        s.find_events("b", &[id("b", 2).as_str()]).await,
        Damage::ForeignSession,
        "b",
        2,
    );
    assert_corrupt(
        s.find_events("c", &[id("c", 3).as_str()]).await,
        Damage::Unreadable,
        "c",
        3,
    );
    assert_corrupt(
        s.find_events("d", &[id("d", 1).as_str(), id("d", 3).as_str()])
            .await,
        Damage::WrongEventId,
        "d",
        3,
    );
    assert_eq!(s.read_session("a", 0, 10).await.unwrap().events.len(), 3);
    assert_corrupt(
        s.read_session("b", 0, 10).await,
        Damage::ForeignSession,
        "b",
        2,
    );
    assert_corrupt(
        s.read_run("b", "r", 0, 10).await,
        Damage::ForeignSession,
        "b",
        2,
    );
    assert_corrupt(s.read_session("c", 2, 10).await, Damage::Unreadable, "c", 3);
    s.close().await.unwrap();
}

/// Instantiates the damaged-store suite for one backend: `$open` as in
/// [`store_suite!`](crate::store_suite), `$tamper` a [`Tamper`] value.
#[macro_export]
macro_rules! damage_suite {
    ($open:expr, $tamper:expr) => {
        $crate::damage_suite!($open, $tamper, unless true);
    };
    ($open:expr, $tamper:expr, unless $ready:expr) => {
        $crate::damage_suite!(@cases $open, $tamper, $ready; a_row_copied_over_later_rows_is_corrupt_not_a_loop, foreign_and_unreadable_rows_are_corrupt);
    };
    (@cases $open:expr, $tamper:expr, $ready:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                if !$ready {
                    return;
                }
                let dir = ::tempfile::tempdir().unwrap();
                $crate::damage::$name(dir.path(), $open, &$tamper).await;
            }
        )*
    };
}

/// What the random-damage tests store before damaging the file: sessions
/// `a` to `d`, 600 events each, appended in batches of 200.
pub async fn fill_for_scramble<S: Store>(s: &S) {
    for sid in ["a", "b", "c", "d"] {
        for start in (1..=600u64).step_by(200) {
            let evs = (start..start + 200).map(|i| event(sid, i, "x")).collect();
            s.append(batch(sid, start - 1, evs)).await.unwrap();
        }
    }
}

/// Deterministic random damage of a file's bytes: one to four runs of up
/// to 64 random bytes, anywhere past the first 64 (xorshift64* seeded by
/// `seed`, so every run of a test damages the same way).
pub fn scramble(original: &[u8], seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut bytes = original.to_vec();
    if bytes.len() <= 64 {
        return bytes;
    }
    for _ in 0..(1 + next() % 4) {
        let at = 64 + (next() as usize) % (bytes.len() - 64);
        let len = 1 + (next() as usize) % 64;
        for b in bytes.iter_mut().skip(at).take(len) {
            *b = next() as u8;
        }
    }
    bytes
}
