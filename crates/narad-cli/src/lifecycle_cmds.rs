//! Session lifecycle commands: `delete`. Through the engine as the
//! principal `narad-cli`, like the operator commands.

use narad_engine::{Engine, EngineError, Principal};
use narad_store::Store;
use narad_stores::AnyStore;
use serde_json::json;

use crate::output::{out, Failure};
use crate::store_cmds::Outcome;

fn refused(e: EngineError) -> Failure {
    Failure::Message(format!("{}: {e}", e.code()))
}

/// `narad delete`: deletes a session and every record of it; with open
/// work only when forced, and the refusal names what is open.
pub async fn delete(store: AnyStore, session: String, force: bool, json_out: bool) -> Outcome {
    let engine = Engine::new(store);
    let gone = engine
        .delete_session(&Principal::new("narad-cli"), &session, force)
        .await
        .map_err(refused)?;
    let open = gone.open.describe();
    if json_out {
        let v = json!({
            "deleted": gone.session_id, "events": gone.events, "records": gone.records,
            "discardedOpenWork": (!open.is_empty()).then_some(open),
        });
        out!("{v}");
    } else {
        let sid: String = gone.session_id.escape_default().collect();
        out!(
            "deleted {sid}: {} events, {} records{}",
            gone.events,
            gone.records,
            if open.is_empty() {
                String::new()
            } else {
                format!(" (discarded open work: {open})")
            }
        );
    }
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}
