//! The store commands: sessions, show, export, verify (`migrate` is in
//! `migrate_cmd.rs`).
//! Each returns `Ok(exit code)` or a one-line error.

use std::borrow::Cow;
use std::io::Write;

use crate::output::{out, Failure, OutputError};

use narad_core::checker::{Checker, Run};
use narad_store::{row, Damage, SideSpace, Store, StoreError, StoredEvent};
use narad_stores::AnyStore;
use serde_json::Value;

pub type Outcome = Result<u8, Failure>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Every session id, in order; each page must continue after the last id
/// (a damaged store must not make this loop forever).
pub async fn all_sessions(store: &AnyStore) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let page = store
            .list_sessions(out.last().map(String::as_str), 1000)
            .await
            .map_err(err)?;
        if page.is_empty() {
            return Ok(out);
        }
        for sid in page {
            if out.last().is_some_and(|last| sid <= *last) {
                return Err(err(StoreError::corrupt(
                    Damage::CursorStalled,
                    Some(&sid),
                    None,
                )));
            }
            out.push(sid);
        }
    }
}

/// A session's stored events after `after`; the cursor must advance with
/// every page, and every row agrees with its key (the store checks).
pub async fn read_journal(
    store: &AnyStore,
    sid: &str,
    after: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut out = Vec::new();
    let mut cursor = after;
    loop {
        let page = store.read_session(sid, cursor, 4096).await?;
        let before = cursor;
        for ev in &page.events {
            cursor = row::advance(sid, cursor, ev.position.session_sequence)?;
        }
        out.extend(page.events);
        if page.next.is_none() {
            return Ok(out);
        }
        row::advance(sid, before, cursor)?;
    }
}

pub async fn journal(store: &AnyStore, sid: &str, after: u64) -> Result<Vec<StoredEvent>, String> {
    read_journal(store, sid, after).await.map_err(err)
}

/// Replays a stored journal; `Err((sequence, message))` at the first refusal.
fn check(events: &[StoredEvent]) -> (Checker, Result<(), (u64, String)>) {
    let mut c = Checker::default();
    for ev in events {
        if let Err(r) = c.push_bytes(&ev.bytes) {
            return (c, Err((ev.position.session_sequence, r.to_string())));
        }
    }
    (c, Ok(()))
}

fn field(ev: &StoredEvent, name: &str) -> Option<String> {
    serde_json::from_slice::<Value>(&ev.bytes)
        .ok()
        .and_then(|v| v.get(name).and_then(Value::as_str).map(str::to_owned))
}

/// `narad sessions`
pub async fn sessions(store: &AnyStore) -> Outcome {
    for sid in all_sessions(store).await? {
        let events = journal(store, &sid, 0).await?;
        let (c, _) = check(&events);
        let active = match c.slot(&sid) {
            Some(narad_core::checker::Slot::Run(r)) => format!("run:{r}"),
            Some(narad_core::checker::Slot::Workflow(w)) => format!("workflow:{w}"),
            None => "-".into(),
        };
        let last = events
            .last()
            .and_then(|e| field(e, "timestamp"))
            .unwrap_or_else(|| "-".into());
        out!(
            "{sid}\thead={}\tactive={active}\tlast={last}",
            events.last().map_or(0, |e| e.position.session_sequence)
        );
    }
    Ok(0)
}

fn print_run(c: &Checker, sid: &str, id: &str, run: &Run, depth: usize) -> Result<(), OutputError> {
    let pad = "  ".repeat(depth);
    let mut line = format!("{pad}run {id} [{:?}]", run.state).to_lowercase();
    if run.stop_requested {
        line.push_str(" stop-requested");
    }
    if let Some(w) = &run.open_pause {
        line.push_str(&format!(" paused(wait {w})"));
    }
    if let Some(e) = &run.client_executor {
        line.push_str(&format!(" executor={e}"));
    }
    out!("{line}");
    for t in &run.open_tools {
        out!("{pad}  open tool call {t}");
    }
    if let Some(i) = &run.open_interrupt {
        out!(
            "{pad}  open interrupt {} (wait {}, actions: {})",
            i.id,
            i.wait_id,
            i.actions.join(", ")
        );
    }
    let mut children: Vec<(&str, Cow<Run>)> = c
        .runs(sid)
        .filter(|(_, r)| r.parent.as_deref() == Some(id))
        .collect();
    children.sort_by_key(|(k, _)| *k);
    for (cid, child) in children {
        print_run(c, sid, cid, &child, depth + 1)?;
    }
    Ok(())
}

/// `narad show`
pub async fn show(store: &AnyStore, sid: &str) -> Outcome {
    let events = journal(store, sid, 0).await?;
    if events.is_empty()
        && store
            .side(SideSpace::Session, sid)
            .await
            .map_err(err)?
            .is_none()
    {
        return Err(format!("no session `{sid}` in this store").into());
    }
    let (c, verdict) = check(&events);
    out!("session {sid}: {} events", events.len());
    if let Err((seq, why)) = &verdict {
        out!("  journal refused at {seq}: {why}");
    }
    match c.slot(sid) {
        Some(s) => out!("active execution: {s:?}"),
        None => out!("active execution: none"),
    }
    for (id, w) in c.workflows(sid) {
        out!(
            "workflow {id} [{}]{}",
            if w.terminal { "ended" } else { "open" },
            w.open_interrupt
                .as_ref()
                .map(|i| format!(" open interrupt {}", i.id))
                .unwrap_or_default()
        );
    }
    let mut roots: Vec<(&str, Cow<Run>)> =
        c.runs(sid).filter(|(_, r)| r.parent.is_none()).collect();
    roots.sort_by_key(|(k, _)| *k);
    for (id, run) in roots {
        print_run(&c, sid, id, &run, 0)?;
    }
    if let Some(t) = c.transcript(sid) {
        if !t.messages.is_empty() {
            out!("transcript:");
        }
        for m in &t.messages {
            let shown = match &m.redacted {
                None => m.content.clone(),
                Some(Some(r)) => format!("{r} (redacted)"),
                Some(None) => "(redacted)".into(),
            };
            out!("  {}: {shown}", m.role);
        }
    }
    Ok(if verdict.is_ok() { 0 } else { 1 })
}

/// `narad export`
pub async fn export(store: &AnyStore, session: Option<&str>, after: u64, all: bool) -> Outcome {
    let sessions = match (session, all) {
        (Some(s), false) => vec![s.to_owned()],
        (None, true) => all_sessions(store).await?,
        _ => return Err("give either --session ID or --all".into()),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for sid in sessions {
        for ev in journal(store, &sid, after).await? {
            out.write_all(&ev.bytes).map_err(OutputError::from)?;
            out.write_all(b"\n").map_err(OutputError::from)?;
        }
    }
    out.flush().map_err(OutputError::from)?;
    Ok(0)
}

/// The first damage of one session's rows against its keys and its head
/// record: `(position, kind)`, or the events when the rows are sound.
async fn inspect(
    store: &AnyStore,
    sid: &str,
) -> Result<Result<Vec<StoredEvent>, (Option<u64>, Damage)>, String> {
    let head = store.head(sid).await.map_err(err)?;
    let events = match read_journal(store, sid, 0).await {
        Ok(events) => events,
        Err(StoreError::Corrupt {
            damage, position, ..
        }) => return Ok(Err((position, damage))),
        Err(e) => return Err(err(e)),
    };
    // The store checked each row against its own key; the keys must also
    // run 1, 2, … up to the head record.
    for (i, ev) in events.iter().enumerate() {
        let want = i as u64 + 1;
        if ev.position.session_sequence != want {
            return Ok(Err((Some(want), Damage::Gap)));
        }
    }
    let last = events.len() as u64;
    if head > last {
        return Ok(Err((Some(last + 1), Damage::MissingRows)));
    }
    if head < last {
        return Ok(Err((Some(head + 1), Damage::RowsPastHead)));
    }
    Ok(Ok(events))
}

/// `narad verify`: the backend's own integrity check where it has one,
/// then every session's rows against their keys and head record, then
/// every journal through the checker. One line per damaged or refused
/// session, a summary with counts per damage kind; exit 1 on any finding.
pub async fn verify(url: &str) -> Outcome {
    let mut kinds: std::collections::BTreeMap<&'static str, u64> = Default::default();
    match narad_stores::check_integrity(url).await {
        Ok(Some(true) | None) => {}
        Ok(Some(false)) => {
            out!("store file: damaged, repaired by the backend's integrity check (file)");
            *kinds.entry(Damage::File.code()).or_default() += 1;
        }
        Err(e @ StoreError::Corrupt { .. }) => {
            out!("store file: damaged (file): {e}");
            out!("0 sessions valid, 0 refused, 1 damaged (file: 1)");
            return Ok(1);
        }
        Err(e) => return Err(err(e).into()),
    }
    let store = narad_stores::open_existing(url).await.map_err(err)?;
    let (mut ok, mut bad, mut damaged) = (0, 0, 0);
    for sid in all_sessions(&store).await? {
        let events = match inspect(&store, &sid).await? {
            Ok(events) => events,
            Err((position, damage)) => {
                damaged += 1;
                *kinds.entry(damage.code()).or_default() += 1;
                match position {
                    Some(p) => out!("{sid}: damaged at position {p} ({})", damage.code()),
                    None => out!("{sid}: damaged ({})", damage.code()),
                }
                continue;
            }
        };
        match check(&events).1 {
            Ok(()) => ok += 1,
            Err((seq, why)) => {
                bad += 1;
                out!("{sid}: refused at sessionSequence {seq}: {why}");
            }
        }
    }
    let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    if counts.is_empty() {
        out!("{ok} sessions valid, {bad} refused, {damaged} damaged");
    } else {
        out!(
            "{ok} sessions valid, {bad} refused, {damaged} damaged ({})",
            counts.join(", ")
        );
    }
    Ok(u8::from(bad > 0 || !kinds.is_empty()))
}
