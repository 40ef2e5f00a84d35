//! The shared store suite on PostgreSQL (a real server), plus the checks
//! specific to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

narad_store::store_suite!(common::open, unless common::ready());

/// Exactly what a layout-1 build wrote (layout 2 added the watch tables):
/// ids as `TEXT`.
const LAYOUT_1: &str = "CREATE SCHEMA {s};
     CREATE TABLE {s}.meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
     INSERT INTO {s}.meta VALUES ('schema_version', 1);
     CREATE TABLE {s}.events (
        session TEXT NOT NULL, seq BIGINT NOT NULL, event_id TEXT NOT NULL, bytes BYTEA NOT NULL,
        root TEXT, rseq BIGINT, wf TEXT, wseq BIGINT,
        PRIMARY KEY (session, seq), UNIQUE (session, event_id));
     CREATE UNIQUE INDEX events_run ON {s}.events (session, root, rseq) WHERE root IS NOT NULL;
     CREATE UNIQUE INDEX events_wf ON {s}.events (session, wf, wseq) WHERE wf IS NOT NULL;
     CREATE TABLE {s}.heads (session TEXT PRIMARY KEY, head BIGINT NOT NULL);
     CREATE TABLE {s}.side (space INT NOT NULL, key TEXT NOT NULL, value BYTEA NOT NULL,
        PRIMARY KEY (space, key));";

/// A store an older build wrote (layout 1, ids as text) opens migrated to
/// layout 3 with every row readable and writable; a newer layout is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_from_a_newer_layout_is_refused_and_an_older_one_migrates() {
    if !common::ready() {
        return;
    }
    use narad_store::suite::{batch, event};
    use narad_store::{SideSpace, Store};
    let url = common::url().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = common::schema_for(dir.path());
    let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    c.batch_execute(&LAYOUT_1.replace("{s}", &schema))
        .await
        .unwrap();
    let sessions = ["m", "é-b", "a b"];
    let mut journals = Vec::new();
    for sid in sessions {
        let evs: Vec<_> = (1..=3).map(|i| event(sid, i, "a")).collect();
        for (i, ev) in evs.iter().enumerate() {
            c.execute(
                &format!(
                    "INSERT INTO {schema}.events (session, seq, event_id, bytes, root, rseq)
                     VALUES ($1, $2, $3, $4, 'r', $2)"
                ),
                &[
                    &sid,
                    &(i as i64 + 1),
                    &ev.event_id.as_str(),
                    &ev.bytes.as_ref(),
                ],
            )
            .await
            .unwrap();
        }
        c.execute(
            &format!("INSERT INTO {schema}.heads VALUES ($1, 3)"),
            &[&sid],
        )
        .await
        .unwrap();
        journals.push(evs);
    }
    c.execute(
        &format!("INSERT INTO {schema}.side VALUES ($1, 'key é', 'v')"),
        &[&i32::from(SideSpace::Snapshot.id())],
    )
    .await
    .unwrap();
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    for (sid, evs) in sessions.iter().zip(&journals) {
        assert_eq!(&s.read_session(sid, 0, 10).await.unwrap().events, evs);
        assert_eq!(&s.read_run(sid, "r", 0, 10).await.unwrap().events, evs);
        assert_eq!(s.head(sid).await.unwrap(), 3);
    }
    // Byte order, as every backend lists.
    assert_eq!(
        s.list_sessions(None, 10).await.unwrap(),
        ["a b", "m", "é-b"]
    );
    assert_eq!(
        s.side(SideSpace::Snapshot, "key é")
            .await
            .unwrap()
            .as_deref(),
        Some(&b"v"[..])
    );
    assert!(s.read_watch("ws", 0, 10).await.unwrap().events.is_empty());
    // Writable: the next event, and a redelivered one, as on any store.
    s.append(batch("m", 3, vec![event("m", 4, "a")]))
        .await
        .unwrap();
    assert_eq!(s.head("m").await.unwrap(), 4);
    s.append(batch("m", 4, vec![event("m", 3, "a")]))
        .await
        .unwrap();
    assert_eq!(s.read_session("m", 0, 10).await.unwrap().events.len(), 4);
    s.close().await.unwrap();
    c.batch_execute(&format!(
        "UPDATE {schema}.meta SET value = 99 WHERE name = 'schema_version'"
    ))
    .await
    .unwrap();
    let err = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        narad_store::StoreError::NewerSchema {
            found: 99,
            supported: narad_store_postgres::SCHEMA_VERSION as u32
        }
    );
}
