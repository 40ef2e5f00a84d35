//! The store commands: sessions, show, export, verify (`migrate` is in
//! `migrate_cmd.rs`).
//! Each returns `Ok(exit code)` or a one-line error.

use std::collections::BTreeMap;
use std::io::Write;

use crate::output::{out, plain, Failure, OutputError};

use narad_core::checker::Checker;
use narad_store::{Damage, JournalPages, Store, StoreError};
use narad_stores::{AnyStore, OpenError};
use serde::Serialize;

use crate::progress;

pub type Outcome = Result<u8, Failure>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// redb's page cache cap for this process. A command is one pass over
/// what it reads or writes, so a page seldom comes back, while redb's
/// default ceiling (1 GiB) kept every page read: an export of a 100 MB
/// session peaked at 143 MB RSS, 13 MB with this cap.
pub const CACHE_BYTES: usize = 16 << 20;

/// How every command of this process opens a store.
pub fn open_options() -> narad_stores::OpenOptions {
    narad_stores::OpenOptions::default().redb_cache_bytes(CACHE_BYTES)
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

/// Events a page holds: small enough that a page of the largest records
/// (512 KB each) stays far below what a whole journal costs, large enough
/// that a million-event journal is a few thousand reads.
const PAGE: usize = 256;

/// A session's stored events after `after`, [`PAGE`] at a time.
pub fn journal_pages<'a>(
    store: &'a AnyStore,
    sid: &'a str,
    after: u64,
) -> JournalPages<'a, AnyStore> {
    JournalPages::new(store, sid, after, PAGE)
}

/// A session's verdict: the first damage of its rows against their keys
/// and its head record, else the checker's first refusal, else sound.
enum Finding {
    /// With the interrupt ids the journal requested (for the index check).
    Sound(Vec<String>),
    Refused(u64, &'static str, String),
    Damaged(Option<u64>, Damage),
}

/// Reads one session's journal a page at a time: the rows are checked to
/// run 1, 2, … up to the head record while the checker replays them. A
/// damage anywhere wins over a refusal, as when the journal was read whole
/// first, so the checker stops at its refusal and the rows are read on.
async fn inspect(store: &AnyStore, sid: &str) -> Result<Finding, String> {
    let head = store.head(sid).await.map_err(err)?;
    let mut pages = journal_pages(store, sid, 0);
    let mut c = Checker::default();
    let (mut last, mut refused) = (0u64, None);
    let mut interrupts = Vec::new();
    loop {
        let page = match pages.next().await {
            Ok(Some(page)) => page,
            Ok(None) => break,
            Err(StoreError::Corrupt {
                damage, position, ..
            }) => return Ok(Finding::Damaged(position, damage)),
            Err(e) => return Err(err(e)),
        };
        for ev in page {
            let want = last + 1;
            if ev.position.session_sequence != want {
                return Ok(Finding::Damaged(Some(want), Damage::Gap));
            }
            last = want;
            interrupts.extend(narad_engine::requested_interrupt(&ev.bytes));
            if refused.is_none() {
                if let Err(r) = c.push_bytes(&ev.bytes) {
                    refused = Some((want, r.code, r.to_string()));
                }
            }
        }
    }
    if head > last {
        return Ok(Finding::Damaged(Some(last + 1), Damage::MissingRows));
    }
    if head < last {
        return Ok(Finding::Damaged(Some(head + 1), Damage::RowsPastHead));
    }
    Ok(match refused {
        Some((seq, code, why)) => Finding::Refused(seq, code, why),
        None => Finding::Sound(interrupts),
    })
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
    /// A session's index (its session-index entry, or the interrupt-index
    /// entries of its interrupts) that differs from its journal.
    #[serde(rename_all = "camelCase")]
    IndexDiffers {
        session: &'a str,
        /// `session_index` or `interrupt_index`.
        index: &'static str,
    },
    /// The store file itself is damaged.
    #[serde(rename_all = "camelCase")]
    FileDamaged { repaired: bool },
    /// The backend's file check did not run: the file opens only
    /// read-only, and the check may repair what it finds.
    #[serde(rename_all = "camelCase")]
    FileUnchecked { reason: &'a str },
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
    for sid in &sessions {
        // Two passes, each a page at a time: the first reads the journal
        // through, so a damaged one fails before a line of it is written
        // (never half an export); the second writes up to where the first
        // ended (events appended meanwhile are not half-checked).
        let (mut pages, mut end) = (journal_pages(store, sid, after), after);
        while let Some(page) = pages.next().await.map_err(err)? {
            end = page.last().map_or(end, |ev| ev.position.session_sequence);
        }
        let mut pages = journal_pages(store, sid, after);
        'pages: while let Some(page) = pages.next().await.map_err(err)? {
            for ev in page {
                if ev.position.session_sequence > end {
                    break 'pages;
                }
                out.write_all(&ev.bytes).map_err(OutputError::from)?;
                out.write_all(b"\n").map_err(OutputError::from)?;
            }
        }
    }
    out.flush().map_err(OutputError::from)?;
    Ok(0)
}

/// `narad verify`: the backend's own integrity check where it has one,
/// then every session's rows against their keys and head record, then
/// every journal through the checker. One line per damaged or refused
/// session, counts per damage kind and per refusal code, and a summary
/// line; exit 1 on any finding. A progress bar on a terminal.
pub async fn verify(url: &str, json: bool) -> Outcome {
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut codes: BTreeMap<&'static str, u64> = BTreeMap::new();
    // Set when the check could not run because the file opens only
    // read-only: that open then serves the rest.
    let mut read_only = None;
    // A file that holds no store (or none at all, or one another process
    // holds) gets the answer every command gives, and before the
    // integrity check, which may repair (write) a redb file.
    match narad_stores::open_for_reading_with(url, &open_options()).await {
        Ok(store) => store.close().await.map_err(err)?,
        Err(
            e @ (OpenError::InvalidUrl { .. }
            | OpenError::NotFound { .. }
            | OpenError::Locked { .. }
            | OpenError::NotAStore { .. }),
        ) => return Err(err(e).into()),
        // A damaged store: the check below says how.
        Err(_) => {}
    }
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
        // A file this process may only read: the check (which may repair)
        // is skipped, and every row and journal is still verified.
        Err(e) => match narad_stores::open_read_only_with(url, &open_options()).await {
            Ok(store) => {
                let reason = format!("the file opens only read-only ({e})");
                if json {
                    json_line(&VerifyLine::FileUnchecked { reason: &reason })?;
                } else {
                    out!("store file: not checked: {reason}");
                }
                read_only = Some(store);
            }
            Err(_) => return Err(err(e).into()),
        },
    }
    let store = match read_only {
        Some(store) => store,
        None => narad_stores::open_for_reading_with(url, &open_options())
            .await
            .map_err(err)?,
    };
    let (mut ok, mut bad, mut damaged) = (0u64, 0u64, 0u64);
    let mut valid = Vec::new();
    let all = all_sessions(&store).await?;
    let bar = progress::bar(all.len() as u64, "verify", "sessions");
    for sid in &all {
        bar.inc(1);
        match inspect(&store, sid).await? {
            Finding::Damaged(position, damage) => {
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
                    Some(p) => out!(
                        "{}: damaged at position {p} ({})",
                        plain(sid),
                        damage.code()
                    ),
                    None => out!("{}: damaged ({})", plain(sid), damage.code()),
                }
            }
            Finding::Sound(interrupts) => {
                ok += 1;
                valid.push((sid.clone(), interrupts));
            }
            Finding::Refused(seq, code, why) => {
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
                    out!(
                        "{}: refused at sessionSequence {seq}: {}",
                        plain(sid),
                        plain(&why)
                    );
                }
            }
        }
    }
    bar.finish_and_clear();
    // The session index against a rebuild from each valid journal.
    let stale = crate::lifecycle_cmds::verify_index(&store, valid).await?;
    for (sid, index, what) in &stale {
        if json {
            json_line(&VerifyLine::IndexDiffers {
                session: sid,
                index,
            })?;
        } else {
            out!("{}: {what} (narad reindex repairs it)", plain(sid));
        }
        *kinds.entry(index).or_default() += 1;
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
