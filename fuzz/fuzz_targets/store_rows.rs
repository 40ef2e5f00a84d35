//! Arbitrary stored rows read back through the `Store` API of a real SQLite
//! store. The rows start as a trace written the way the backend writes it,
//! then get damaged: bytes copied between rows, replaced, truncated; rows
//! deleted or moved to other keys or sessions; head records changed.
//!
//! Properties: no panic; every paging loop ends within a bound (its cursor
//! strictly advances); an answer is either a page whose positions advance
//! past the cursor in order, or a typed error.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use narad_store::{Page, Store, StoreError, StoredEvent};
use narad_store_sqlite::SqliteStore;
use rusqlite::{params, Connection};

struct Harness {
    rt: tokio::runtime::Runtime,
    store: SqliteStore,
    /// A second connection that writes rows behind the store's back.
    raw: Mutex<Connection>,
    _dir: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("fuzz.sqlite");
        let store = rt
            .block_on(SqliteStore::open(&path))
            .unwrap_or_else(|e| panic!("open: {e}"));
        let raw = Connection::open(&path).unwrap_or_else(|e| panic!("raw open: {e}"));
        let _ = raw.pragma_update(None, "synchronous", "OFF");
        Harness {
            rt,
            store,
            raw: Mutex::new(raw),
            _dir: dir,
        }
    })
}

#[derive(Debug, Clone)]
struct Row {
    session: String,
    seq: i64,
    event_id: String,
    bytes: Vec<u8>,
    root: Option<(String, i64)>,
    wf: Option<(String, i64)>,
}

#[derive(Arbitrary, Debug)]
enum RowEdit {
    CopyBytes { from: u16, to: u16 },
    SetBytes { row: u16, bytes: Vec<u8> },
    TruncBytes { row: u16, keep: u16 },
    Delete(u16),
    SetSeq { row: u16, seq: i64 },
    ShiftSeq { row: u16, by: i8 },
    SetSession { row: u16, session: u8 },
    SetRun { row: u16, rseq: Option<i64> },
    SetWorkflow { row: u16, wseq: Option<i64> },
    Head { session: u8, head: i64 },
    DropHead(u8),
    Splice { journal: u16, line: u16, seq: i64 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    journal: u16,
    page: u8,
    edits: Vec<RowEdit>,
}

fn row_of(line: &str) -> Option<Row> {
    let ev = StoredEvent::from_stored_bytes(line.as_bytes()).ok()?;
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some(Row {
        session: v.get("sessionId")?.as_str()?.to_owned(),
        seq: i64::try_from(ev.position.session_sequence).ok()?,
        event_id: ev.event_id,
        bytes: line.as_bytes().to_vec(),
        root: ev
            .position
            .run
            .and_then(|(r, s)| Some((r, i64::try_from(s).ok()?))),
        wf: ev
            .position
            .workflow
            .and_then(|(w, s)| Some((w, i64::try_from(s).ok()?))),
    })
}

fn pick(i: u16, len: usize) -> Option<usize> {
    (len > 0).then(|| usize::from(i) % len)
}

fn edit(rows: &mut Vec<Row>, heads: &mut BTreeMap<String, i64>, pool: &[String], e: &RowEdit) {
    let len = rows.len();
    let session = |s: u8| pool[usize::from(s) % pool.len()].clone();
    match e {
        RowEdit::CopyBytes { from, to } => {
            if let (Some(f), Some(t)) = (pick(*from, len), pick(*to, len)) {
                rows[t].bytes = rows[f].bytes.clone();
            }
        }
        RowEdit::SetBytes { row, bytes } => {
            if let Some(r) = pick(*row, len) {
                rows[r].bytes = bytes.clone();
            }
        }
        RowEdit::TruncBytes { row, keep } => {
            if let Some(r) = pick(*row, len) {
                let keep = usize::from(*keep) % (rows[r].bytes.len() + 1);
                rows[r].bytes.truncate(keep);
            }
        }
        RowEdit::Delete(i) => {
            if let Some(r) = pick(*i, len) {
                rows.remove(r);
            }
        }
        RowEdit::SetSeq { row, seq } => {
            if let Some(r) = pick(*row, len) {
                rows[r].seq = *seq;
            }
        }
        RowEdit::ShiftSeq { row, by } => {
            if let Some(r) = pick(*row, len) {
                rows[r].seq = rows[r].seq.saturating_add(i64::from(*by));
            }
        }
        RowEdit::SetSession { row, session: s } => {
            if let Some(r) = pick(*row, len) {
                rows[r].session = session(*s);
            }
        }
        RowEdit::SetRun { row, rseq } => {
            if let Some(r) = pick(*row, len) {
                rows[r].root = rseq.map(|s| ("r".to_owned(), s));
            }
        }
        RowEdit::SetWorkflow { row, wseq } => {
            if let Some(r) = pick(*row, len) {
                rows[r].wf = wseq.map(|s| ("w".to_owned(), s));
            }
        }
        RowEdit::Head { session: s, head } => {
            heads.insert(session(*s), *head);
        }
        RowEdit::DropHead(s) => {
            heads.remove(&session(*s));
        }
        RowEdit::Splice { journal, line, seq } => {
            if let Some(mut r) = narad_fuzz::any_line(*journal, *line).and_then(row_of) {
                r.seq = *seq;
                rows.push(r);
            }
        }
    }
}

fn write(
    raw: &mut Connection,
    rows: &[Row],
    heads: &BTreeMap<String, i64>,
) -> rusqlite::Result<()> {
    let tx = raw.transaction()?;
    tx.execute_batch("DELETE FROM events; DELETE FROM heads;")?;
    for r in rows {
        tx.execute(
            "INSERT OR IGNORE INTO events (session, seq, event_id, bytes, root, rseq, wf, wseq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                r.session,
                r.seq,
                r.event_id,
                r.bytes,
                r.root.as_ref().map(|x| &x.0),
                r.root.as_ref().map(|x| x.1),
                r.wf.as_ref().map(|x| &x.0),
                r.wf.as_ref().map(|x| x.1),
            ],
        )?;
    }
    for (s, h) in heads {
        tx.execute(
            "INSERT OR IGNORE INTO heads (session, head) VALUES (?1, ?2)",
            params![s, h],
        )?;
    }
    tx.commit()
}

/// Checks one page against the cursor it was read after; returns the next
/// cursor. `seq` gives the position the page orders by.
fn next_cursor(
    what: &str,
    after: u64,
    page: Result<Page, StoreError>,
    limit: usize,
    seq: impl Fn(&StoredEvent) -> Option<u64>,
) -> Option<u64> {
    let page = match page {
        Ok(p) => p,
        Err(e) => {
            // A typed error: its code is one of the stable ones.
            assert!(!e.code().is_empty());
            return None;
        }
    };
    assert!(
        page.events.len() <= limit,
        "{what}: page longer than its limit"
    );
    let mut last = after;
    for ev in &page.events {
        let s = seq(ev);
        assert!(
            s.is_some_and(|s| s > last),
            "{what}: positions do not advance past the cursor {last}: {s:?}"
        );
        last = s.unwrap_or(last);
    }
    if let Some(n) = page.next {
        assert!(
            n > after,
            "{what}: next cursor {n} does not advance past {after}"
        );
    }
    page.next
}

async fn read_all(
    store: &SqliteStore,
    limit: usize,
    bound: usize,
    scopes: &BTreeSet<(String, bool, String)>,
) {
    let mut sessions = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..bound {
        match store.list_sessions(after.as_deref(), limit).await {
            Ok(ids) => {
                assert!(
                    ids.len() <= limit,
                    "list_sessions: page longer than its limit"
                );
                for w in ids.windows(2) {
                    assert!(w[0] < w[1], "list_sessions: ids out of order");
                }
                if let (Some(a), Some(first)) = (&after, ids.first()) {
                    assert!(first > a, "list_sessions: cursor did not advance");
                }
                let done = ids.len() < limit;
                after = ids.last().cloned();
                sessions.extend(ids);
                if done || after.is_none() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    for sid in &sessions {
        let _ = store.head(sid).await;
        let mut after = 0;
        let mut pages = 0;
        loop {
            pages += 1;
            assert!(pages <= bound, "read_session: more pages than rows");
            let page = store.read_session(sid, after, limit).await;
            match next_cursor("read_session", after, page, limit, |e| {
                Some(e.position.session_sequence)
            }) {
                Some(n) => after = n,
                None => break,
            }
        }
    }
    for (sid, run, id) in scopes {
        let mut after = 0;
        let mut pages = 0;
        loop {
            pages += 1;
            assert!(pages <= bound, "scoped read: more pages than rows");
            let (what, page) = if *run {
                ("read_run", store.read_run(sid, id, after, limit).await)
            } else {
                (
                    "read_workflow",
                    store.read_workflow(sid, id, after, limit).await,
                )
            };
            let seq = |e: &StoredEvent| {
                let p = if *run {
                    &e.position.run
                } else {
                    &e.position.workflow
                };
                p.as_ref().map(|x| x.1)
            };
            match next_cursor(what, after, page, limit, seq) {
                Some(n) => after = n,
                None => break,
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let h = harness();
    let seed = narad_fuzz::journal(input.journal);
    let mut rows: Vec<Row> = seed.iter().filter_map(|l| row_of(l)).collect();
    let mut heads: BTreeMap<String, i64> = BTreeMap::new();
    for r in &rows {
        let h = heads.entry(r.session.clone()).or_default();
        *h = (*h).max(r.seq);
    }
    let mut pool: Vec<String> = heads.keys().cloned().collect();
    pool.extend(["other".to_owned(), String::new()]);
    for e in input.edits.iter().take(32) {
        edit(&mut rows, &mut heads, &pool, e);
    }
    let mut scopes = BTreeSet::new();
    for r in &rows {
        if let Some((root, _)) = &r.root {
            scopes.insert((r.session.clone(), true, root.clone()));
        }
        if let Some((wf, _)) = &r.wf {
            scopes.insert((r.session.clone(), false, wf.clone()));
        }
    }
    {
        let Ok(mut raw) = h.raw.lock() else { return };
        if let Err(e) = write(&mut raw, &rows, &heads) {
            panic!("cannot write the rows: {e}");
        }
    }
    let limit = 1 + usize::from(input.page % 8);
    // Every page holds at least one row, so more pages than rows is a loop.
    let bound = rows.len() + heads.len() + 2;
    h.rt.block_on(read_all(&h.store, limit, bound, &scopes));
});
