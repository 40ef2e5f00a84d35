//! The store commands: sessions, show, export, verify (`migrate` is in
//! `migrate_cmd.rs`).
//! Each returns `Ok(exit code)` or a one-line error.

use std::collections::BTreeMap;
use std::io::Write;

use crate::output::{out, Failure, OutputError};

use narad_core::checker::Checker;
use narad_store::{row, Damage, Store, StoreError, StoredEvent};
use narad_stores::AnyStore;
use serde::Serialize;

use crate::progress;

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

/// Replays a stored journal; `Err((sequence, code, message))` at the first refusal.
fn check(events: &[StoredEvent]) -> (Checker, Result<(), (u64, &'static str, String)>) {
    let mut c = Checker::default();
    for ev in events {
        if let Err(r) = c.push_bytes(&ev.bytes) {
            return (
                c,
                Err((ev.position.session_sequence, r.code, r.to_string())),
            );
        }
    }
    (c, Ok(()))
}

/// One `narad verify --json` line: a finding, or the closing summary.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum VerifyLine<'a> {
    /// Rows that disagree with their keys or the head record.
    #[serde(rename_all = "camelCase")]
    Damaged {
        session: &'a str,
        damage: &'static str,
        position: Option<u64>,
    },
    /// A journal the checker refuses.
    #[serde(rename_all = "camelCase")]
    Refused {
        session: &'a str,
        session_sequence: u64,
        code: &'static str,
        reason: &'a str,
    },
    /// A session-index entry that differs from its rebuild.
    #[serde(rename_all = "camelCase")]
    IndexDiffers { session: &'a str },
    /// The store file itself is damaged.
    #[serde(rename_all = "camelCase")]
    FileDamaged { repaired: bool },
    /// Counts over the whole store.
    #[serde(rename_all = "camelCase")]
    Summary {
        sessions: u64,
        valid: u64,
        refused: u64,
        damaged: u64,
        damage: &'a BTreeMap<&'static str, u64>,
        refusals: &'a BTreeMap<&'static str, u64>,
    },
}

fn json_line(v: &impl Serialize) -> Result<(), Failure> {
    let line = serde_json::to_string(v).map_err(|e| e.to_string())?;
    out!("{line}");
    Ok(())
}

/// "1 session" or "N sessions".
fn sessions_word(n: u64) -> String {
    if n == 1 {
        "1 session".into()
    } else {
        format!("{n} sessions")
    }
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
/// session, counts per damage kind and per refusal code, and a summary
/// line; exit 1 on any finding. A progress bar on a terminal.
pub async fn verify(url: &str, json: bool) -> Outcome {
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut codes: BTreeMap<&'static str, u64> = BTreeMap::new();
    match narad_stores::check_integrity(url).await {
        Ok(Some(true) | None) => {}
        Ok(Some(false)) => {
            if json {
                json_line(&VerifyLine::FileDamaged { repaired: true })?;
            } else {
                out!("store file: damaged, repaired by the backend's integrity check (file)");
            }
            *kinds.entry(Damage::File.code()).or_default() += 1;
        }
        Err(e @ StoreError::Corrupt { .. }) => {
            kinds.insert(Damage::File.code(), 1);
            if json {
                json_line(&VerifyLine::FileDamaged { repaired: false })?;
                json_line(&VerifyLine::Summary {
                    sessions: 0,
                    valid: 0,
                    refused: 0,
                    damaged: 1,
                    damage: &kinds,
                    refusals: &codes,
                })?;
            } else {
                out!("store file: damaged (file): {e}");
                out!("0 sessions: 0 valid, 0 refused, 1 damaged (file: 1)");
            }
            return Ok(1);
        }
        Err(e) => return Err(err(e).into()),
    }
    let store = narad_stores::open_existing(url).await.map_err(err)?;
    let (mut ok, mut bad, mut damaged) = (0u64, 0u64, 0u64);
    let mut valid = Vec::new();
    let all = all_sessions(&store).await?;
    let bar = progress::bar(all.len() as u64, "verify", "sessions");
    for sid in &all {
        bar.inc(1);
        let events = match inspect(&store, sid).await? {
            Ok(events) => events,
            Err((position, damage)) => {
                damaged += 1;
                *kinds.entry(damage.code()).or_default() += 1;
                if json {
                    json_line(&VerifyLine::Damaged {
                        session: sid,
                        damage: damage.code(),
                        position,
                    })?;
                    continue;
                }
                match position {
                    Some(p) => out!("{sid}: damaged at position {p} ({})", damage.code()),
                    None => out!("{sid}: damaged ({})", damage.code()),
                }
                continue;
            }
        };
        match check(&events).1 {
            Ok(()) => {
                ok += 1;
                valid.push(sid.clone());
            }
            Err((seq, code, why)) => {
                bad += 1;
                *codes.entry(code).or_default() += 1;
                if json {
                    json_line(&VerifyLine::Refused {
                        session: sid,
                        session_sequence: seq,
                        code,
                        reason: &why,
                    })?;
                } else {
                    out!("{sid}: refused at sessionSequence {seq}: {why}");
                }
            }
        }
    }
    bar.finish_and_clear();
    // The session index against a rebuild from each valid journal.
    let stale = crate::lifecycle_cmds::verify_index(&store, &valid).await?;
    for sid in &stale {
        if json {
            json_line(&VerifyLine::IndexDiffers { session: sid })?;
        } else {
            out!(
                "{}: session index differs from its journal (narad reindex repairs it)",
                sid.escape_default()
            );
        }
    }
    if !stale.is_empty() {
        *kinds.entry("session_index").or_default() += stale.len() as u64;
    }
    let total = all.len() as u64;
    if json {
        json_line(&VerifyLine::Summary {
            sessions: total,
            valid: ok,
            refused: bad,
            damaged,
            damage: &kinds,
            refusals: &codes,
        })?;
        return Ok(u8::from(bad > 0 || !kinds.is_empty()));
    }
    let counted = |m: &BTreeMap<&str, u64>| {
        m.iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !codes.is_empty() {
        out!("refused by code: {}", counted(&codes));
    }
    let summary = format!(
        "{}: {ok} valid, {bad} refused, {damaged} damaged",
        sessions_word(total)
    );
    if kinds.is_empty() {
        out!("{summary}");
    } else {
        out!("{summary} ({})", counted(&kinds));
    }
    Ok(u8::from(bad > 0 || !kinds.is_empty()))
}
