//! Human in the loop: a run asks two reviewers; their decisions fold into
//! one (§7.7: stop wins, else all approve, else deny); an unanswered
//! request expires on the engine's clock.
//!
//! `cargo run --example human_in_the_loop [-- --store URL]`

use std::sync::Arc;
use std::time::Duration;

use narad_engine::{
    AllowAll, Engine, EngineConfig, Expiry, Interrupt, InterruptScope, ManualClock, NewSession,
    Principal, RandomIds, Resolve, StartRun, Started, Terminal,
};
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = narad_examples::Scratch::new("narad-hitl")?;
    let url = narad_examples::store_url(&format!("redb:{}", scratch.join("hitl.redb").display()));
    let clock = Arc::new(ManualClock::at_unix(1_780_000_000));
    let engine = Engine::with_host(
        narad_stores::open(&url).await?,
        clock.clone(),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig::default(),
    );
    let me = Principal::new("reviewer-bot");
    let sid = engine.create_session(&me, NewSession::default()).await?;
    let Started::Running(run) = engine.start_run(&me, &sid, StartRun::default()).await? else {
        return Err("slot busy".into());
    };
    let members = json!({"members": [{"requestId": "alice"}, {"requestId": "bob"}]});
    let ask = |input: Option<serde_json::Value>, expires: Option<Expiry>| Interrupt {
        scope: InterruptScope::run(&run),
        kind: "approval".into(),
        actions: vec!["approve".into(), "deny".into(), "stop".into()],
        input,
        expires_at: expires,
        title: None,
    };
    let (first, _) = engine
        .request_interrupt(&me, &sid, ask(Some(members), None))
        .await?;
    let decisions = json!([
        {"requestId": "alice", "decision": "approve"},
        {"requestId": "bob", "decision": "deny"}
    ]);
    let resolve = |decision: &str| Resolve {
        interrupt_id: first.clone(),
        decision: decision.into(),
        reason: Some("two reviewers".into()),
        expected_revision: None,
        members: Some(decisions.clone()),
    };
    // approve + deny folds to deny: claiming approve is refused.
    let wrong = engine
        .resolve_interrupt(&me, resolve("approve"))
        .await
        .err()
        .ok_or("fold ignored")?;
    eprintln!("refused: {}", wrong.code());
    engine.resolve_interrupt(&me, resolve("deny")).await?;

    // A second request nobody answers: it expires five minutes after the
    // engine's clock reads when it is requested.
    let five_minutes = Expiry::In(Duration::from_secs(300));
    engine
        .request_interrupt(&me, &sid, ask(None, Some(five_minutes)))
        .await?;
    clock.advance(Duration::from_secs(301));
    let expired = engine.expire_due(&me).await?;
    eprintln!("expired: {expired:?}");
    let end = Terminal::Cancelled {
        code: Some("denied".into()),
        message: Some("Not approved.".into()),
        usage: None,
    };
    engine.end_run(&me, &sid, &run, end).await?;
    narad_examples::print_journal(engine.store(), &sid).await?;
    narad_store::Store::close(engine.store()).await?;
    Ok(())
}
