//! Session lifecycle commands: `delete`, `sessions` (from the session
//! index), `reindex`, and the index check of `verify`. Through the engine as the
//! principal `narad-cli`, like the operator commands.

use narad_engine::{Engine, EngineError, Principal, SessionEntry, SessionQuery, SessionStatus};
use narad_store::Store;
use narad_stores::AnyStore;
use serde_json::json;

use crate::output::{out, plain, refused, Failure};
use crate::store_cmds::Outcome;

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
        let sid = plain(&gone.session_id);
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

/// Filters of `narad sessions`.
#[derive(Debug, Default)]
pub struct SessionFilters {
    /// Statuses (any of).
    pub status: Vec<String>,
    /// Workspace.
    pub workspace: Option<String>,
    /// `KEY=VALUE` labels (all of).
    pub label: Vec<String>,
    /// RFC 3339 time: last activity after it.
    pub updated_after: Option<String>,
}

fn usage(msg: String) -> Failure {
    Failure::Message(format!("invalid_command: {msg}"))
}

impl SessionFilters {
    fn query(&self) -> Result<SessionQuery, Failure> {
        let mut q = SessionQuery::default();
        for s in &self.status {
            q.status.push(
                SessionStatus::parse(s).ok_or_else(|| usage(format!("unknown status `{s}`")))?,
            );
        }
        q.workspace_id = self.workspace.clone();
        for l in &self.label {
            let (k, v) = l
                .split_once('=')
                .ok_or_else(|| usage("a label is KEY=VALUE".into()))?;
            q.labels.insert(k.to_owned(), v.to_owned());
        }
        if let Some(t) = &self.updated_after {
            q.updated_after = Some(
                humantime::parse_rfc3339_weak(t)
                    .map_err(|_| usage("--updated-after takes an RFC 3339 time".into()))?,
            );
        }
        Ok(q)
    }
}

/// `narad sessions`: one line per session from the session index (no
/// journal is replayed): id, head, active execution, last activity,
/// status, workspace.
pub async fn sessions(store: AnyStore, filters: &SessionFilters, json_out: bool) -> Outcome {
    let q = filters.query()?;
    let engine = Engine::new(store);
    let me = Principal::new("narad-cli");
    let mut after: Option<String> = None;
    loop {
        let page = engine
            .sessions(&me, &q, after.as_deref(), 1000)
            .await
            .map_err(refused)?;
        for s in &page.sessions {
            if json_out {
                json_entry(s)?;
            } else {
                print_entry(s)?;
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}

/// One `narad sessions --json` line.
fn json_entry(s: &SessionEntry) -> Result<(), Failure> {
    let v = json!({
        "session": s.session_id,
        "head": s.events,
        "active": s.active_execution.as_ref().map(|a| json!({"kind": a.kind, "id": a.id})),
        "lastEventAt": s.updated_at,
        "createdAt": s.created_at,
        "status": s.status.name(),
        "workspace": s.workspace_id,
        "labels": s.labels,
    });
    out!("{v}");
    Ok(())
}

fn print_entry(s: &SessionEntry) -> Result<(), Failure> {
    let active = s
        .active_execution
        .as_ref()
        .map_or("-".to_owned(), |a| format!("{}:{}", a.kind, plain(&a.id)));
    out!(
        "{}\thead={}\tactive={active}\tlast={}\tstatus={}\tworkspace={}",
        plain(&s.session_id),
        s.events,
        s.updated_at.as_deref().unwrap_or("-"),
        s.status.name(),
        s.workspace_id.as_deref().map_or("-".into(), plain),
    );
    Ok(())
}

/// The valid sessions whose indexes differ from their journals, with
/// which index (`session_index` or `interrupt_index`) and what differs:
/// the session-index entry, or interrupt-index entries for the
/// interrupts the journal requested (`verify` read them on its pass; an
/// import by an older build wrote none).
pub async fn verify_index(
    store: &AnyStore,
    valid: Vec<(String, Vec<String>)>,
) -> Result<Vec<(String, &'static str, String)>, Failure> {
    let engine = Engine::new(store.clone());
    let mut differ = Vec::new();
    for (sid, interrupts) in valid {
        match engine.check_index(&sid).await {
            Ok(None) | Err(EngineError::UnknownSession { .. }) => {}
            Ok(Some(_)) => {
                let what = "session index differs from its journal".to_owned();
                differ.push((sid.clone(), "session_index", what));
            }
            Err(e) => return Err(refused(e)),
        }
        let missing = engine.unindexed_among(interrupts).await.map_err(refused)?;
        if !missing.is_empty() {
            let what = format!("interrupt index lacks {} of its interrupts", missing.len());
            differ.push((sid, "interrupt_index", what));
        }
    }
    Ok(differ)
}

/// `narad reindex`: rewrites every index entry that differs from its
/// rebuild.
pub async fn reindex(store: AnyStore) -> Outcome {
    let sids = crate::store_cmds::all_sessions(&store).await?;
    let engine = Engine::new(store);
    let me = Principal::new("narad-cli");
    let mut fixed = 0u64;
    for sid in &sids {
        match engine.reindex(&me, sid).await {
            Ok(true) => {
                fixed += 1;
                out!("{}: reindexed", plain(sid));
            }
            Ok(false) | Err(EngineError::UnknownSession { .. }) => {}
            Err(e) => return Err(refused(e)),
        }
    }
    out!("{} sessions checked, {fixed} reindexed", sids.len());
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}

/// `narad prune`: deletes sessions idle longer than `older_than` (a
/// duration such as `30d`, `12h`); open work is kept unless `force`.
pub async fn prune(
    store: AnyStore,
    older_than: &str,
    dry_run: bool,
    force: bool,
    json_out: bool,
) -> Outcome {
    let max_idle = humantime::parse_duration(older_than)
        .map_err(|_| usage("--older-than takes a duration such as 30d or 12h".into()))?;
    let engine = Engine::new(store);
    let policy = narad_engine::RetentionPolicy {
        max_idle: Some(max_idle),
        max_sessions_per_workspace: None,
        force,
    };
    let report = engine
        .prune(&Principal::new("narad-cli"), &policy, dry_run)
        .await
        .map_err(refused)?;
    let verb = if dry_run { "would delete" } else { "deleted" };
    for sid in &report.deleted {
        if json_out {
            out!("{}", json!({ "sessionId": sid, "action": verb }));
        } else {
            out!("{verb} {}", plain(sid));
        }
    }
    for (sid, why) in &report.kept {
        if json_out {
            out!(
                "{}",
                json!({ "sessionId": sid, "action": "kept", "open": why })
            );
        } else {
            out!("kept {} (open work: {})", plain(sid), plain(why));
        }
    }
    if !json_out {
        out!(
            "{} {verb}, {} kept with open work",
            report.deleted.len(),
            report.kept.len()
        );
    }
    engine.store().close().await.map_err(|e| e.to_string())?;
    Ok(0)
}
