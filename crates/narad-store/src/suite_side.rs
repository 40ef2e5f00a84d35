//! Suite case for side values of several MiB (a long session's reducer
//! snapshot): written, replaced by a smaller and a larger one, compared,
//! listed among small ones, reopened and deleted, each exactly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::suite::batch;
use crate::{Expect, SideSpace, SideWrite, Store, StoreError};

/// `n` bytes that differ from every other call's (`seed`) at every offset
/// a chunk boundary could fall on.
fn value(n: usize, seed: u8) -> Bytes {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed)
        .collect::<Vec<u8>>()
        .into()
}

fn write(key: &str, expect: Expect, value: Option<Bytes>) -> SideWrite {
    SideWrite {
        space: SideSpace::Snapshot,
        key: key.into(),
        expect,
        value,
    }
}

/// Suite case `large_side_values_are_kept_whole`.
pub async fn large_side_values_are_kept_whole<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    const MIB: usize = 1 << 20;
    let s = open(dir.join("store")).await.unwrap();
    let side = |key: &'static str| {
        let s = &s;
        async move { s.side(SideSpace::Snapshot, key).await.unwrap() }
    };
    let put = |w: Vec<SideWrite>| {
        let s = &s;
        async move {
            let mut b = batch("s", 0, Vec::new());
            b.side = w;
            s.append(b).await
        }
    };
    // Sizes on both sides of 1 MiB and of a chunk, and far past them.
    let (big, bigger, small) = (
        value(5 * MIB + 3, 1),
        value(9 * MIB - 1, 2),
        value(MIB - 1, 3),
    );
    put(vec![
        write("a", Expect::Absent, Some(value(10, 4))),
        write("m", Expect::Absent, Some(big.clone())),
        write("z", Expect::Absent, Some(value(MIB, 5))),
    ])
    .await
    .unwrap();
    assert_eq!(side("m").await, Some(big.clone()));
    assert_eq!(side("z").await, Some(value(MIB, 5)));

    // A condition on a large value compares all of it.
    let mut stale = big.to_vec();
    stale[3 * MIB] ^= 1;
    assert_eq!(
        put(vec![write(
            "m",
            Expect::Equals(stale.into()),
            Some(small.clone())
        )])
        .await,
        Err(StoreError::SideConflict)
    );
    assert_eq!(side("m").await, Some(big.clone()));
    put(vec![write(
        "m",
        Expect::Equals(big.clone()),
        Some(bigger.clone()),
    )])
    .await
    .unwrap();
    assert_eq!(side("m").await, Some(bigger.clone()));
    put(vec![write(
        "m",
        Expect::Equals(bigger.clone()),
        Some(big.clone()),
    )])
    .await
    .unwrap();
    assert_eq!(
        side("m").await,
        Some(big.clone()),
        "a shorter value leaves no tail"
    );

    // Listed in key order among small ones, each whole.
    let listed = s.list_side(SideSpace::Snapshot, None, 10).await.unwrap();
    let keys: Vec<&str> = listed.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["a", "m", "z"]);
    assert_eq!(listed[1].1, big);
    let page = s
        .list_side(SideSpace::Snapshot, Some("a"), 1)
        .await
        .unwrap();
    assert_eq!(page, vec![("m".to_owned(), big.clone())]);
    s.close().await.unwrap();
    drop(s);

    let s = open(dir.join("store")).await.unwrap();
    assert_eq!(
        s.side(SideSpace::Snapshot, "m").await.unwrap(),
        Some(big.clone())
    );
    let mut b = batch("s", 0, Vec::new());
    b.side = vec![
        write("m", Expect::Any, Some(small.clone())),
        write("z", Expect::Any, None),
    ];
    s.append(b).await.unwrap();
    assert_eq!(s.side(SideSpace::Snapshot, "m").await.unwrap(), Some(small));
    assert_eq!(s.side(SideSpace::Snapshot, "z").await.unwrap(), None);
    let mut b = batch("s", 0, Vec::new());
    b.side = vec![write("m", Expect::Any, None)];
    s.append(b).await.unwrap();
    let listed = s.list_side(SideSpace::Snapshot, None, 10).await.unwrap();
    assert_eq!(listed, vec![("a".to_owned(), value(10, 4))]);
}
