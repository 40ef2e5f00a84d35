//! Suite case for a file backend opened read-only: every read answers as
//! the writable store's, every append is refused with
//! [`StoreError::ReadOnly`], and nothing is written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};

use crate::suite::{batch, event};
use crate::{SideSpace, Store, StoreError};

/// Suite case `a_store_opened_read_only_reads_and_refuses_every_write`;
/// `open` opens writable, `read_only` read-only.
pub async fn a_store_opened_read_only_reads_and_refuses_every_write<S, R, F, Fut, G, Gut>(
    dir: &Path,
    open: F,
    read_only: G,
) where
    S: Store + 'static,
    R: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
    G: Fn(PathBuf) -> Gut,
    Gut: Future<Output = Result<R, StoreError>>,
{
    let path = dir.join("store");
    // No file: nothing is created.
    assert!(matches!(
        read_only(path.clone()).await.err(),
        Some(StoreError::NotFound { .. })
    ));
    assert!(!path.exists());
    let s = open(path.clone()).await.unwrap();
    let mut b = batch("s", 0, vec![event("s", 1, "a"), event("s", 2, "a")]);
    b.side.push(crate::SideWrite {
        space: SideSpace::Timer,
        key: "k".into(),
        expect: crate::Expect::Absent,
        value: Some(bytes::Bytes::from_static(b"v")),
    });
    s.append(b).await.unwrap();
    let journal = s.read_session("s", 0, 10).await.unwrap().events;
    s.close().await.unwrap();
    drop(s);
    let bytes_before = std::fs::read(&path).unwrap();

    let r = read_only(path.clone()).await.unwrap();
    assert_eq!(r.read_session("s", 0, 10).await.unwrap().events, journal);
    assert_eq!(r.head("s").await.unwrap(), 2);
    assert_eq!(r.list_sessions(None, 10).await.unwrap(), ["s"]);
    assert_eq!(
        r.side(SideSpace::Timer, "k").await.unwrap().as_deref(),
        Some(&b"v"[..])
    );
    for b in [
        batch("s", 2, vec![event("s", 3, "a")]),
        batch("t", 0, vec![event("t", 1, "a")]),
    ] {
        let refused = r.append(b).await.unwrap_err();
        assert_eq!(refused, StoreError::ReadOnly);
        assert_eq!(refused.code(), "read_only");
    }
    assert_eq!(r.head("s").await.unwrap(), 2);
    assert_eq!(r.head("t").await.unwrap(), 0);
    r.close().await.unwrap();
    drop(r);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes_before,
        "the file changed"
    );
}
