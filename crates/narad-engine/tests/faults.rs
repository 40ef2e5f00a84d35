//! The engine over a real store (redb and SQLite files) wrapped in
//! [`FaultStore`]: appends and reads fail, hang, or commit and then report
//! an error (a failed fsync, either side of the write). After every fault,
//! the real file is reopened and compared with what the engine answered.
//!
//! Shown: no acknowledged event is lost or stored twice; no batch is partly
//! written; an unknown outcome is never reported as success; the engine
//! stays usable (the next commands succeed and its state equals a replay of
//! the file); a hung call blocks its own session only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::me;
use narad_core::checker::Checker;
use narad_engine::{
    Engine, EngineConfig, Interrupt, NewSession, Resolve, StartRun, Started, Terminal, ToolOutcome,
};
use narad_store::fault::{Fault, FaultStore, Method, Rule};
use narad_store::Store;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy)]
enum Backend {
    Redb,
    Sqlite,
}

/// Opens the real store behind the wrapper: both backends, one code path.
async fn open(backend: Backend, path: &Path) -> Box<dyn Store> {
    match backend {
        Backend::Redb => Box::new(narad_store_redb::RedbStore::open(path).await.unwrap()),
        Backend::Sqlite => Box::new(narad_store_sqlite::SqliteStore::open(path).await.unwrap()),
    }
}

/// `Box<dyn Store>` as a `Store` the engine can own.
struct Boxed(Box<dyn Store>);

#[async_trait::async_trait]
impl Store for Boxed {
    async fn append(
        &self,
        b: narad_store::Batch,
    ) -> Result<narad_store::Appended, narad_store::StoreError> {
        self.0.append(b).await
    }
    async fn head(&self, s: &str) -> Result<u64, narad_store::StoreError> {
        self.0.head(s).await
    }
    async fn read_session(
        &self,
        s: &str,
        a: u64,
        l: usize,
    ) -> Result<narad_store::Page, narad_store::StoreError> {
        self.0.read_session(s, a, l).await
    }
    async fn find_events(
        &self,
        s: &str,
        ids: &[&str],
    ) -> Result<Vec<narad_store::StoredEvent>, narad_store::StoreError> {
        self.0.find_events(s, ids).await
    }
    async fn read_run(
        &self,
        s: &str,
        r: &str,
        a: u64,
        l: usize,
    ) -> Result<narad_store::Page, narad_store::StoreError> {
        self.0.read_run(s, r, a, l).await
    }
    async fn read_workflow(
        &self,
        s: &str,
        w: &str,
        a: u64,
        l: usize,
    ) -> Result<narad_store::Page, narad_store::StoreError> {
        self.0.read_workflow(s, w, a, l).await
    }
    async fn list_sessions(
        &self,
        a: Option<&str>,
        l: usize,
    ) -> Result<Vec<String>, narad_store::StoreError> {
        self.0.list_sessions(a, l).await
    }
    async fn side(
        &self,
        sp: narad_store::SideSpace,
        k: &str,
    ) -> Result<Option<bytes::Bytes>, narad_store::StoreError> {
        self.0.side(sp, k).await
    }
    async fn list_side(
        &self,
        sp: narad_store::SideSpace,
        a: Option<&str>,
        l: usize,
    ) -> Result<Vec<(String, bytes::Bytes)>, narad_store::StoreError> {
        self.0.list_side(sp, a, l).await
    }
    async fn list_workspaces(
        &self,
        a: Option<&str>,
        l: usize,
    ) -> Result<Vec<String>, narad_store::StoreError> {
        self.0.list_workspaces(a, l).await
    }
    async fn read_watch(
        &self,
        w: &str,
        a: u64,
        l: usize,
    ) -> Result<narad_store::WatchPage, narad_store::StoreError> {
        self.0.read_watch(w, a, l).await
    }
    fn subscribe(&self) -> narad_store::Subscription {
        self.0.subscribe()
    }
    async fn close(&self) -> Result<(), narad_store::StoreError> {
        self.0.close().await
    }
}

type Faulty = FaultStore<Boxed>;

fn path(dir: &Path, backend: Backend) -> PathBuf {
    dir.join(match backend {
        Backend::Redb => "faults.redb",
        Backend::Sqlite => "faults.sqlite",
    })
}

async fn engine(backend: Backend, dir: &Path, snapshot_every: u64) -> Engine<Faulty> {
    let store = FaultStore::new(Boxed(open(backend, &path(dir, backend)).await));
    let config = EngineConfig {
        snapshot_every,
        ..EngineConfig::default()
    };
    common::configured(store, config)
}

/// What the caller was told: every acknowledged fact, by its id.
#[derive(Debug, Default)]
struct Acked {
    runs: Vec<String>,
    tools: Vec<String>,
    finished_tools: Vec<String>,
    messages: Vec<String>,
    interrupts: Vec<String>,
    resolved: Vec<String>,
    ended: Vec<String>,
    errors: usize,
    codes: Vec<&'static str>,
}

fn noted<T>(acked: &mut Acked, r: Result<T, narad_engine::EngineError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            // A fault is a store error, or a refusal decided on a journal
            // the unknown outcome already moved on; never a success.
            assert!(!e.code().is_empty());
            acked.errors += 1;
            acked.codes.push(e.code());
            None
        }
    }
}

/// A session's life: a run with tool calls, messages, an interrupt (two
/// events in one batch) and its resolution, then the run's end.
async fn script(e: &Engine<Faulty>, sid: &str, acked: &mut Acked) {
    let run = match noted(acked, e.start_run(&me(), sid, StartRun::default()).await) {
        Some(Started::Running(r)) => r,
        _ => return,
    };
    acked.runs.push(run.clone());
    for i in 0..3 {
        if let Some(t) = noted(
            acked,
            e.start_tool_call(&me(), sid, &run, "search", json!({ "i": i }))
                .await,
        ) {
            acked.tools.push(t.clone());
            let done = e
                .finish_tool_call(&me(), sid, &t, ToolOutcome::success(json!(i)))
                .await;
            if noted(acked, done).is_some() {
                acked.finished_tools.push(t);
            }
        }
        if let Some(m) = noted(acked, e.message(&me(), sid, json!(format!("m{i}"))).await) {
            acked.messages.push(m);
        }
    }
    let interrupt = Interrupt::on_run(run.clone(), "approval", ["approve"]);
    if let Some((iid, _)) = noted(acked, e.request_interrupt(&me(), sid, interrupt).await) {
        acked.interrupts.push(iid.clone());
        let resolve = Resolve {
            interrupt_id: iid.clone(),
            decision: "approve".into(),
            reason: None,
            expected_revision: None,
            members: None,
        };
        if noted(acked, e.resolve_interrupt(&me(), resolve).await).is_some() {
            acked.resolved.push(iid);
        }
    }
    let end = Terminal::Finished {
        usage: None,
        artifact_ids: vec![],
    };
    if noted(acked, e.end_run(&me(), sid, &run, end).await).is_some() {
        acked.ended.push(run);
    }
}

/// The stored journal of `sid`, read from a freshly opened real store.
async fn reopened(backend: Backend, dir: &Path, sid: &str) -> Vec<Value> {
    let store = open(backend, &path(dir, backend)).await;
    let page = store.read_session(sid, 0, usize::MAX).await.unwrap();
    store.close().await.unwrap();
    page.events
        .iter()
        .map(|ev| serde_json::from_slice(&ev.bytes).unwrap())
        .collect()
}

fn count(journal: &[Value], ty: &str, field: &str, id: &str) -> usize {
    journal
        .iter()
        .filter(|v| v["type"] == ty && v[field] == id)
        .count()
}

/// Every acknowledged fact is stored exactly once; the stored journal is
/// valid as a whole (so every batch is whole: an interrupt without its
/// pause is refused by the checker); the engine's state is the replay's.
async fn verify(e: &Engine<Faulty>, backend: Backend, dir: &Path, sid: &str, acked: &Acked) {
    let engine_state = e.state_json(&me(), sid).await.unwrap();
    e.store().close().await.unwrap();
    let journal = reopened(backend, dir, sid).await;
    let mut c = Checker::default();
    for (i, v) in journal.iter().enumerate() {
        if let Err(r) = c.push_bytes(&serde_json::to_vec(v).unwrap()) {
            panic!("stored event {} refused: {r}", i + 1);
        }
    }
    assert_eq!(
        c.state_json(sid).unwrap(),
        engine_state,
        "engine state is not the replay's"
    );
    let once = |ty: &str, field: &str, ids: &[String]| {
        for id in ids {
            assert_eq!(
                count(&journal, ty, field, id),
                1,
                "{ty} {id}: acknowledged, stored {} times",
                count(&journal, ty, field, id)
            );
        }
    };
    once("run.started", "runId", &acked.runs);
    once("tool.call.started", "toolCallId", &acked.tools);
    once("tool.call.finished", "toolCallId", &acked.finished_tools);
    once("message.user.recorded", "messageId", &acked.messages);
    once("interrupt.requested", "interruptId", &acked.interrupts);
    once("interrupt.resolved", "interruptId", &acked.resolved);
    once("run.finished", "runId", &acked.ended);
    // Nothing is stored twice, acknowledged or not.
    for (ty, field) in [
        ("tool.call.started", "toolCallId"),
        ("message.user.recorded", "messageId"),
        ("interrupt.requested", "interruptId"),
    ] {
        for v in journal.iter().filter(|v| v["type"] == ty) {
            let id = v[field].as_str().unwrap();
            assert_eq!(count(&journal, ty, field, id), 1, "{ty} {id} stored twice");
        }
    }
}

/// One run of the script with `rule` injected after the session exists.
async fn one(backend: Backend, snapshot_every: u64, rule: Rule) -> (Acked, u64) {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(backend, dir.path(), snapshot_every).await;
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    let base = e.store().calls(rule.method);
    e.store().add(Rule {
        nth: base + rule.nth,
        ..rule
    });
    let mut acked = Acked::default();
    script(&e, &sid, &mut acked).await;
    let injected = e.store().injected();
    e.store().clear();
    // Usable after the fault: a new command succeeds.
    let m = e.message(&me(), &sid, json!("after")).await.unwrap();
    acked.messages.push(m);
    verify(&e, backend, dir.path(), &sid, &acked).await;
    (acked, injected)
}

async fn append_faults(backend: Backend, snapshot_every: u64) {
    // The script makes about 13 appends; every one of them is hit once,
    // and also for longer than the engine's redeliveries last.
    for fault in [Fault::Fail, Fault::CommitThenFail] {
        for times in [1, 8] {
            for nth in 1..=14 {
                let rule = Rule::nth(Method::Append, nth, fault).times(times);
                let (acked, injected) = one(backend, snapshot_every, rule).await;
                assert!(injected > 0 || nth > 12, "{rule:?} injected nothing");
                if times == 1 {
                    // One failed fsync, before or after the write: the
                    // engine redelivers the same batch, the store writes
                    // it or recognizes it, and the caller sees success.
                    assert_eq!(acked.errors, 0, "{rule:?}: {acked:?}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_faults_lose_nothing_acknowledged_on_redb() {
    append_faults(Backend::Redb, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_faults_lose_nothing_acknowledged_on_sqlite() {
    append_faults(Backend::Sqlite, 0).await;
}

/// Every append also carries a reducer snapshot (a side write): the
/// redelivery after an unknown outcome then differs from a pure event
/// redelivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_faults_with_snapshot_side_writes_lose_nothing_on_redb() {
    append_faults(Backend::Redb, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_faults_with_snapshot_side_writes_lose_nothing_on_sqlite() {
    append_faults(Backend::Sqlite, 1).await;
}

/// Reads fail while a cold session hydrates: the command fails with a
/// store error and the next one succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_faults_fail_the_command_and_the_engine_recovers() {
    for backend in [Backend::Redb, Backend::Sqlite] {
        for method in [Method::ReadSession, Method::Side, Method::Head] {
            let dir = tempfile::tempdir().unwrap();
            let sid = {
                let e = engine(backend, dir.path(), 0).await;
                let sid = e
                    .create_session(&me(), NewSession::default())
                    .await
                    .unwrap();
                e.message(&me(), &sid, json!("before")).await.unwrap();
                e.store().close().await.unwrap();
                sid
            };
            // A new engine: the session is cold and hydrates from the store.
            let e = engine(backend, dir.path(), 0).await;
            e.store().add(Rule::nth(method, 1, Fault::Fail).times(3));
            let mut acked = Acked::default();
            let first = e.message(&me(), &sid, json!("during")).await;
            if let Ok(m) = first {
                acked.messages.push(m);
            }
            e.store().clear();
            let m = e.message(&me(), &sid, json!("after")).await.unwrap();
            acked.messages.push(m);
            verify(&e, backend, dir.path(), &sid, &acked).await;
        }
    }
}

/// A batch whose every delivery fails reports the first failure, the
/// cause: a redelivery's error is often only its echo (a redb database
/// refuses every write after a failed one with "Previous I/O error
/// occurred", which hid a full disk's "No space left on device").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_never_lands_reports_its_first_failure() {
    for backend in [Backend::Redb, Backend::Sqlite] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(backend, dir.path(), 0).await;
        let sid = e
            .create_session(&me(), NewSession::default())
            .await
            .unwrap();
        let before = e.store().calls(Method::Append);
        e.store()
            .add(Rule::nth(Method::Append, before + 1, Fault::Fail).times(100));
        let err = e.message(&me(), &sid, json!("lost")).await.unwrap_err();
        assert!(e.store().injected() > 1, "the batch was redelivered");
        assert_eq!(err.to_string(), "storage backend failed: injected fault 1");
        e.store().clear();
        let after = e.message(&me(), &sid, json!("after")).await.unwrap();
        let acked = Acked {
            messages: vec![after],
            ..Acked::default()
        };
        verify(&e, backend, dir.path(), &sid, &acked).await;
    }
}

/// An append that hangs holds its own session only: another session's
/// commands go through meanwhile, and once the caller gives up, the hung
/// session takes commands again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_append_blocks_neither_other_sessions_nor_later_commands() {
    for backend in [Backend::Redb, Backend::Sqlite] {
        for method in [Method::Append, Method::Head] {
            let dir = tempfile::tempdir().unwrap();
            let e = engine(backend, dir.path(), 0).await;
            let a = e
                .create_session(&me(), NewSession::default())
                .await
                .unwrap();
            let b = e
                .create_session(&me(), NewSession::default())
                .await
                .unwrap();
            // Session a's next call of `method` hangs; its caller gives up
            // only once session b's commands went through meanwhile.
            let nth = e.store().calls(method) + 1;
            e.store().add(Rule::nth(method, nth, Fault::Hang));
            let (done, gave_up) = tokio::sync::oneshot::channel::<()>();
            let hung = async {
                let call = async {
                    // `message` on a hydrated session calls `append`; a
                    // read that goes through `head` is `state_json`.
                    match method {
                        Method::Head => e.state_json(&me(), &a).await.map(|_| ()),
                        _ => e.message(&me(), &a, json!("hangs")).await.map(|_| ()),
                    }
                };
                tokio::select! {
                    r = call => Some(r),
                    _ = gave_up => None,
                }
            };
            let other = async {
                while e.store().injected() == 0 {
                    tokio::task::yield_now().await;
                }
                // The deadlock guard: generous, never a speed claim.
                let r = tokio::time::timeout(Duration::from_secs(60), async {
                    let m = e.message(&me(), &b, json!("meanwhile")).await?;
                    e.start_run(&me(), &b, StartRun::default()).await?;
                    Ok::<_, narad_engine::EngineError>(m)
                })
                .await;
                let _ = done.send(());
                r
            };
            let (hung, other) = tokio::join!(hung, other);
            assert!(hung.is_none(), "the hung call returned: {hung:?}");
            assert!(
                matches!(other, Ok(Ok(_))),
                "{backend:?} {method:?}: {other:?}"
            );
            // Once more with a plain caller-side timeout.
            e.store()
                .add(Rule::nth(method, e.store().calls(method) + 1, Fault::Hang));
            let call = async {
                match method {
                    Method::Head => e.state_json(&me(), &a).await.map(|_| ()),
                    _ => e.message(&me(), &a, json!("hangs too")).await.map(|_| ()),
                }
            };
            let timed_out = tokio::time::timeout(Duration::from_millis(100), call).await;
            assert!(timed_out.is_err(), "the hung call returned: {timed_out:?}");
            let again = tokio::time::timeout(
                Duration::from_secs(60),
                e.message(&me(), &a, json!("after")),
            )
            .await;
            assert!(
                matches!(again, Ok(Ok(_))),
                "{backend:?} {method:?}: {again:?}"
            );
        }
    }
}

/// The store side of the lost-answer case: the same batch again, side
/// writes included, is a redelivery (before, a head conflict).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_side_writes_sent_again_is_a_redelivery() {
    for backend in [Backend::Redb, Backend::Sqlite] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(backend, &path(dir.path(), backend)).await;
        let line = br#"{"type":"run.started","protocolVersion":"narad/v1","eventId":"e1","timestamp":"2026-08-05T00:00:01Z","sessionId":"s","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}"#;
        let batch = narad_store::Batch {
            session_id: "s".into(),
            expected_head: 0,
            events: vec![narad_store::StoredEvent::from_stored_bytes(line).unwrap()],
            side: vec![narad_store::SideWrite {
                space: narad_store::SideSpace::Interrupt,
                key: "i1".into(),
                expect: narad_store::Expect::Absent,
                value: Some(bytes::Bytes::from_static(b"s")),
            }],
            watch: Vec::new(),
        };
        let first = store.append(batch.clone()).await.unwrap();
        let again = store.append(batch).await.unwrap();
        assert!(again.redelivered, "{backend:?}: {again:?}");
        assert_eq!((again.head, again.positions), (first.head, first.positions));
        assert_eq!(store.head("s").await.unwrap(), 1);
        store.close().await.unwrap();
    }
}
