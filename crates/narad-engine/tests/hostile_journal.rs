//! A stored journal the engine did not write is checked like any input when
//! it is read back: a record that repeats a member name (RFC 7493 §2.3) is
//! refused, on a real redb file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{engine, me, session};
use narad_store::{Batch, Position, Store, StoredEvent};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hydrating_a_record_with_a_repeated_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sid = {
        let e = engine(dir.path()).await;
        let sid = session(&e).await;
        // A first-wins reader sees run.finished; serde_json alone keeps run.started.
        let bytes = format!(
            r#"{{"type":"run.finished","type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:00Z","sessionId":"{sid}","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}}"#
        );
        e.store()
            .append(Batch {
                session_id: sid.clone(),
                expected_head: 0,
                events: vec![StoredEvent {
                    event_id: "e1".into(),
                    position: Position {
                        session_sequence: 1,
                        workflow: None,
                        run: Some(("r".into(), 1)),
                    },
                    bytes: bytes.into(),
                }],
                ..Batch::default()
            })
            .await
            .unwrap();
        e.store().close().await.unwrap();
        sid
    };
    // Refused where the stored bytes are read back (the store parses them
    // with the same strict parse), so the engine never reduces them.
    let e = engine(dir.path()).await;
    assert!(e.state_json(&me(), &sid).await.is_err());
}
