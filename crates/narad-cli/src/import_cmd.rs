//! `narad import`: streams JSONL files into a store through the engine's
//! checker, in bounded batches, without ever holding a whole file.
//!
//! Two passes over each file. The first reads every line (bounded by the
//! record limit) and its `sessionId`; any unreadable line fails the import
//! before anything is written. The second cuts the lines into batches —
//! a contiguous run of one session's lines, at most [`BATCH_EVENTS`]
//! events and [`BATCH_BYTES`] bytes — and hands each to
//! [`Engine::import`], which checks it after the stored journal and
//! appends it all or nothing. Batches of one session go, in order, to the
//! same worker; [`WORKERS`] workers let the store group their commits.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use narad_core::Limits;
use narad_engine::{Engine, Principal};
use narad_store::Store;
use narad_stores::AnyStore;
use tokio::sync::mpsc;

use crate::output::{out, plain, Failure, OutputError};
use crate::progress;
use crate::records::{ReadError, RecordFile};
use crate::store_cmds::Outcome;

/// Most events in one appended batch.
pub const BATCH_EVENTS: usize = 1000;
/// Most record bytes in one appended batch (a single larger record, up to
/// the record limit, still makes a batch of its own).
pub const BATCH_BYTES: usize = 1 << 20;
/// Sessions imported at once.
pub const WORKERS: usize = 8;

/// The `sessionId` of a record, read without building the record.
#[derive(serde::Deserialize)]
struct SessionOf<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: std::borrow::Cow<'a, str>,
}

fn session_of(line: &[u8]) -> Option<String> {
    serde_json::from_slice::<SessionOf<'_>>(line)
        .ok()
        .map(|s| s.session_id.into_owned())
}

/// One batch of one session's records, in file order.
#[derive(Debug)]
struct Chunk {
    sid: String,
    records: Vec<Vec<u8>>,
    file: Arc<str>,
    first_line: u64,
    /// The last batch of a contiguous run of this session's lines.
    ends_run: bool,
}

/// The first pass: every line of `path` is within the record limit and
/// names its session. Returns how many records it holds.
fn check_readable(path: &Path, limits: &Limits) -> Result<u64, Failure> {
    let shown = path.display();
    let fail = |line: Option<u64>, code: &str, e: &dyn std::fmt::Display| {
        let at = line.map(|n| format!(" line {n}")).unwrap_or_default();
        Failure::from(format!("{shown}{at}: {code}: {e}; nothing imported"))
    };
    let read = |e: ReadError| match e {
        ReadError::TooLarge { line, .. } => fail(Some(line), e.code(), &e),
        ReadError::Io(_) => fail(None, e.code(), &e),
    };
    let mut file = RecordFile::open(path, limits).map_err(read)?;
    let mut records = 0;
    while let Some((line, bytes)) = file.next_record().map_err(read)? {
        records += 1;
        if session_of(bytes).is_none() {
            // Say why: a line that is not JSON at all (a byte order mark,
            // nesting past the parser) is that, not a missing session.
            return Err(match narad_core::json::from_slice_strict(bytes) {
                Err(e) => {
                    let e = limits.json_error(e);
                    fail(Some(line), e.code.as_str(), &e.message)
                }
                Ok(_) => fail(Some(line), "missing_session", &"no readable sessionId"),
            });
        }
    }
    Ok(records)
}

/// `narad import`
pub async fn import(store: AnyStore, files: &[PathBuf]) -> Outcome {
    let refused = import_files(store, files, true).await?;
    Ok(u8::from(refused > 0))
}

/// Imports `files` into `store` and closes it; prints one line per run of
/// a session when `verbose`. Returns how many runs were refused.
pub async fn import_files(
    store: AnyStore,
    files: &[PathBuf],
    verbose: bool,
) -> Result<u64, Failure> {
    let limits = Limits::default();
    let mut total = 0;
    for path in files {
        total += check_readable(path, &limits)?;
    }
    // The bar is the import command's; callers that print nothing get none.
    let bar = if verbose {
        progress::bar(total, "import", "records")
    } else {
        indicatif::ProgressBar::hidden()
    };
    let engine = Engine::new(store);
    let me = Principal::new("narad-cli");
    let (mut senders, mut workers) = (Vec::new(), Vec::new());
    for _ in 0..WORKERS {
        let (tx, rx) = mpsc::channel::<Chunk>(1);
        senders.push(tx);
        workers.push(tokio::spawn(worker(
            engine.clone(),
            me.clone(),
            rx,
            verbose,
            bar.clone(),
        )));
    }
    let sent = send_all(files, &limits, &senders).await;
    drop(senders);
    let mut failed = 0;
    let mut first_error: Option<Failure> = None;
    for w in workers {
        match w.await {
            Ok(Ok(n)) => failed += n,
            Ok(Err(e)) => {
                first_error.get_or_insert(Failure::Output(e));
            }
            Err(_) => {
                first_error.get_or_insert("an import worker stopped".into());
            }
        }
    }
    bar.finish_and_clear();
    engine.store().close().await.map_err(|e| e.to_string())?;
    match (first_error, sent) {
        (Some(e), _) | (None, Err(e)) => Err(e),
        (None, Ok(())) => Ok(failed),
    }
}

/// The second pass: cuts the files into chunks and sends each to its
/// session's worker. Stops early when a worker has stopped.
async fn send_all(
    files: &[PathBuf],
    limits: &Limits,
    senders: &[mpsc::Sender<Chunk>],
) -> Result<(), Failure> {
    for path in files {
        let file: Arc<str> = path.display().to_string().into();
        let mut pending: Option<(Chunk, usize)> = None;
        let mut reader = RecordFile::open(path, limits).map_err(|e| e.to_string())?;
        while let Some((line, bytes)) = reader.next_record().map_err(|e| e.to_string())? {
            let sid = session_of(bytes).ok_or("a line lost its sessionId")?;
            let start_new = pending.as_ref().is_none_or(|(c, size)| {
                c.sid != sid || c.records.len() >= BATCH_EVENTS || size + bytes.len() > BATCH_BYTES
            });
            if start_new {
                if let Some((mut c, _)) = pending.take() {
                    c.ends_run = c.sid != sid;
                    if !send(senders, c).await {
                        return Ok(());
                    }
                }
                let c = Chunk {
                    sid,
                    records: Vec::new(),
                    file: Arc::clone(&file),
                    first_line: line,
                    ends_run: false,
                };
                pending = Some((c, 0));
            }
            if let Some((c, size)) = &mut pending {
                c.records.push(bytes.to_vec());
                *size += bytes.len();
            }
        }
        if let Some((mut c, _)) = pending.take() {
            c.ends_run = true;
            if !send(senders, c).await {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Sends `c` to its session's worker; `false` when that worker has stopped.
async fn send(senders: &[mpsc::Sender<Chunk>], c: Chunk) -> bool {
    let mut h = DefaultHasher::new();
    c.sid.hash(&mut h);
    let i = (h.finish() % senders.len() as u64) as usize;
    match senders.get(i) {
        Some(tx) => tx.send(c).await.is_ok(),
        None => false,
    }
}

/// What happened to a contiguous run of one session's lines so far.
#[derive(Debug, Default)]
struct Run {
    imported: u64,
    refused: bool,
    skipped: u64,
}

/// Imports the chunks it receives, in order; prints one line per run of a
/// session. Returns how many runs were refused.
async fn worker(
    engine: Engine<AnyStore>,
    me: Principal,
    mut rx: mpsc::Receiver<Chunk>,
    verbose: bool,
    bar: indicatif::ProgressBar,
) -> Result<u64, OutputError> {
    let mut runs: HashMap<String, Run> = HashMap::new();
    // A refused session's later lines cannot pass either: they are skipped.
    let mut refused: HashSet<String> = HashSet::new();
    let mut failed = 0;
    while let Some(c) = rx.recv().await {
        bar.inc(c.records.len() as u64);
        let run = runs.entry(c.sid.clone()).or_default();
        if refused.contains(&c.sid) {
            run.skipped += c.records.len() as u64;
        } else {
            match engine.import(&me, &c.records).await {
                Ok((_, n)) => run.imported += n,
                Err(e) => {
                    failed += 1;
                    run.refused = true;
                    refused.insert(c.sid.clone());
                    let (sid, file, at) = (plain(&c.sid), &c.file, c.first_line);
                    // The refusal quotes the records (an eventId, a type).
                    let e = e.to_string();
                    let e = plain(&e);
                    match run.imported {
                        _ if !verbose => {}
                        0 => out!("{sid}: refused, nothing imported: {e} (batch from {file} line {at})"),
                        n => out!("{sid}: refused after {n} events were imported: {e} (batch from {file} line {at})"),
                    }
                }
            }
        }
        if c.ends_run {
            let run = runs.remove(&c.sid).unwrap_or_default();
            let sid = plain(&c.sid);
            if !verbose {
            } else if run.skipped > 0 {
                out!(
                    "{sid}: {} records skipped: the session was refused",
                    run.skipped
                );
            } else if !run.refused {
                out!("{sid}: imported {} events", run.imported);
            }
        }
    }
    Ok(failed)
}
