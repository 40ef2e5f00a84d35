//! Reducer snapshot size and cold-hydrate time of one long session at
//! 10k, 100k and 1M events (10k and 100k with `NARAD_BENCH_QUICK=1`), on
//! redb, for two corpora:
//! - `runs`: back-to-back runs of eight events each (run started, a tool
//!   call, progress, three custom events, the tool's finish, run
//!   finished). It holds no transcript text and no documents, so the
//!   snapshot is the reducer's own state;
//! - `messages`: user messages only, so the snapshot is mostly transcript;
//! - `conversation`: the reduce bench's chat (narad-core's
//!   `benches/shared/corpus.rs`): per turn a user message, then a run with
//!   streamed reasoning, a tool call, streamed assistant text and, every
//!   fourth turn, an approval interrupt. About 21 events a turn, so 1M
//!   events hold about 95k messages and 48k reasoning streams.
//!
//! Each session is written straight to the store in batches; then a fresh
//! engine replays it in full, writes a snapshot (handing its closed runs
//! and tool calls to the store as side records: their count and the time
//! are printed), and another fresh engine
//! hydrates from that snapshot, five times (a fresh engine each time; the
//! median and the fastest are printed, then every time in order). Then a
//! cold engine appends a new message, and another reads the whole state
//! (which reads back a transcript the snapshot left to the store): each
//! time, hydrate included, is printed. Figures only; nothing is asserted.
//! `NARAD_BENCH_SIZES=1000000` and `NARAD_BENCH_CORPUS=runs` (or
//! `messages`, `conversation`) narrow a run;
//! `NARAD_BENCH_HYDRATES=30` takes more cold hydrates (to profile them).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use narad_engine::{Engine, EngineConfig, NewSession, Principal};
use narad_store::{Batch, SideSpace, Store, StoredEvent};
use narad_store_redb::RedbStore;
use serde_json::{json, Value};

/// The `k`-th (1-based) event of run number `run`.
fn run_event(sid: &str, seq: u64, run: u64, k: u64) -> StoredEvent {
    let tool = format!("tool-{run}");
    let body = match k {
        1 => json!({"type": "run.started"}),
        2 => {
            json!({"type": "tool.call.started", "toolCallId": tool, "toolName": "search", "executor": "backend", "args": {"query": "narad", "limit": 10}})
        }
        3 => {
            json!({"type": "progress.recorded", "progressId": "phase", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"})
        }
        4..=6 => json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": k}}),
        7 => {
            json!({"type": "tool.call.finished", "toolCallId": tool, "outcome": "success", "response": {"hits": [{"title": "Narad", "score": 0.9}]}})
        }
        _ => {
            json!({"type": "run.finished", "usage": {"promptTokens": 120, "completionTokens": 40, "totalTokens": 160}})
        }
    };
    let root = format!("run-{run}");
    let mut m = json!({
        "protocolVersion": "narad/v1", "eventId": format!("evt-{seq}"),
        "timestamp": "2026-08-05T00:00:01.250Z", "sessionId": sid,
        "sessionSequence": seq, "rootRunId": root, "runId": root, "sequence": k
    });
    if let (Value::Object(m), Value::Object(b)) = (&mut m, body) {
        m.extend(b);
    }
    StoredEvent::from_stored_bytes(&serde_json::to_vec(&m).unwrap()).unwrap()
}

/// The `seq`-th event of a session of user messages.
fn message_event(sid: &str, seq: u64) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": "message.user.recorded", "protocolVersion": "narad/v1",
        "eventId": format!("evt-{seq}"), "timestamp": "2026-08-05T00:00:00.000Z",
        "sessionId": sid, "sessionSequence": seq, "messageId": format!("m{seq}"),
        "messageScope": "session", "content": format!("message number {seq}")
    }))
    .unwrap();
    StoredEvent::from_stored_bytes(&bytes).unwrap()
}

// The hydrate bench takes only the conversation of the shared corpora.
#[allow(dead_code)]
#[path = "../../narad-core/benches/shared/corpus.rs"]
mod corpus;

/// Which session a size is measured on.
#[derive(Clone, Copy)]
enum Corpus {
    Runs,
    Messages,
    Conversation,
}

impl Corpus {
    fn name(self) -> &'static str {
        match self {
            Self::Runs => "runs",
            Self::Messages => "messages",
            Self::Conversation => "conversation",
        }
    }

    /// The events of the corpus from session position `first` on.
    fn events(self, sid: &str, first: u64) -> Box<dyn Iterator<Item = StoredEvent> + '_> {
        match self {
            Self::Runs => {
                Box::new((0..).map(move |i| run_event(sid, first + i, i / 8 + 1, i % 8 + 1)))
            }
            Self::Messages => Box::new((0..).map(move |i| message_event(sid, first + i))),
            Self::Conversation => Box::new(
                corpus::records(corpus::Corpus::Conversation, sid, first).map(|m| {
                    StoredEvent::from_stored_bytes(&serde_json::to_vec(&m).unwrap()).unwrap()
                }),
            ),
        }
    }
}

async fn cold(path: &Path) -> Engine<RedbStore> {
    Engine::with_host(
        RedbStore::open(path.to_path_buf()).await.unwrap(),
        Arc::new(narad_engine::SystemClock),
        Arc::new(narad_engine::RandomIds),
        Arc::new(narad_engine::AllowAll),
        EngineConfig {
            snapshot_every: 0,
            ..EngineConfig::default()
        },
    )
}

async fn one_size(dir: &Path, corpus: Corpus, n: u64) {
    let me = Principal::new("bench");
    let path = dir.join(format!("hydrate-{}-{n}.redb", corpus.name()));
    let e = Engine::new(RedbStore::open(path.clone()).await.unwrap());
    let sid = e.create_session(&me, NewSession::default()).await.unwrap();
    let mut head = e.capabilities(&me, &sid).await.unwrap().session_sequence;
    let base = head;
    let mut events = corpus.events(&sid, base + 1);
    while head < base + n {
        let evs: Vec<_> = events
            .by_ref()
            .take((base + n - head).min(2000) as usize)
            .collect();
        head = e
            .store()
            .append(Batch {
                session_id: sid.clone(),
                expected_head: head,
                events: evs,
                ..Batch::default()
            })
            .await
            .unwrap()
            .head;
    }
    e.store().close().await.unwrap();
    drop(e);

    let full = cold(&path).await;
    let t = Instant::now();
    let caps = full.capabilities(&me, &sid).await.unwrap();
    let replay = t.elapsed().as_secs_f64();
    assert_eq!(caps.session_sequence, head);
    let t = Instant::now();
    full.write_snapshot(&me, &sid).await.unwrap();
    let write = t.elapsed().as_secs_f64();
    // The closed runs and tool calls the snapshot left to the store.
    let (mut closed, mut closed_bytes, mut after) = (0usize, 0usize, None::<String>);
    loop {
        let page = full
            .store()
            .list_side(SideSpace::Closed, after.as_deref(), 10_000)
            .await
            .unwrap();
        closed += page.len();
        closed_bytes += page.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        match page.last() {
            Some((k, _)) if page.len() == 10_000 => after = Some(k.clone()),
            _ => break,
        }
    }
    let size = full
        .store()
        .side(SideSpace::Snapshot, &sid)
        .await
        .unwrap()
        .map_or(0, |b| b.len());
    full.store().close().await.unwrap();
    drop(full);

    let mut times = Vec::new();
    let hydrates = std::env::var("NARAD_BENCH_HYDRATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5usize)
        .max(1);
    for _ in 0..hydrates {
        let snap = cold(&path).await;
        let t = Instant::now();
        let caps = snap.capabilities(&me, &sid).await.unwrap();
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(
            (caps.session_sequence, snap.stats().from_snapshot),
            (head, 1)
        );
        snap.store().close().await.unwrap();
    }
    // Every hydrate in the order taken: on a VM the first touch of a large
    // snapshot's fresh buffer costs several times more in some spells than
    // in others, so the median alone hides whether a slow figure is a
    // spell or the code.
    let each: Vec<String> = times.iter().map(|t| format!("{:.1}", t * 1e3)).collect();
    times.sort_by(f64::total_cmp);
    let (restored, fastest) = (times[times.len() / 2], times[0]);
    // What a cold engine pays past the hydrate: a new message (decided
    // without a transcript left to the store), then, in another, a read of
    // the whole state (which reads that transcript back).
    let after = cold(&path).await;
    let t = Instant::now();
    let message = after.message(&me, &sid, "one more").await.map(|_| ());
    let message = (t.elapsed().as_secs_f64(), message);
    after.store().close().await.unwrap();
    drop(after);
    let after = cold(&path).await;
    let t = Instant::now();
    let state = after.state_json(&me, &sid).await.map(|s| s.len());
    let state = (t.elapsed().as_secs_f64(), state);
    after.store().close().await.unwrap();
    drop(after);
    let _ = std::fs::remove_file(&path);
    println!(
        "hydrate {:<8} {n:>8} events: snapshot {:>10} bytes ({:>6.1} B/event); cold hydrate from snapshot {:>8.1} ms (fastest {:>8.1}); full replay {:>8.1} ms ({:.0} events/s)",
        corpus.name(),
        size,
        size as f64 / n as f64,
        restored * 1e3,
        fastest * 1e3,
        replay * 1e3,
        n as f64 / replay
    );
    println!(
        "        each cold hydrate, ms, in order: {}",
        each.join(" ")
    );
    println!(
        "        write_snapshot after the full replay {:.1} ms; closed records in the store: {closed} ({closed_bytes} bytes with their keys)",
        write * 1e3
    );
    println!(
        "        cold: hydrate and a new message {:.1} ms ({}); hydrate and a whole-state read {:.1} ms ({})",
        message.0 * 1e3,
        message.1.map_or_else(|e| e.code().to_owned(), |()| "ok".into()),
        state.0 * 1e3,
        state.1.map_or_else(|e| e.code().to_owned(), |n| format!("{n} bytes")),
    );
}

fn main() {
    let quick = std::env::var_os("NARAD_BENCH_QUICK").is_some();
    // NARAD_BENCH_SIZES=1000000 and NARAD_BENCH_CORPUS=runs narrow a run
    // (e.g. to profile one size).
    let sizes: Vec<u64> = match std::env::var("NARAD_BENCH_SIZES") {
        Ok(v) => v.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) if quick => vec![10_000, 100_000],
        Err(_) => vec![10_000, 100_000, 1_000_000],
    };
    let only = std::env::var("NARAD_BENCH_CORPUS").ok();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for corpus in [Corpus::Runs, Corpus::Messages, Corpus::Conversation] {
        if only.as_deref().is_some_and(|c| c != corpus.name()) {
            continue;
        }
        for &n in &sizes {
            rt.block_on(one_size(dir.path(), corpus, n));
        }
    }
}
