//! The store commands: sessions, show, export, verify, migrate.
//! Each returns `Ok(exit code)` or a one-line error.

use std::io::{IsTerminal, Write};

use crate::output::{self, out, Failure, OutputError};

use narad_core::checker::{Checker, Run};
use narad_store::{Batch, Expect, SideSpace, SideWrite, Store, StoredEvent};
use narad_stores::AnyStore;
use serde_json::Value;

pub type Outcome = Result<u8, Failure>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub async fn all_sessions(store: &AnyStore) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    loop {
        let page = store
            .list_sessions(out.last().map(String::as_str), 1000)
            .await
            .map_err(err)?;
        if page.is_empty() {
            return Ok(out);
        }
        out.extend(page);
    }
}

pub async fn journal(store: &AnyStore, sid: &str, after: u64) -> Result<Vec<StoredEvent>, String> {
    let mut out = Vec::new();
    let mut cursor = after;
    loop {
        let page = store.read_session(sid, cursor, 4096).await.map_err(err)?;
        if let Some(last) = page.events.last() {
            cursor = last.position.session_sequence;
        }
        out.extend(page.events);
        if page.next.is_none() {
            return Ok(out);
        }
    }
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
    let mut children: Vec<(&String, &Run)> = c
        .runs(sid)
        .filter(|(_, r)| r.parent.as_deref() == Some(id))
        .collect();
    children.sort_by_key(|(k, _)| k.as_str());
    for (cid, child) in children {
        print_run(c, sid, cid, child, depth + 1)?;
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
    let mut roots: Vec<(&String, &Run)> = c.runs(sid).filter(|(_, r)| r.parent.is_none()).collect();
    roots.sort_by_key(|(k, _)| k.as_str());
    for (id, run) in roots {
        print_run(&c, sid, id, run, 0)?;
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

/// `narad verify`
pub async fn verify(store: &AnyStore) -> Outcome {
    let (mut ok, mut bad) = (0, 0);
    for sid in all_sessions(store).await? {
        let events = journal(store, &sid, 0).await?;
        match check(&events).1 {
            Ok(()) => ok += 1,
            Err((seq, why)) => {
                bad += 1;
                out!("{sid}: refused at sessionSequence {seq}: {why}");
            }
        }
    }
    out!("{ok} sessions valid, {bad} refused");
    Ok(u8::from(bad > 0))
}

/// `narad migrate`: copies every session's journal and its host metadata
/// and snapshot records; resumes where a previous run stopped.
pub async fn migrate(from: &AnyStore, to: &AnyStore) -> Outcome {
    let sessions = all_sessions(from).await?;
    let tty = std::io::stderr().is_terminal();
    let (mut copied, mut events) = (0u64, 0u64);
    for (i, sid) in sessions.iter().enumerate() {
        if tty {
            output::error_text(format_args!("\r[{}/{}] {sid}\x1b[K", i + 1, sessions.len()));
        }
        let source = journal(from, sid, 0).await?;
        let target_head = to.head(sid).await.map_err(err)?;
        let done = journal(to, sid, 0).await?;
        if done.len() as u64 != target_head
            || done.iter().zip(&source).any(|(a, b)| a.bytes != b.bytes)
            || done.len() > source.len()
        {
            return Err(format!(
                "{sid}: the target already holds a different journal; nothing copied"
            )
            .into());
        }
        let mut head = target_head;
        let rest = &source[done.len()..];
        for chunk in rest.chunks(1000) {
            let mut batch = Batch {
                session_id: sid.clone(),
                expected_head: head,
                events: chunk.to_vec(),
                ..Batch::default()
            };
            if head == 0 {
                for space in [SideSpace::Session, SideSpace::Snapshot] {
                    if let Some(v) = from.side(space, sid).await.map_err(err)? {
                        batch.side.push(SideWrite {
                            space,
                            key: sid.clone(),
                            expect: Expect::Any,
                            value: Some(v),
                        });
                    }
                }
            }
            head = to
                .append(batch)
                .await
                .map_err(|e| format!("{sid}: {e}"))?
                .head;
        }
        // A session with host metadata but no events yet.
        if source.is_empty() {
            if let Some(v) = from.side(SideSpace::Session, sid).await.map_err(err)? {
                let batch = Batch {
                    session_id: sid.clone(),
                    expected_head: 0,
                    side: vec![SideWrite {
                        space: SideSpace::Session,
                        key: sid.clone(),
                        expect: Expect::Any,
                        value: Some(v),
                    }],
                    ..Batch::default()
                };
                to.append(batch).await.map_err(|e| format!("{sid}: {e}"))?;
            }
        }
        // Verify: same count, same bytes.
        let copy = journal(to, sid, 0).await?;
        if copy.len() != source.len() || copy.iter().zip(&source).any(|(a, b)| a.bytes != b.bytes) {
            return Err(format!("{sid}: the copy differs from the source").into());
        }
        copied += 1;
        events += rest.len() as u64;
    }
    if tty {
        output::error_text(format_args!("\n"));
    }
    out!("{copied} sessions verified in the target ({events} events copied this run)");
    Ok(0)
}
