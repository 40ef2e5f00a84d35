//! A scripted agent with the shape of an LLM-driven one, on the typed API:
//! a user message, a run, a streamed reply with reasoning (24 deltas), two
//! backend tool calls, an approval with an expiry (shown from the typed
//! state while it is open), progress, a patched state document, a UI view,
//! an artifact and usage. A UI task attaches and prints the typed items it
//! receives. Then the process "restarts" (the store is closed and opened
//! again) and reads back the typed transcript, tool calls, usage totals
//! and the list of sessions.
//! No protocol field is written as JSON here: only tool args and
//! responses and the state document are.
//!
//! `cargo run --example agent_loop [-- --store URL]` — without `--store`
//! it uses a redb file in a private temporary directory, removed at exit.

use std::time::Duration;

use narad_core::model::AuthorityPayload as P;
use narad_engine::{
    Asset, AssetStep, DocumentKind, Engine, EventScope, Interrupt, NewSession, Patch, Principal,
    Progress, ProgressStatus, Resolve, StartRun, Terminal, TextOptions, ToolOutcome, Usage,
    ViewUpdate,
};
use serde_json::json;

/// What a model would stream, word by word.
const REPLY: &str = "I found two flights to Lisbon on Friday and booked the cheaper one, \
                     departing at nine in the morning, after your approval.";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let private = std::env::temp_dir().join(format!("narad-agent-loop-{}", std::process::id()));
    let given = std::env::args().any(|a| a == "--store");
    if !given {
        std::fs::create_dir_all(&private)?;
    }
    let default = format!("redb:{}", private.join("agent.redb").display());
    let url = narad_examples::store_url(&default);
    let outcome = agent(&url).await;
    if !given {
        std::fs::remove_dir_all(&private)?;
    }
    outcome
}

async fn agent(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let me = Principal::new("agent-runtime");
    let engine = Engine::new(narad_stores::open(url).await?);
    let sid = engine.create_session(&me, NewSession::default()).await?;

    // A UI attaches and prints the typed items it receives, until the run ends.
    let mut live = engine.attach(&me, &sid).await?.follow;
    let ui = tokio::spawn(async move {
        let mut seen = 0usize;
        while let Ok(Some(item)) = live.next_item().await {
            seen += 1;
            let at = item.event.position.session_sequence;
            match &item.record.payload {
                P::MessageTextDelta { .. } | P::ReasoningDelta(_) => {}
                P::ToolCallStarted { tool_name, .. } => {
                    println!("  ui <- #{at} calling {tool_name}")
                }
                P::InterruptRequested { title, .. } => {
                    println!("  ui <- #{at} asks: {}", title.as_deref().unwrap_or("?"));
                }
                P::RunFinished { .. } => {
                    println!("  ui <- #{at} run finished");
                    break;
                }
                _ => {
                    let ty = item.record.wire.json().get("type").and_then(|t| t.as_str());
                    println!("  ui <- #{at} {}", ty.unwrap_or("?"));
                }
            }
        }
        seen
    });

    engine
        .message(
            &me,
            &sid,
            "Book me the cheapest flight to Lisbon on Friday.",
        )
        .await?;
    let run = engine.start_run(&me, &sid, StartRun::new()).await?;
    let run = run.run_id().to_owned();
    let at = EventScope::run(&run);
    let plan = engine
        .record_progress(
            &me,
            &sid,
            &run,
            Progress::new("agent.phase", "Searching flights"),
        )
        .await?;
    engine
        .put_document(
            &me,
            &sid,
            DocumentKind::State,
            &at,
            json!({"step": "search", "offers": []}),
        )
        .await?;

    // Two backend tool calls, as a model would ask for them.
    let search = engine
        .start_tool_call(
            &me,
            &sid,
            &run,
            "flights.search",
            json!({"to": "LIS", "day": "fri"}),
        )
        .await?;
    engine
        .finish_tool_call(
            &me,
            &sid,
            &search,
            ToolOutcome::success(json!({"offers": [120, 180]})),
        )
        .await?;
    engine
        .patch_document(
            &me,
            &sid,
            DocumentKind::State,
            &at,
            Patch::new()
                .replace("/step", "approve")
                .add("/offers/-", 120)
                .add("/offers/-", 180),
        )
        .await?;

    // Booking needs an approval, which expires in ten minutes.
    let ask = Interrupt::on_run(&run, "approval", ["approve", "deny"])
        .title("Book the 120 EUR flight?")
        .expires_in(Duration::from_secs(600));
    let (approval, _wait) = engine.request_interrupt(&me, &sid, ask).await?;
    // What an approval screen reads: the open interrupt, typed.
    for (id, open) in engine.state(&me, &sid).await?.open_interrupts() {
        println!(
            "open interrupt {id}: {} {:?} {:?}, until {}",
            open.kind.as_deref().unwrap_or("?"),
            open.title.as_deref().unwrap_or(""),
            open.actions,
            open.expires_at.as_deref().unwrap_or("never")
        );
    }
    let resolved = engine
        .resolve_interrupt(&me, Resolve::new(&approval, "approve").reason("fine"))
        .await?;
    let book = engine
        .start_tool_call(&me, &sid, &run, "flights.book", json!({"offer": 120}))
        .await?;
    engine
        .finish_tool_call(
            &me,
            &sid,
            &book,
            ToolOutcome::success(json!({"pnr": "X7Q2"})),
        )
        .await?;
    // The booking confirmation: an artifact (a reference, never the
    // bytes), and a view the UI renders.
    let ticket = engine
        .add_artifact(
            &me,
            &sid,
            at.clone(),
            Asset::new()
                .name("ticket.pdf")
                .media_type("application/pdf")
                .uri("https://example.invalid/tickets/X7Q2.pdf"),
        )
        .await?;
    engine
        .update_artifact(&me, &sid, at.clone(), &ticket, AssetStep::Ready)
        .await?;
    engine
        .open_view(&me, &sid, at.clone(), "itinerary", json!({"legs": []}))
        .await?;
    engine
        .update_view(
            &me,
            &sid,
            at.clone(),
            "itinerary",
            ViewUpdate::Patch(Patch::new().add("/legs/-", "LIS fri 09:00")),
        )
        .await?;
    engine
        .record_progress(
            &me,
            &sid,
            &run,
            Progress::new("agent.phase", "Booked")
                .id(&plan)
                .status(ProgressStatus::Completed),
        )
        .await?;

    // The reply streams with its reasoning joined to it.
    let reply = engine
        .start_text(&me, &sid, &at, TextOptions::default())
        .await?;
    let thinking = reply.reasoning().await?;
    for part in [
        "Two offers; ",
        "the user wants the cheapest; ",
        "approval given.",
    ] {
        thinking.delta(part).await?;
    }
    thinking.complete().await?;
    let mut deltas = 0;
    for word in REPLY.split_inclusive(' ') {
        reply.delta(word).await?;
        deltas += 1;
    }
    reply.complete().await?;
    engine
        .end_run(
            &me,
            &sid,
            &run,
            Terminal::finished_with(Usage::tokens(812, 64).elapsed_ms(2300)),
        )
        .await?;
    let received = ui.await?;
    println!(
        "streamed {deltas} deltas; approval {} resolved as {}; the UI received {received} events",
        resolved.interrupt_id, resolved.decision
    );

    // "Restart": close the store, open it again, read back typed state.
    engine.close().await?;
    drop(engine);
    let engine = Engine::new(narad_stores::open(url).await?);
    let sessions = engine.list_sessions(&me, None, 100).await?;
    println!("after the restart: {} session(s) listed", sessions.len());
    let state = engine.state(&me, &sid).await?;
    for m in state.transcript_view(true) {
        println!("  {:>9}: {}", m.role, m.text);
        for r in &m.reasoning {
            println!("  {:>9}  (reasoning: {r})", "");
        }
    }
    for call in state.tools.values() {
        let outcome = call.result.as_ref().map(|r| r.outcome);
        println!(
            "  tool {} {} -> {outcome:?}",
            call.name.as_deref().unwrap_or("?"),
            call.args_summary.as_deref().unwrap_or("")
        );
    }
    let doc = &state.documents.documents[&narad_engine::document_key(DocumentKind::State, &at)];
    println!("state document at revision {}: {}", doc.revision, doc.value);
    println!(
        "view: {}; artifacts: {:?}",
        state.documents.views["itinerary"], state.documents.artifacts
    );
    let total = &state.usage.session;
    println!(
        "usage: {} tokens in {} ms",
        total.total_tokens.unwrap_or(0),
        total.elapsed_ms.unwrap_or(0)
    );
    let checker = narad_examples::check_journal(engine.store(), &sid).await?;
    println!(
        "the checker accepts all {} events",
        checker.session_head(&sid).unwrap_or(0)
    );
    engine.close().await?;
    Ok(())
}
