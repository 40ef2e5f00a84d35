//! `narad tick`: one pass of the engine's timer driver over a store, for
//! cron-style operation. Fires every timer due on the system clock — in
//! every session, in memory or not — and exits; several ticks (or engine
//! processes) over one SQLite file or PostgreSQL database fire each timer
//! once.
//!
//! One line per fired timer, then a summary; with `--json` one object per
//! line. Exit 0, or 1 when a due timer was refused (it stays due).

use narad_engine::{Engine, Principal, TimerReport};
use narad_stores::AnyStore;
use serde_json::json;

use crate::output::{out, plain};
use crate::store_cmds::Outcome;

/// The principal `narad tick` acts as.
const PRINCIPAL: &str = "narad-cli";

/// `narad tick --store URL [--json]`
pub async fn tick(store: AnyStore, json: bool) -> Outcome {
    let engine = Engine::new(store);
    let report = engine
        .fire_due_timers_as(&Principal::new(PRINCIPAL))
        .await
        .map_err(|e| format!("{}: {e}", e.code()))?;
    print(&report, json)
}

fn print(report: &TimerReport, json: bool) -> Outcome {
    for f in &report.fired {
        let due = narad_engine::host::timestamp(f.due);
        let session = if f.session_id.is_empty() {
            "-".into()
        } else {
            plain(&f.session_id)
        };
        if json {
            let line = json!({"fired": f.kind.name(), "sessionId": f.session_id, "id": f.id,
                              "due": due, "events": f.event_types});
            out!("{line}");
        } else {
            out!(
                "fired\t{}\t{session}\t{}\tdue={due}\tevents={}",
                f.kind.name(),
                plain(&f.id),
                f.event_types.join(",")
            );
        }
    }
    for (kind, id, code) in &report.failed {
        if json {
            let line = json!({"failed": kind.name(), "id": id, "code": code});
            out!("{line}");
        } else {
            out!("failed\t{}\t{}\t{code}", kind.name(), plain(id));
        }
    }
    let (fired, dropped, failed) = (report.fired.len(), report.dropped, report.failed.len());
    if json {
        let line = json!({"summary": {"fired": fired, "dropped": dropped, "failed": failed}});
        out!("{line}");
    } else {
        out!("{fired} fired, {dropped} dropped, {failed} refused");
    }
    Ok(u8::from(failed > 0))
}
