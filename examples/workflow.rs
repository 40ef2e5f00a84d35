//! A workflow: steps, a run inside it, and an exclusive choice recorded as
//! `workflow.edge.taken`.
//!
//! `cargo run --example workflow [-- --store URL]`

use narad_engine::{Engine, EventScope, NewSession, Principal, StartRun, Started, Terminal};
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = narad_examples::Scratch::new("narad-workflow")?;
    let url = narad_examples::store_url(&format!("redb:{}", scratch.join("wf.redb").display()));
    let engine = Engine::new(narad_stores::open(&url).await?);
    let me = Principal::new("orchestrator");
    let sid = engine.create_session(&me, NewSession::default()).await?;
    let wf = engine
        .start_workflow(&me, &sid, Some("triage".into()), None)
        .await?;
    let at = EventScope::workflow(&wf);
    engine
        .append(
            &me,
            &sid,
            "workflow.step.started",
            &at,
            json!({"nodeId": "classify"}),
        )
        .await?;
    let start = StartRun {
        workflow_id: Some(wf.clone()),
        ..StartRun::default()
    };
    let Started::Running(run) = engine.start_run(&me, &sid, start).await? else {
        return Err("slot busy".into());
    };
    let usage = Some(json!({"totalTokens": 12}));
    engine
        .end_run(
            &me,
            &sid,
            &run,
            Terminal::Finished {
                usage,
                artifact_ids: vec![],
            },
        )
        .await?;
    // The classifier said "bug": take the second case of the choice.
    let edge = json!({"from": "classify", "to": "file-bug", "caseIndex": 1, "pointer": "/label", "op": "eq"});
    engine
        .append(&me, &sid, "workflow.edge.taken", &at, edge)
        .await?;
    engine
        .append(
            &me,
            &sid,
            "workflow.step.started",
            &at,
            json!({"nodeId": "file-bug"}),
        )
        .await?;
    engine
        .append(&me, &sid, "workflow.finished", at, json!({}))
        .await?;
    narad_examples::print_journal(engine.store(), &sid).await?;
    narad_store::Store::close(engine.store()).await?;
    Ok(())
}
