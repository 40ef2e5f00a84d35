//! A store holding an open interrupt, a pending client token, a queued
//! start, a timer record, a snapshot and a workspace watch stream is
//! migrated (`narad_store::migrate`) to every backend — redb, SQLite, and
//! PostgreSQL when `NARAD_TEST_POSTGRES_URL` is set — and an engine on the
//! target continues every one of them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{assert_valid, me};
use narad_engine::client::Finished;
use narad_engine::{
    Engine, EngineConfig, Interrupt, NewSession, Resolve, StartRun, Started, Terminal,
};
use narad_store::migrate::{compare, copy_all, MigrateError};
use narad_store::{Batch, Expect, SideSpace, SideWrite, Store};
use narad_store_redb::RedbStore;
use serde_json::{json, Value};

const WORKSPACE: &str = "ws-migrate";
const TIMER_KEY: &str = "00000000001780000600/timer-under-test";

fn config() -> EngineConfig {
    EngineConfig {
        token_ttl: Duration::from_secs(600),
        // A snapshot record exists too.
        snapshot_every: 2,
        ..EngineConfig::default()
    }
}

fn engine_on<S: Store + 'static>(store: S) -> Engine<S> {
    common::configured(store, config())
}

fn started(s: Started) -> String {
    match s {
        Started::Running(r) | Started::Queued(r) => r,
    }
}

fn finished() -> Terminal {
    Terminal::Finished {
        usage: None,
        artifact_ids: vec![],
    }
}

/// What the source holds, to continue on the target.
struct Open {
    interrupt: String,
    execute: Value,
    busy: (String, String),
    queued: String,
    watch_head: u64,
    /// A message recorded under an idempotency key: `(session, messageId)`.
    keyed: (String, String),
}

async fn fill(e: &Engine<RedbStore>) -> Open {
    let interrupted = e
        .create_session(
            &me(),
            NewSession {
                workspace_id: Some(WORKSPACE.into()),
                ..NewSession::default()
            },
        )
        .await
        .unwrap();
    let keyed = e
        .idempotent("turn-1")
        .message(&me(), &interrupted, "hello")
        .await
        .unwrap();
    let run = started(
        e.start_run(&me(), &interrupted, StartRun::default())
            .await
            .unwrap(),
    );
    let (interrupt, _) = e
        .request_interrupt(
            &me(),
            &interrupted,
            Interrupt::on_run(run, "approval", ["approve", "deny"]),
        )
        .await
        .unwrap();
    e.attach_client(&me(), "desk").await.unwrap();
    let client = common::session(e).await;
    let bound = started(
        e.start_run(
            &me(),
            &client,
            StartRun {
                client_executor_id: Some("desk".into()),
                ..StartRun::default()
            },
        )
        .await
        .unwrap(),
    );
    e.start_client_tool_call(&me(), &client, &bound, "open.file", json!({"path": "a"}))
        .await
        .unwrap();
    // A closed run: its record goes to the store with the next snapshot.
    let child = started(
        e.start_run(&me(), &client, StartRun::child_of(bound.as_str()))
            .await
            .unwrap(),
    );
    e.end_run(&me(), &client, &child, common::finished())
        .await
        .unwrap();
    e.write_snapshot(&me(), &client).await.unwrap();
    let outbox = e.client_outbox("desk");
    let execute = std::iter::from_fn(|| outbox.try_next())
        .map(|b| serde_json::from_slice::<Value>(&b).unwrap())
        .find(|m| m["type"] == "client.tool.execute")
        .unwrap();
    let queue_session = common::session(e).await;
    let first = started(
        e.start_run(&me(), &queue_session, StartRun::default())
            .await
            .unwrap(),
    );
    let Started::Queued(queued) = e
        .start_run(
            &me(),
            &queue_session,
            StartRun {
                queue_if_busy: true,
                ..StartRun::default()
            },
        )
        .await
        .unwrap()
    else {
        panic!("not queued")
    };
    // The durable-timer index is the engine's; a record written directly
    // stands for it here.
    e.store()
        .append(Batch {
            side: vec![SideWrite {
                space: SideSpace::Timer,
                key: TIMER_KEY.into(),
                expect: Expect::Absent,
                value: Some(Bytes::from_static(b"{\"v\":1}")),
            }],
            ..Batch::default()
        })
        .await
        .unwrap();
    // A deleted session: its tombstone migrates too.
    let gone = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    e.delete_session(&me(), &gone, false).await.unwrap();
    let watch = e.store().read_watch(WORKSPACE, 0, 1000).await.unwrap();
    Open {
        interrupt,
        execute,
        busy: (queue_session, first),
        queued,
        watch_head: watch.events.last().unwrap().revision,
        keyed: (interrupted, keyed),
    }
}

async fn migrate_and_continue(source: &RedbStore, open: &Open, target_url: &str) {
    let target = narad_stores::open(target_url).await.unwrap();
    copy_all(source, &target, |_, _, _| {}).await.unwrap();
    // A second run copies no event and changes nothing.
    let again = copy_all(source, &target, |_, _, _| {}).await.unwrap();
    assert_eq!(again.events, 0);
    let tally = compare(source, &target).await.unwrap();
    for space in narad_store::SideSpace::ALL {
        // Every space holds records here, so every one is exercised.
        assert!(
            tally.side.get(&space).copied().unwrap_or(0) > 0,
            "{target_url}: no {} record migrated: {}",
            space.name(),
            tally.summary()
        );
    }
    assert_eq!((tally.workspaces, tally.sessions), (1, 3));
    // The verification compares side spaces, not only journals.
    let stray = SideWrite {
        space: SideSpace::Timer,
        key: "stray".into(),
        expect: Expect::Any,
        value: Some(Bytes::from_static(b"x")),
    };
    target
        .append(Batch {
            side: vec![stray.clone()],
            ..Batch::default()
        })
        .await
        .unwrap();
    match compare(source, &target).await {
        Err(e @ MigrateError::CopyDiffers { .. }) => {
            assert_eq!(e.to_string(), "the copy differs from the source in timer")
        }
        other => panic!("{other:?}"),
    }
    target
        .append(Batch {
            side: vec![SideWrite {
                value: None,
                ..stray
            }],
            ..Batch::default()
        })
        .await
        .unwrap();
    compare(source, &target).await.unwrap();

    let e = engine_on(target);
    // A retry of the keyed message answers its original id, appending nothing.
    let (ksid, kid) = &open.keyed;
    let head = e.store().head(ksid).await.unwrap();
    let again = e.idempotent("turn-1").message(&me(), ksid, "hello").await;
    assert_eq!(&again.unwrap(), kid, "{target_url}");
    assert_eq!(e.store().head(ksid).await.unwrap(), head);
    // The open interrupt resolves by id alone.
    e.resolve_interrupt(
        &me(),
        Resolve {
            interrupt_id: open.interrupt.clone(),
            decision: "approve".into(),
            reason: None,
            expected_revision: None,
            members: None,
        },
    )
    .await
    .unwrap();
    // The pending client call finishes with its token.
    let x = &open.execute;
    let fin = serde_json::to_vec(&json!({
        "type": "client.tool.finish", "protocolVersion": "narad/v1",
        "clientExecutorId": x["clientExecutorId"], "leaseId": x["leaseId"],
        "executionToken": x["executionToken"], "toolCallId": x["toolCallId"],
        "outcome": "success", "response": {"ok": true}
    }))
    .unwrap();
    assert_eq!(
        e.client_finish(&me(), &fin).await.unwrap(),
        Finished::Appended,
        "{target_url}"
    );
    // The queued start starts when the slot frees.
    let (sid, first) = &open.busy;
    e.end_run(&me(), sid, first, finished()).await.unwrap();
    let c = assert_valid(&e, sid).await;
    assert!(c.run(sid, &open.queued).is_some(), "{target_url}");
    assert!(e
        .store()
        .list_side(SideSpace::Queue, None, 10)
        .await
        .unwrap()
        .is_empty());
    // The timer record is there.
    assert!(e
        .store()
        .side(SideSpace::Timer, TIMER_KEY)
        .await
        .unwrap()
        .is_some());
    // The watch stream continues with the next revision.
    let interrupted = e.store().list_sessions(None, 10).await.unwrap();
    let mut announced = None;
    for s in &interrupted {
        if let Ok(rev) = e.announce_session(&me(), s, false).await {
            announced = Some(rev);
        }
    }
    assert_eq!(announced, Some(open.watch_head + 1), "{target_url}");
    e.store().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_store_continues_everything_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let source = engine_on(
        RedbStore::open(dir.path().join("source.redb"))
            .await
            .unwrap(),
    );
    let open = fill(&source).await;
    let mut targets = vec![
        format!("redb:{}", dir.path().join("target.redb").display()),
        format!("sqlite:{}", dir.path().join("target.sqlite").display()),
    ];
    if let Some(url) = common::postgres_url() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let sep = if url.contains('?') { '&' } else { '?' };
        targets.push(format!("{url}{sep}schema=migrate_{nanos}"));
    }
    for url in &targets {
        migrate_and_continue(source.store(), &open, url).await;
    }
}
