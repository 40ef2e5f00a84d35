//! Spans are really emitted: a subscriber installed for this test process
//! sees each command's `narad.command` span with its type, session and
//! outcome code, `narad.plan` and `narad.append` nested in it, and the
//! store's `narad.store.commit` (group size, commit time) nested in the
//! append. No span field or event carries tool args, responses or message
//! text. (One test per file: the subscriber is process-global, so the
//! redb writer thread's spans are seen too.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use narad_store::Store;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use narad_engine::{StartRun, Started, ToolOutcome};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Default, Clone)]
struct Capture {
    spans: Arc<Mutex<Vec<Seen>>>,
    events: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Where a span's record lives in `Capture::spans`.
struct Index(usize);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        let span = ctx.span(id).unwrap();
        seen.parent = span.parent().map(|p| p.name().to_owned());
        let mut spans = self.spans.lock().unwrap();
        spans.push(seen);
        span.extensions_mut().insert(Index(spans.len() - 1));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let ext = span.extensions();
        let Some(Index(i)) = ext.get::<Index>() else {
            return;
        };
        values.record(&mut Fields(&mut self.spans.lock().unwrap()[*i].fields));
    }
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(fields);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_and_its_append_emit_nested_spans_without_protected_data() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(capture.clone()))
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let e = common::engine(dir.path()).await;
    let sid = common::session(&e).await;
    let Started::Running(run) = e
        .start_run(&common::me(), &sid, StartRun::default())
        .await
        .unwrap()
    else {
        panic!("queued")
    };
    let tool = e
        .start_tool_call(
            &common::me(),
            &sid,
            &run,
            "search",
            json!({"q": "SECRET-ARG"}),
        )
        .await
        .unwrap();
    e.finish_tool_call(
        &common::me(),
        &sid,
        &tool,
        ToolOutcome::success(json!({"hit": "SECRET-RESPONSE"})),
    )
    .await
    .unwrap();
    e.message(&common::me(), &sid, json!("SECRET-MESSAGE"))
        .await
        .unwrap();
    let refused = e
        .finish_tool_call(
            &common::me(),
            &sid,
            "no-such-call",
            ToolOutcome::success(json!(null)),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "unknown_tool_call");
    e.store().close().await.unwrap();

    let spans = capture.spans.lock().unwrap().clone();
    let commands: Vec<&Seen> = spans.iter().filter(|s| s.name == "narad.command").collect();
    let start = commands
        .iter()
        .find(|s| s.fields.get("command").map(String::as_str) == Some("start_run"))
        .expect("a narad.command span for start_run");
    assert_eq!(start.fields["session"], sid);
    assert_eq!(start.fields["outcome"], "ok");
    assert_eq!(start.parent, None);
    let names: Vec<&str> = commands
        .iter()
        .map(|s| s.fields["command"].as_str())
        .collect();
    // Commands outside the command loop get their span too.
    let created = commands
        .iter()
        .find(|s| s.fields.get("command").map(String::as_str) == Some("create_session"))
        .expect("a narad.command span for create_session");
    assert_eq!(created.fields["outcome"], "ok");
    for expected in ["start_tool_call", "finish_tool_call", "message"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(
        commands
            .iter()
            .any(|s| s.fields["command"] == "finish_tool_call"
                && s.fields["outcome"] == "unknown_tool_call"),
        "the refusal's code is the outcome"
    );

    let plan = spans.iter().find(|s| s.name == "narad.plan").unwrap();
    assert_eq!(plan.parent.as_deref(), Some("narad.command"));
    assert!(plan.fields.contains_key("drafts"));
    let append = spans
        .iter()
        .find(|s| s.name == "narad.append" && s.fields["events"] == "1")
        .expect("an append of one event");
    assert_eq!(append.parent.as_deref(), Some("narad.command"));
    assert_eq!(append.fields["outcome"], "ok");
    let commit = spans
        .iter()
        .find(|s| s.name == "narad.store.commit")
        .expect("the group commit span");
    assert_eq!(commit.parent.as_deref(), Some("narad.append"));
    assert!(commit.fields["group"].parse::<usize>().unwrap() >= 1);
    assert!(commit.fields.contains_key("commit_us"));

    let everything = format!("{spans:?}{:?}", capture.events.lock().unwrap());
    assert!(
        !everything.contains("SECRET"),
        "protected data in spans or events"
    );
}
