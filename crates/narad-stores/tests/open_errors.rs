//! Opening stores: typed errors that name the path, on real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use narad_stores::{open, open_existing, OpenError};

#[tokio::test]
async fn open_errors_are_typed_and_name_the_path() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n);

    for url in ["x.sqlite", "narad.redb", "mysql://h/db", ""] {
        let e = open(url).await.unwrap_err();
        assert_eq!(e.code(), "invalid_url", "{url}: {e}");
        assert!(e.to_string().contains("sqlite:PATH"), "{e}");
    }
    let e = open("mysql://h/db").await.unwrap_err();
    assert_eq!(e.to_string().matches("sqlite:PATH").count(), 1, "{e}");
    let e = open("sqlite::memory:").await.unwrap_err();
    assert!(e.to_string().contains("in-memory"), "{e}");

    let missing = p("nothing.sqlite");
    let e = open_existing(&format!("sqlite:{}", missing.display()))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        OpenError::NotFound {
            path: missing.clone()
        }
    );
    let e = open_existing(&format!("redb:{}", p("nothing.redb").display()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "not_found");
    let nodir = p("no/such/dir/x.redb");
    let e = open(&format!("redb:{}", nodir.display()))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        OpenError::NotFound {
            path: p("no/such/dir")
        },
        "{e}"
    );

    let text = p("notes.txt");
    std::fs::write(&text, "hello, this is not a database at all\n".repeat(200)).unwrap();
    for (scheme, backend) in [("redb", "redb"), ("sqlite", "sqlite")] {
        let e = open(&format!("{scheme}:{}", text.display()))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            OpenError::NotAStore {
                path: text.clone(),
                backend
            },
            "{scheme}: {e}"
        );
    }

    // A directory is not a store; a device the backend cannot open is
    // named, with the backend's own code (SQLite reads /dev/null as an
    // empty database, which holds no store).
    for (scheme, backend) in [("redb", "redb"), ("sqlite", "sqlite")] {
        let e = open(&format!("{scheme}:{}", d.path().display()))
            .await
            .unwrap_err();
        let path = d.path().to_owned();
        assert_eq!(e, OpenError::NotAStore { path, backend }, "{e}");
        #[cfg(target_os = "linux")]
        {
            let e = open_existing(&format!("{scheme}:/dev/null"))
                .await
                .unwrap_err();
            if backend == "sqlite" {
                let path = "/dev/null".into();
                assert_eq!(e, OpenError::NotAStore { path, backend }, "{e}");
                continue;
            }
            assert!(matches!(e, OpenError::Unopenable { .. }), "{e:?}");
            assert_eq!(e.code(), "backend");
            assert!(e.to_string().starts_with("cannot open /dev/null: "), "{e}");
        }
    }

    // An empty file is no store to read, and becomes one only where a
    // store may be created; it is not written by a refused open.
    for (scheme, backend) in [("redb", "redb"), ("sqlite", "sqlite")] {
        let empty = p(&format!("empty.{scheme}"));
        std::fs::write(&empty, b"").unwrap();
        let url = format!("{scheme}:{}", empty.display());
        let e = open_existing(&url).await.unwrap_err();
        let path = empty.clone();
        assert_eq!(e, OpenError::NotAStore { path, backend }, "{e}");
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "{scheme}");
        let store = open(&url).await.unwrap();
        narad_store::Store::close(&store).await.unwrap();
        assert!(open_existing(&url).await.is_ok(), "{scheme}");
    }

    let held = p("held.redb");
    let url = format!("redb:{}", held.display());
    let _first = open(&url).await.unwrap();
    let e = open(&url).await.unwrap_err();
    assert_eq!(e, OpenError::Locked { path: held.clone() }, "{e}");
    assert!(e.to_string().contains("sqlite: or postgres://"), "{e}");
}
