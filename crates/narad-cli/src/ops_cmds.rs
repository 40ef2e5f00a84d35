//! The operator commands: `interrupts`, `resolve`, `stop`. Each goes
//! through the engine as the principal `narad-cli`, so every event it
//! appends is checked and authorized like any other command's. One line
//! per result, or one JSON object per line with `--json`; a refusal is one
//! line `narad: CODE: message` on stderr and exit status 1.

use narad_engine::{Engine, InterruptScope, ListedInterrupt, Principal, Resolve, StopTarget};
use narad_store::Store;
use narad_stores::AnyStore;
use serde_json::json;

use crate::output::{out, plain, refused, Failure};
use crate::store_cmds::Outcome;

/// Index entries looked at per page of `interrupts`.
const PAGE: usize = 500;

fn principal() -> Principal {
    Principal::new("narad-cli")
}

fn scope_of(scope: &InterruptScope) -> (&'static str, &str) {
    match scope {
        InterruptScope::Run(r) => ("run", r),
        InterruptScope::Workflow(w) => ("workflow", w),
    }
}

fn print_interrupt(i: &ListedInterrupt, json_out: bool) -> Result<(), Failure> {
    let (kind, id) = scope_of(&i.scope);
    if json_out {
        let v = json!({
            "sessionId": i.session_id, "interruptId": i.interrupt_id,
            "scope": kind, "scopeId": id, "kind": i.kind, "title": i.title,
            "actions": i.actions, "expiresAt": i.expires_at,
        });
        out!("{v}");
    } else {
        let actions: Vec<_> = i.actions.iter().map(|a| plain(a)).collect();
        out!(
            "{}\t{}\t{kind}:{}\tkind={}\ttitle={}\tactions={}\texpires={}",
            plain(&i.session_id),
            plain(&i.interrupt_id),
            plain(id),
            plain(&i.kind),
            i.title.as_deref().map_or("-".into(), plain),
            actions.join(","),
            i.expires_at.as_deref().map_or("-".into(), plain),
        );
    }
    Ok(())
}

/// `narad interrupts`: every open interrupt, one line each.
pub async fn interrupts(store: AnyStore, json_out: bool) -> Outcome {
    let engine = Engine::new(store);
    let me = principal();
    let mut after: Option<String> = None;
    loop {
        let page = engine
            .open_interrupts(&me, after.as_deref(), PAGE)
            .await
            .map_err(refused)?;
        for i in &page.open {
            print_interrupt(i, json_out)?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}

/// `narad resolve`: resolves one open interrupt by its id.
pub async fn resolve(
    store: AnyStore,
    interrupt_id: String,
    decision: String,
    reason: Option<String>,
    json_out: bool,
) -> Outcome {
    let engine = Engine::new(store);
    let sid = engine
        .resolve_interrupt(
            &principal(),
            Resolve {
                interrupt_id: interrupt_id.clone(),
                decision: decision.clone(),
                reason,
                expected_revision: None,
                members: None,
            },
        )
        .await
        .map_err(refused)?
        .session_id;
    if json_out {
        let v = json!({"resolved": interrupt_id, "sessionId": sid, "decision": decision});
        out!("{v}");
    } else {
        out!(
            "resolved {} in {} as {}",
            plain(&interrupt_id),
            plain(&sid),
            plain(&decision)
        );
    }
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}

/// `narad stop`: stops a run (or the session's active one) and closes its
/// open work, as `Engine::stop` does.
pub async fn stop(
    store: AnyStore,
    session: String,
    run: Option<String>,
    json_out: bool,
) -> Outcome {
    let engine = Engine::new(store);
    let target = run.map_or(StopTarget::ActiveRoot, StopTarget::Run);
    let stopped = engine
        .stop(&principal(), &session, target)
        .await
        .map_err(refused)?;
    if json_out {
        let v = json!({"stopped": stopped, "sessionId": session});
        out!("{v}");
    } else {
        out!("stopped {} in {}", plain(&stopped), plain(&session));
    }
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}
