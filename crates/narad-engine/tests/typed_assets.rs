//! Typed commands for views, attachments, artifacts and trace spans:
//! byte-for-byte the journal the untyped `append` path writes (redb), and
//! their lifecycles and refusals read back typed (SQLite).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{assert_valid, journal, me, session};
use narad_core::checker::Lifecycle;
use narad_engine::{
    Action, AllowAll, Asset, AssetStep, Authorizer, Engine, EventScope, Patch, Principal, Span,
    SpanEnd, StartRun, ViewUpdate,
};
use serde_json::{json, Map, Value};

/// Allows everything, trace events included.
#[derive(Debug)]
struct Debugger;

impl Authorizer for Debugger {
    fn allows(&self, _: &Principal, _: Action<'_>) -> bool {
        true
    }
    fn may_debug(&self, _: &Principal) -> bool {
        true
    }
}

async fn engine(dir: &std::path::Path) -> Engine<narad_store_redb::RedbStore> {
    let store = narad_store_redb::RedbStore::open(dir.join("engine.redb"))
        .await
        .unwrap();
    common::fixed_host(store, Arc::new(Debugger))
}

#[tokio::test]
async fn typed_views_assets_and_spans_write_the_journal_the_untyped_path_writes() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (engine(da.path()).await, engine(db.path()).await);
    let (sa, sb) = (session(&a).await, session(&b).await);
    let ra = a.start_run(&me(), &sa, StartRun::new()).await.unwrap();
    let rb = b.start_run(&me(), &sb, StartRun::new()).await.unwrap();
    let (ra, rb) = (ra.run_id().to_owned(), rb.run_id().to_owned());

    // Typed.
    let s = EventScope::Session;
    let at = EventScope::Run(ra.clone());
    a.open_view(&me(), &sa, s.clone(), "plan", json!({"steps": []}))
        .await
        .unwrap();
    a.update_view(
        &me(),
        &sa,
        s.clone(),
        "plan",
        ViewUpdate::Patch(Patch::new().add("/steps/-", "search")),
    )
    .await
    .unwrap();
    a.update_view(
        &me(),
        &sa,
        s.clone(),
        "plan",
        ViewUpdate::Replace(json!({"done": true})),
    )
    .await
    .unwrap();
    a.close_view(&me(), &sa, s.clone(), "plan").await.unwrap();
    let photo = Asset::new()
        .id("att-1")
        .name("photo.png")
        .media_type("image/png")
        .uri("s3://in/photo.png")
        .size_bytes(2048);
    assert_eq!(
        a.add_attachment(&me(), &sa, s.clone(), photo)
            .await
            .unwrap(),
        "att-1"
    );
    a.update_attachment(&me(), &sa, s.clone(), "att-1", AssetStep::Ready)
        .await
        .unwrap();
    a.update_attachment(&me(), &sa, s.clone(), "att-1", AssetStep::Removed)
        .await
        .unwrap();
    let report = Asset::new()
        .id("art-1")
        .name("report.md")
        .with("sha256", "ab12");
    a.add_artifact(&me(), &sa, at.clone(), report)
        .await
        .unwrap();
    a.update_artifact(
        &me(),
        &sa,
        at.clone(),
        "art-1",
        AssetStep::failed("render_failed", "Could not render."),
    )
    .await
    .unwrap();
    let span = Span::new("llm.call")
        .id("span-1")
        .parent("span-0")
        .attribute("model", "m-large");
    assert_eq!(
        a.start_span(&me(), &sa, at.clone(), span).await.unwrap(),
        "span-1"
    );
    let mut attrs = Map::new();
    attrs.insert("tokens".into(), 1.into());
    a.trace_event(
        &me(),
        &sa,
        at.clone(),
        Some("span-1"),
        "llm.first_token",
        attrs,
    )
    .await
    .unwrap();
    a.end_span(
        &me(),
        &sa,
        at.clone(),
        "span-1",
        SpanEnd::error("timeout").duration_ms(30_000),
    )
    .await
    .unwrap();

    // Untyped: every field by hand.
    let ap = |ty: &'static str, scope: EventScope, body: Value| {
        let (b, sb) = (b.clone(), sb.clone());
        async move { b.append(&me(), &sb, ty, scope, body).await.unwrap() }
    };
    let s = EventScope::Session;
    let at = EventScope::Run(rb.clone());
    ap(
        "view.opened",
        s.clone(),
        json!({"viewId": "plan", "model": {"steps": []}}),
    )
    .await;
    ap(
        "view.updated",
        s.clone(),
        json!({"viewId": "plan", "operation": "patch",
               "patch": [{"op": "add", "path": "/steps/-", "value": "search"}]}),
    )
    .await;
    ap(
        "view.updated",
        s.clone(),
        json!({"viewId": "plan", "operation": "replace", "model": {"done": true}}),
    )
    .await;
    ap("view.closed", s.clone(), json!({"viewId": "plan"})).await;
    ap(
        "attachment.added",
        s.clone(),
        json!({"attachmentId": "att-1", "name": "photo.png", "mediaType": "image/png",
               "uri": "s3://in/photo.png", "sizeBytes": 2048}),
    )
    .await;
    ap(
        "attachment.ready",
        s.clone(),
        json!({"attachmentId": "att-1"}),
    )
    .await;
    ap(
        "attachment.removed",
        s.clone(),
        json!({"attachmentId": "att-1"}),
    )
    .await;
    ap(
        "artifact.added",
        at.clone(),
        json!({"artifactId": "art-1", "name": "report.md", "sha256": "ab12"}),
    )
    .await;
    ap(
        "artifact.failed",
        at.clone(),
        json!({"artifactId": "art-1", "code": "render_failed", "message": "Could not render."}),
    )
    .await;
    ap(
        "trace.span.started",
        at.clone(),
        json!({"spanId": "span-1", "name": "llm.call", "parentSpanId": "span-0",
               "attributes": {"model": "m-large"}}),
    )
    .await;
    ap(
        "trace.event",
        at.clone(),
        json!({"name": "llm.first_token", "spanId": "span-1", "attributes": {"tokens": 1}}),
    )
    .await;
    ap(
        "trace.span.completed",
        at.clone(),
        json!({"spanId": "span-1", "status": "error", "durationMs": 30000, "code": "timeout"}),
    )
    .await;

    let (ja, jb) = (journal(&a, &sa).await, journal(&b, &sb).await);
    assert_eq!(ja.len(), 1 + 12);
    assert_eq!(
        ja, jb,
        "the typed commands write exactly the untyped journal"
    );
    assert_valid(&a, &sa).await;
}

#[tokio::test]
async fn asset_and_view_lifecycles_read_back_typed_and_refusals_append_nothing_on_sqlite() {
    let d = tempfile::tempdir().unwrap();
    let store = narad_store_sqlite::SqliteStore::open(d.path().join("a.db"))
        .await
        .unwrap();
    let e = common::fixed_host(store, Arc::new(AllowAll));
    let sid = session(&e).await;
    let s = EventScope::Session;
    let att = e
        .add_attachment(&me(), &sid, s.clone(), Asset::new().name("in.txt"))
        .await
        .unwrap();
    let art = e
        .add_artifact(&me(), &sid, s.clone(), Asset::new().name("out.txt"))
        .await
        .unwrap();
    assert_ne!(att, art, "fresh ids");
    e.update_artifact(&me(), &sid, s.clone(), &art, AssetStep::Ready)
        .await
        .unwrap();
    e.open_view(&me(), &sid, s.clone(), "v", json!({"n": 1}))
        .await
        .unwrap();
    let before = journal(&e, &sid).await.len();

    // Refusals name the rule and append nothing.
    let refusals = [
        e.update_attachment(&me(), &sid, s.clone(), "nope", AssetStep::Ready)
            .await
            .unwrap_err(),
        e.update_artifact(&me(), &sid, s.clone(), &art, AssetStep::Ready)
            .await
            .unwrap_err(),
        e.update_artifact(&me(), &sid, s.clone(), &art, AssetStep::Removed)
            .await
            .unwrap_err(),
        e.add_attachment(
            &me(),
            &sid,
            s.clone(),
            Asset::new().uri("data:text/plain;base64,c2VjcmV0"),
        )
        .await
        .unwrap_err(),
        e.add_attachment(
            &me(),
            &sid,
            s.clone(),
            Asset::new().with("sessionId", "other"),
        )
        .await
        .unwrap_err(),
        e.open_view(&me(), &sid, s.clone(), "v", json!(null))
            .await
            .unwrap_err(),
        e.update_view(
            &me(),
            &sid,
            s.clone(),
            "v",
            ViewUpdate::Patch(Patch::new().replace("/missing", 2)),
        )
        .await
        .unwrap_err(),
        e.close_view(&me(), &sid, s.clone(), "w").await.unwrap_err(),
    ];
    let codes: Vec<&str> = refusals.iter().map(|r| r.code()).collect();
    assert_eq!(
        codes,
        [
            "lifecycle_unknown",
            "lifecycle_invalid",
            "invalid_command",
            "invalid_command",
            "invalid_command",
            "view_already_open",
            "patch_failed",
            "view_not_open"
        ]
    );
    assert!(!refusals[3].to_string().contains("c2VjcmV0"));
    assert_eq!(journal(&e, &sid).await.len(), before);

    let state = e.state(&me(), &sid).await.unwrap();
    assert_eq!(state.documents.attachments[&att], Lifecycle::Added);
    assert_eq!(state.documents.artifacts[&art], Lifecycle::Ready);
    assert_eq!(state.documents.views["v"], json!({"n": 1}));
    assert_valid(&e, &sid).await;
    e.close().await.unwrap();
}
