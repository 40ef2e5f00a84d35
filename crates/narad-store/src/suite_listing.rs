//! Suite cases for the listing reads that migration, timers and the queue
//! rely on: side records by space and workspaces with a watch stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::suite::{batch, event, watch_in};
use crate::{Expect, SideSpace, SideWrite, Store, StoreError};

fn put(space: SideSpace, key: &str, value: &str) -> SideWrite {
    SideWrite {
        space,
        key: key.into(),
        expect: Expect::Absent,
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
    }
}

/// Suite case `side_records_and_workspaces_list_in_byte_order`.
pub async fn side_records_and_workspaces_list_in_byte_order<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    // Keys chosen so that byte order differs from a locale's order.
    let keys = ["B", "a", "a\u{1}x", "a-b", "b", "\u{e9}"];
    let mut b = batch("s", 0, vec![event("s", 1, "a")]);
    for k in keys {
        b.side.push(put(SideSpace::Timer, k, k));
    }
    b.side.push(put(SideSpace::Queue, "q", "other space"));
    b.side.push(put(SideSpace::Interrupt, "zz", "other space"));
    b.watch
        .push(watch_in("ws-b", "session.created", "w1", 1, "s"));
    s.append(b).await.unwrap();
    let mut b = batch("t", 0, vec![event("t", 1, "a")]);
    b.watch
        .push(watch_in("ws-a", "session.created", "w2", 1, "t"));
    b.watch
        .push(watch_in("ws-a", "session.created", "w3", 2, "t"));
    s.append(b).await.unwrap();

    let mut sorted: Vec<&str> = keys.to_vec();
    sorted.sort_unstable_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    // Paged two at a time, from the last key seen.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = s
            .list_side(SideSpace::Timer, after.as_deref(), 2)
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 2);
        for (k, v) in &page {
            assert_eq!(k.as_bytes(), v.as_ref(), "value belongs to its key");
            seen.push(k.clone());
        }
        after = page.last().map(|(k, _)| k.clone());
    }
    assert_eq!(seen, sorted);
    assert_eq!(
        s.list_side(SideSpace::Queue, None, 10).await.unwrap(),
        vec![("q".to_owned(), Bytes::from_static(b"other space"))]
    );
    assert!(s
        .list_side(SideSpace::Lease, None, 10)
        .await
        .unwrap()
        .is_empty());
    // A deleted record is gone from the listing.
    let mut b = batch("s", 1, vec![event("s", 2, "a")]);
    b.side.push(SideWrite {
        space: SideSpace::Timer,
        key: "b".into(),
        expect: Expect::Equals(Bytes::from_static(b"b")),
        value: None,
    });
    s.append(b).await.unwrap();
    let left: Vec<String> = s
        .list_side(SideSpace::Timer, None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(left.len(), keys.len() - 1);
    assert!(!left.iter().any(|k| k == "b"));

    assert_eq!(
        s.list_workspaces(None, 10).await.unwrap(),
        vec!["ws-a".to_owned(), "ws-b".to_owned()]
    );
    assert_eq!(
        s.list_workspaces(Some("ws-a"), 10).await.unwrap(),
        vec!["ws-b".to_owned()]
    );
    assert_eq!(s.list_workspaces(None, 1).await.unwrap(), vec!["ws-a"]);
}

/// Letters from a fixed pseudo-random sequence: an id no compression
/// shortens (as a long random id a host mints would be).
fn letters(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

/// Suite case `any_id_the_protocol_allows_is_kept_listed_and_announced`:
/// an id is any non-empty string (the published schema's only rule), so
/// one holding U+0000, a non-ASCII one, one of 9,000 bytes and long ones
/// sharing their first 1,100 bytes are each a session, an event id, a side
/// key and a workspace on every backend: read back, listed in byte order
/// (paged), and announced to subscribers by their exact id.
pub async fn any_id_the_protocol_allows_is_kept_listed_and_announced<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let mut sub = s.subscribe();
    let shared = letters(1, 1100);
    let mut ids: Vec<String> = ["B", "a", "a-b", "a_c", "\u{e9}", "nul\u{0}id", "\u{0}"]
        .map(String::from)
        .to_vec();
    ids.extend([
        letters(2, 3000),
        letters(3, 9000),
        format!("{shared}x"),
        format!("{shared}a"),
        shared.clone(),
    ]);
    for id in &ids {
        let mut b = batch(id, 0, vec![event(id, 1, "a")]);
        b.side.push(put(SideSpace::Timer, id, id));
        b.watch
            .push(watch_in(id, "session.created", &format!("w-{id}"), 1, id));
        s.append(b).await.unwrap();
        assert_eq!(s.head(id).await.unwrap(), 1);
        assert_eq!(
            s.read_session(id, 0, 10).await.unwrap().events,
            vec![event(id, 1, "a")]
        );
        let found = s.find_events(id, &[&format!("{id}-e1-a")]).await.unwrap();
        assert_eq!(found, vec![event(id, 1, "a")]);
        assert_eq!(
            s.side(SideSpace::Timer, id).await.unwrap().as_deref(),
            Some(id.as_bytes())
        );
        assert_eq!(s.read_watch(id, 0, 10).await.unwrap().events.len(), 1);
        // The session's commit is heard by its exact id (a workspace's
        // notice may come first or after).
        let mut heard = Vec::new();
        while heard.len() < 2 {
            heard.push(super::suite::next_commit(&mut sub).await);
        }
        assert!(
            heard.contains(&crate::Commit::Session {
                session_id: id.as_str().into(),
                head: 1
            }),
            "{heard:?}"
        );
    }
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    let (mut sessions, mut keys, mut workspaces) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let page = s
            .list_sessions(sessions.last().map(String::as_str), 3)
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        sessions.extend(page);
    }
    loop {
        let after = keys.last().map(String::as_str);
        let page = s.list_side(SideSpace::Timer, after, 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        keys.extend(page.into_iter().map(|(k, _)| k));
    }
    loop {
        let page = s
            .list_workspaces(workspaces.last().map(String::as_str), 3)
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        workspaces.extend(page);
    }
    assert!(sessions == sorted, "sessions out of byte order");
    assert!(keys == sorted, "side keys out of byte order");
    assert!(workspaces == sorted, "workspaces out of byte order");
}

/// Suite case `every_space_migrates_to_another_store`: a store holding
/// journals, a record in every side space and two watch streams is copied
/// by [`crate::migrate::copy_all`] to another store of the same backend;
/// [`crate::migrate::compare`] finds them equal in every part, a repeat
/// copies nothing, and the copy continues: the next event, the next watch
/// revision, and a conditional write on each migrated record's exact bytes.
pub async fn every_space_migrates_to_another_store<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    use crate::migrate::{compare, copy_all, MigrateError};
    let from = open(dir.join("source")).await.unwrap();
    let mut b = batch("s", 0, vec![event("s", 1, "a"), event("s", 2, "a")]);
    for space in SideSpace::ALL {
        b.side
            .push(put(space, &format!("k-{}", space.name()), space.name()));
    }
    b.watch
        .push(watch_in("ws-a", "session.created", "w1", 1, "s"));
    from.append(b).await.unwrap();
    let mut b = batch("t", 0, vec![event("t", 1, "a")]);
    b.watch
        .push(watch_in("ws-b", "session.created", "w2", 5, "t"));
    from.append(b).await.unwrap();

    let to = open(dir.join("target")).await.unwrap();
    let copied = copy_all(&from, &to, |_, _, _| {}).await.unwrap();
    assert_eq!((copied.sessions, copied.events), (2, 3));
    let tally = compare(&from, &to).await.unwrap();
    for space in SideSpace::ALL {
        assert_eq!(tally.side.get(&space), Some(&1), "{}", space.name());
    }
    assert_eq!((tally.workspaces, tally.watch_events), (2, 2));
    assert_eq!(copy_all(&from, &to, |_, _, _| {}).await.unwrap().events, 0);
    compare(&from, &to).await.unwrap();

    // The copy continues where the source stood.
    let mut b = batch("s", 2, vec![event("s", 3, "a")]);
    for space in SideSpace::ALL {
        b.side.push(SideWrite {
            space,
            key: format!("k-{}", space.name()),
            expect: Expect::Equals(Bytes::copy_from_slice(space.name().as_bytes())),
            value: None,
        });
    }
    b.watch
        .push(watch_in("ws-a", "session.created", "w3", 2, "s"));
    assert_eq!(to.append(b).await.unwrap().head, 3);
    // Now they differ, and the comparison names where.
    assert!(matches!(
        compare(&from, &to).await,
        Err(MigrateError::CopyDiffers { .. })
    ));
    // A target holding another journal for a session is refused.
    let other = open(dir.join("other")).await.unwrap();
    other
        .append(batch("s", 0, vec![event("s", 1, "b")]))
        .await
        .unwrap();
    assert!(matches!(
        copy_all(&from, &other, |_, _, _| {}).await,
        Err(MigrateError::TargetDiffers { .. })
    ));
}
