//! Idempotency keys on redb, SQLite and PostgreSQL: every command under a
//! key, retried with the same request, appends nothing and answers the
//! original result — after a restart (a new engine on the same file), from
//! another engine over the same store, and after `migrate` to another
//! backend. The same key with another request is `idempotency_conflict`;
//! two concurrent calls with one key append once; a retry after an append
//! whose answer was lost appends nothing; a retry is authorized like the
//! original; deleting the session deletes its keys.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use narad_engine::{
    DocumentKind, Engine, EventScope, Interrupt, NewSession, Patch, Principal, Progress, Resolve,
    StartRun, Started, StopTarget, Terminal, ToolOutcome,
};
use narad_store::{SideSpace, Store};
use narad_stores::AnyStore;
use serde_json::json;

fn me() -> Principal {
    Principal::new("tester")
}

/// Random ids: a retry that ran the command again would answer a new id.
async fn engine(url: &str) -> Engine<AnyStore> {
    Engine::new(narad_stores::open(url).await.unwrap())
}

async fn head<S: Store + 'static>(e: &Engine<S>, sid: &str) -> u64 {
    e.store().head(sid).await.unwrap()
}

fn run_of(s: Started) -> String {
    match s {
        Started::Running(r) => r,
        Started::Queued(r) => panic!("queued {r}"),
    }
}

/// Calls `$call` twice; the second answers the same and appends nothing.
macro_rules! twice {
    ($e:expr, $sid:expr, $call:expr) => {{
        let first = $call.await.unwrap();
        let before = head($e, $sid).await;
        let again = $call.await.unwrap();
        assert_eq!(first, again, "a retry answers the original result");
        assert_eq!(head($e, $sid).await, before, "a retry appends nothing");
        first
    }};
}

/// Every command of the engine under a key, each retried.
async fn every_command_twice(e: &Engine<AnyStore>) -> (String, String) {
    let p = me();
    let sid = twice!(
        e,
        "",
        e.idempotent("create")
            .create_session(&p, NewSession::default())
    );
    assert_eq!(e.list_sessions(&p, None, 100).await.unwrap().len(), 1);
    let msg = twice!(e, &sid, e.idempotent("m1").message(&p, &sid, "hello"));
    let run = run_of(twice!(
        e,
        &sid,
        e.idempotent("run1").start_run(&p, &sid, StartRun::new())
    ));
    let tool = twice!(
        e,
        &sid,
        e.idempotent("t1")
            .start_tool_call(&p, &sid, &run, "search", json!({"q": "lisbon"}))
    );
    twice!(
        e,
        &sid,
        e.idempotent("t1-done").finish_tool_call(
            &p,
            &sid,
            &tool,
            ToolOutcome::success(json!({"hits": 3}))
        )
    );
    // An explicit toolCallId is the call's own key.
    let args = json!({"q": "porto"});
    let named = twice!(
        e,
        &sid,
        e.start_tool_call_with_id(&p, &sid, &run, "call-7", "search", args.clone())
    );
    assert_eq!(named, "call-7");
    let err = e
        .start_tool_call_with_id(&p, &sid, &run, "call-7", "search", json!({"q": "faro"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict");
    // A caller's key named like it is another key.
    let other = e
        .idempotent("toolCallId/call-7")
        .start_tool_call(&p, &sid, &run, "search", args)
        .await
        .unwrap();
    assert_ne!(other, named);
    for id in [&named, &other] {
        e.finish_tool_call(&p, &sid, id, ToolOutcome::cancelled())
            .await
            .unwrap();
    }
    let progress = Progress::new("agent.phase", "Searching");
    twice!(
        e,
        &sid,
        e.idempotent("pr1")
            .record_progress(&p, &sid, &run, progress.clone())
    );
    let rev = twice!(
        e,
        &sid,
        e.idempotent("doc1").put_document(
            &p,
            &sid,
            DocumentKind::State,
            EventScope::Session,
            json!({"step": 1})
        )
    );
    assert_eq!(rev, 1);
    let rev = twice!(
        e,
        &sid,
        e.idempotent("doc2").patch_document(
            &p,
            &sid,
            DocumentKind::State,
            EventScope::Session,
            Patch::new().replace("/step", 2)
        )
    );
    assert_eq!(rev, 2);
    twice!(
        e,
        &sid,
        e.idempotent("c1").record_custom(
            &p,
            &sid,
            EventScope::Run(run.clone()),
            "acme.note",
            json!(1)
        )
    );
    twice!(
        e,
        &sid,
        e.idempotent("r1")
            .record_raw(&p, &sid, EventScope::Session, "text/plain", "aGk=")
    );
    twice!(
        e,
        &sid,
        e.idempotent("v1").append(
            &p,
            &sid,
            "view.opened",
            EventScope::Session,
            json!({"viewId": "v1"})
        )
    );
    let ask = Interrupt::on_run(&run, "approval", ["approve", "deny"])
        .expires_at(SystemTime::now() + Duration::from_secs(3600));
    let (iid, _) = twice!(
        e,
        &sid,
        e.idempotent("i1").request_interrupt(&p, &sid, ask.clone())
    );
    let done = twice!(
        e,
        &sid,
        e.idempotent("i1-yes")
            .resolve_interrupt(&p, Resolve::new(&iid, "approve"))
    );
    assert_eq!(done.session_id, sid);
    let wait = twice!(
        e,
        &sid,
        e.idempotent("p1")
            .pause_run(&p, &sid, &run, "rate limit", false)
    );
    twice!(
        e,
        &sid,
        e.idempotent("p1-go").resume_run(&p, &sid, &run, &wait)
    );
    let until = SystemTime::now() + Duration::from_secs(3600);
    let wait = twice!(
        e,
        &sid,
        e.idempotent("p2")
            .pause_run_until(&p, &sid, &run, "backoff", until)
    );
    twice!(
        e,
        &sid,
        e.idempotent("p2-go").resume_run(&p, &sid, &run, &wait)
    );
    twice!(
        e,
        &sid,
        e.idempotent("end1")
            .end_run(&p, &sid, &run, Terminal::finished())
    );
    let run2 = run_of(twice!(
        e,
        &sid,
        e.idempotent("run2").start_run(&p, &sid, StartRun::new())
    ));
    let stopped = twice!(
        e,
        &sid,
        e.idempotent("stop1").stop(&p, &sid, StopTarget::ActiveRoot)
    );
    assert_eq!(stopped, run2);
    twice!(
        e,
        &sid,
        e.idempotent("wf1").start_workflow(&p, &sid, None, None)
    );
    (sid, msg)
}

async fn refusals(e: &Engine<AnyStore>, sid: &str) {
    let p = me();
    let before = head(e, sid).await;
    let err = e
        .idempotent("m1")
        .message(&p, sid, "goodbye")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict");
    // The message names the key, not the content.
    assert!(!err.to_string().contains("goodbye"), "{err}");
    // The same key for another command is another request.
    let err = e
        .idempotent("m1")
        .start_run(&p, sid, StartRun::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict");
    let err = e.idempotent("").message(&p, sid, "x").await.unwrap_err();
    assert_eq!(err.code(), "invalid_command");
    assert_eq!(head(e, sid).await, before, "a refusal appends nothing");
    // A refused command records nothing: its retry runs (and is refused) again.
    let err = e
        .idempotent("bad-run")
        .end_run(&p, sid, "no-such-run", Terminal::finished())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "unknown_run");
    assert!(e
        .store()
        .list_side(SideSpace::Idempotency, None, 1000)
        .await
        .unwrap()
        .iter()
        .all(|(k, _)| !k.ends_with("/bad-run")));
}

/// Two concurrent calls with one key, on one engine: one append.
async fn concurrent_once(e: &Engine<AnyStore>, sid: &str, key: &str) {
    let p = me();
    let before = head(e, sid).await;
    let (a, b) = tokio::join!(
        e.idempotent(key).message(&p, sid, "same"),
        e.idempotent(key).message(&p, sid, "same"),
    );
    assert_eq!(a.unwrap(), b.unwrap());
    assert_eq!(head(e, sid).await, before + 1);
}

/// After the session is deleted no record of its keys is left.
async fn delete_removes_keys(e: &Engine<AnyStore>, sid: &str) {
    e.delete_session(&me(), sid, true).await.unwrap();
    let left = e
        .store()
        .list_side(SideSpace::Idempotency, None, 1000)
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}

async fn scenario(url: &str, target: &str) {
    let e = engine(url).await;
    let (sid, msg) = every_command_twice(&e).await;
    refusals(&e, &sid).await;
    concurrent_once(&e, &sid, "concurrent").await;
    let stored = head(&e, &sid).await;
    e.close().await.unwrap();
    drop(e);

    // A new engine on the same store: the keys still answer.
    let e = engine(url).await;
    let p = me();
    assert_eq!(
        e.idempotent("m1").message(&p, &sid, "hello").await.unwrap(),
        msg
    );
    assert_eq!(
        e.idempotent("create")
            .create_session(&p, NewSession::default())
            .await
            .unwrap(),
        sid
    );
    assert_eq!(head(&e, &sid).await, stored);

    // The keys survive a migration to another backend.
    let to = narad_stores::open(target).await.unwrap();
    narad_store::migrate::copy_all(e.store(), &to, |_, _, _| {})
        .await
        .unwrap();
    let moved = Engine::new(to);
    assert_eq!(
        moved
            .idempotent("m1")
            .message(&p, &sid, "hello")
            .await
            .unwrap(),
        msg
    );
    assert_eq!(head(&moved, &sid).await, stored);
    let err = moved
        .idempotent("m1")
        .message(&p, &sid, "other")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict");

    delete_removes_keys(&e, &sid).await;
    delete_removes_keys(&moved, &sid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    scenario(&format!("redb:{d}/a.redb"), &format!("sqlite:{d}/b.sqlite")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    scenario(&format!("sqlite:{d}/a.sqlite"), &format!("redb:{d}/b.redb")).await;
}

fn postgres_url() -> Option<String> {
    let url = std::env::var("NARAD_TEST_POSTGRES_URL").ok();
    if url.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "NARAD_TEST_POSTGRES_URL is not set (CI must start a server: .ci/postgres)"
        );
        eprintln!("SKIPPED: NARAD_TEST_POSTGRES_URL is not set");
    }
    url
}

fn with_schema(base: &str, schema: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}schema={schema}_{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_on_postgres() {
    let Some(base) = postgres_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = format!("sqlite:{}/b.sqlite", dir.path().display());
    scenario(&with_schema(&base, "idem_keys"), &target).await;
}

/// Two engines over one store (SQLite and PostgreSQL allow several), one
/// key called on both at once: one append, one answer.
async fn two_engines(url: &str) {
    let a = engine(url).await;
    let b = engine(url).await;
    let p = me();
    let sid = a.create_session(&p, NewSession::default()).await.unwrap();
    for round in 0..8 {
        let key = format!("k{round}");
        let before = head(&a, &sid).await;
        let (x, y) = tokio::join!(
            a.idempotent(&key).message(&p, &sid, "once"),
            b.idempotent(&key).message(&p, &sid, "once"),
        );
        assert_eq!(x.unwrap(), y.unwrap());
        assert_eq!(head(&a, &sid).await, before + 1);
    }
    let (x, y) = tokio::join!(
        a.idempotent("s").create_session(&p, NewSession::default()),
        b.idempotent("s").create_session(&p, NewSession::default()),
    );
    assert_eq!(x.unwrap(), y.unwrap());
    assert_eq!(a.list_sessions(&p, None, 100).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_on_two_engines_over_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    two_engines(&format!("sqlite:{}/a.sqlite", dir.path().display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_on_two_engines_over_postgres() {
    let Some(base) = postgres_url() else {
        return;
    };
    two_engines(&with_schema(&base, "idem_two")).await;
}

/// Without a key nothing changes: a second `message` records twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_a_retry_records_again() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&format!("redb:{}/a.redb", dir.path().display())).await;
    let p = me();
    let sid = e.create_session(&p, NewSession::default()).await.unwrap();
    let a = e.message(&p, &sid, "hi").await.unwrap();
    let b = e.message(&p, &sid, "hi").await.unwrap();
    assert_ne!(a, b);
    assert_eq!(head(&e, &sid).await, 2);
}

/// Writes only for `tester`; anyone may read.
#[derive(Debug)]
struct WritersOnly;

impl narad_engine::Authorizer for WritersOnly {
    fn allows(&self, p: &Principal, action: narad_engine::Action<'_>) -> bool {
        p.0 == "tester" || matches!(action, narad_engine::Action::Read { .. })
    }
}

/// A retry is authorized as the original was: a principal who may not
/// append what the keyed command appended gets no recorded answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_is_authorized_like_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let store = narad_stores::open(&format!("sqlite:{}/a.sqlite", dir.path().display()))
        .await
        .unwrap();
    let e = Engine::with_host(
        store,
        std::sync::Arc::new(narad_engine::SystemClock),
        std::sync::Arc::new(narad_engine::RandomIds),
        std::sync::Arc::new(WritersOnly),
        narad_engine::EngineConfig::default(),
    );
    let sid = e
        .create_session(&me(), NewSession::default())
        .await
        .unwrap();
    e.idempotent("k").message(&me(), &sid, "hi").await.unwrap();
    let eve = Principal::new("eve");
    let err = e
        .idempotent("k")
        .message(&eve, &sid, "hi")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "not_authorized");
    let err = e
        .idempotent("k")
        .create_session(&eve, NewSession::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "not_authorized");
}

/// The append commits but every answer is lost (the call fails): the
/// caller's retry under the key answers the original result and appends
/// nothing, where a retry without one records twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_lost_answer_appends_nothing() {
    use narad_store::fault::{Fault, FaultStore, Method, Rule};
    let dir = tempfile::tempdir().unwrap();
    let real = narad_store_redb::RedbStore::open(dir.path().join("a.redb"))
        .await
        .unwrap();
    let e = Engine::new(FaultStore::new(real));
    let p = me();
    let sid = e.create_session(&p, NewSession::default()).await.unwrap();
    for (key, appends) in [(Some("k"), 1), (None, 2)] {
        let before = head(&e, &sid).await;
        let n = e.store().calls(Method::Append);
        // The next append commits then fails; its redeliveries fail too.
        e.store()
            .add(Rule::nth(Method::Append, n + 1, Fault::CommitThenFail));
        e.store()
            .add(Rule::nth(Method::Append, n + 2, Fault::Fail).times(8));
        let lost = match key {
            Some(k) => e.idempotent(k).message(&p, &sid, "hi").await,
            None => e.message(&p, &sid, "hi").await,
        };
        assert!(lost.is_err(), "the answer was lost");
        e.store().clear();
        let again = match key {
            Some(k) => e.idempotent(k).message(&p, &sid, "hi").await,
            None => e.message(&p, &sid, "hi").await,
        };
        let id = again.unwrap();
        assert_eq!(head(&e, &sid).await, before + appends, "{key:?}");
        // The answer names the message the lost call recorded.
        let first = e.store().read_session(&sid, before, 1).await.unwrap();
        let recorded: serde_json::Value = serde_json::from_slice(&first.events[0].bytes).unwrap();
        assert_eq!(
            recorded["messageId"] == id.as_str(),
            key.is_some(),
            "{key:?}"
        );
    }
}

/// Allows everything, trace events included.
#[derive(Debug)]
struct Debugger;

impl narad_engine::Authorizer for Debugger {
    fn allows(&self, _: &Principal, _: narad_engine::Action<'_>) -> bool {
        true
    }
    fn may_debug(&self, _: &Principal) -> bool {
        true
    }
}

/// Views, attachments, artifacts and spans under a key: a retry answers the
/// original (the same minted id, not a fresh one) and appends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_assets_and_spans_under_a_key_answer_once() {
    use narad_engine::{Asset, AssetStep, Span, SpanEnd, ViewUpdate};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("keys.redb").display());
    let e = Engine::with_host(
        narad_stores::open(&url).await.unwrap(),
        std::sync::Arc::new(narad_engine::SystemClock),
        std::sync::Arc::new(narad_engine::RandomIds),
        std::sync::Arc::new(Debugger),
        narad_engine::EngineConfig::default(),
    );
    let p = me();
    let sid = e.create_session(&p, NewSession::default()).await.unwrap();
    let run = run_of(e.start_run(&p, &sid, StartRun::new()).await.unwrap());
    let at = EventScope::run(&run);
    twice!(
        &e,
        &sid,
        e.idempotent("view")
            .open_view(&p, &sid, &at, "plan", json!({"steps": []}))
    );
    twice!(
        &e,
        &sid,
        e.idempotent("view-2").update_view(
            &p,
            &sid,
            &at,
            "plan",
            ViewUpdate::Replace(json!({"steps": ["search"]}))
        )
    );
    twice!(
        &e,
        &sid,
        e.idempotent("view-3").close_view(&p, &sid, &at, "plan")
    );
    let attachment = twice!(
        &e,
        &sid,
        e.idempotent("att").add_attachment(
            &p,
            &sid,
            EventScope::Session,
            Asset::new().name("photo.png").uri("s3://in/photo.png")
        )
    );
    twice!(
        &e,
        &sid,
        e.idempotent("att-2").update_attachment(
            &p,
            &sid,
            EventScope::Session,
            &attachment,
            AssetStep::Ready
        )
    );
    let artifact = twice!(
        &e,
        &sid,
        e.idempotent("art")
            .add_artifact(&p, &sid, &at, Asset::new().name("summary.md"))
    );
    twice!(
        &e,
        &sid,
        e.idempotent("art-2")
            .update_artifact(&p, &sid, &at, &artifact, AssetStep::Ready)
    );
    let span = twice!(
        &e,
        &sid,
        e.idempotent("span")
            .start_span(&p, &sid, &at, Span::new("llm.call"))
    );
    twice!(
        &e,
        &sid,
        e.idempotent("span-ev").trace_event(
            &p,
            &sid,
            &at,
            Some(&span),
            "llm.first_token",
            serde_json::Map::new()
        )
    );
    twice!(
        &e,
        &sid,
        e.idempotent("span-end")
            .end_span(&p, &sid, &at, &span, SpanEnd::ok())
    );
    // Another request under a used key is refused.
    let err = e
        .idempotent("att")
        .add_attachment(
            &p,
            &sid,
            EventScope::Session,
            Asset::new().name("other.png"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "idempotency_conflict");
    e.close().await.unwrap();
}

/// An interrupt that expires a duration after it is requested is the same
/// request when built again for the retry, and the duration is read on the
/// engine's clock (here a manual one, far from the system clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_in_a_duration_is_the_same_request_on_retry() {
    use narad_engine::{Clock, ManualClock};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redb:{}", dir.path().join("expiry.redb").display());
    let clock = std::sync::Arc::new(ManualClock::at_unix(1_780_000_000));
    let e = Engine::with_host(
        narad_stores::open(&url).await.unwrap(),
        clock.clone(),
        std::sync::Arc::new(narad_engine::RandomIds),
        std::sync::Arc::new(narad_engine::AllowAll),
        narad_engine::EngineConfig::default(),
    );
    let p = me();
    let sid = e.create_session(&p, NewSession::default()).await.unwrap();
    let run = run_of(e.start_run(&p, &sid, StartRun::new()).await.unwrap());
    let ask = || {
        Interrupt::on_run(&run, "approval", ["approve", "deny"])
            .expires_in(Duration::from_secs(600))
    };
    let asked_at = clock.now();
    let first = e
        .idempotent("ask")
        .request_interrupt(&p, &sid, ask())
        .await
        .unwrap();
    let before = head(&e, &sid).await;
    clock.advance(Duration::from_secs(60));
    let again = e
        .idempotent("ask")
        .request_interrupt(&p, &sid, ask())
        .await
        .unwrap();
    assert_eq!(first, again, "the rebuilt request answers the original");
    assert_eq!(head(&e, &sid).await, before, "a retry appends nothing");
    let state = e.state(&p, &sid).await.unwrap();
    let open = state.open_interrupts();
    let (iid, open) = open.first().expect("the interrupt is open");
    assert_eq!(*iid, first.0);
    let due = humantime::format_rfc3339_millis(asked_at + Duration::from_secs(600)).to_string();
    assert_eq!(open.expires_at.as_deref(), Some(due.as_str()));
}
