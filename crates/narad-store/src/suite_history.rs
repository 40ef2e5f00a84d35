//! Store suite cases for paged history: workflow paging and the §10.2
//! combined cursors, checked against a full-scan oracle.

// Test-support code: a panic here is a test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::future::Future;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::suite::{batch, event_at, stored};
use crate::{HistoryQuery, Store, StoreError, StoredEvent};

fn workflow_event(seq: u64, wseq: u64, ty: &str) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": ty, "protocolVersion": "narad/v1", "eventId": format!("w{seq}"),
        "timestamp": "2026-08-05T00:00:00Z", "sessionId": "s", "sessionSequence": seq,
        "workflowId": "wf", "workflowSequence": wseq
    }))
    .unwrap();
    stored(&bytes)
}

/// Suite case `workflow_history_pages_by_workflow_sequence`.
pub async fn workflow_history_pages_by_workflow_sequence<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let evs = vec![
        workflow_event(1, 1, "workflow.started"),
        event_at("s", 2, 1, "a"),
        workflow_event(3, 2, "workflow.finished"),
    ];
    let mut skewed = evs.clone();
    skewed[2].position.workflow = Some(("wf".into(), 3));
    assert_eq!(
        s.append(batch("s", 0, skewed)).await.unwrap_err(),
        StoreError::Contiguity {
            domain: "workflowSequence"
        }
    );
    s.append(batch("s", 0, evs.clone())).await.unwrap();
    let first = s.read_workflow("s", "wf", 0, 1).await.unwrap();
    assert_eq!((first.events, first.next), (vec![evs[0].clone()], Some(1)));
    let rest = s.read_workflow("s", "wf", 1, 10).await.unwrap();
    assert_eq!((rest.events, rest.next), (vec![evs[2].clone()], None));
}

/// A run-tree event at any position: `run` = `(rootRunId, sequence)`,
/// `workflow` = `(workflowId, workflowSequence)`.
fn placed(seq: u64, run: Option<(&str, u64)>, workflow: Option<(&str, u64)>) -> StoredEvent {
    let mut v = match (run, workflow) {
        (Some((root, rseq)), _) => json!({
            "type": "tool.call.started", "rootRunId": root, "runId": root, "sequence": rseq,
            "toolCallId": format!("t{seq}"), "toolName": "x", "executor": "backend", "args": {}
        }),
        (None, Some(_)) => json!({"type": "workflow.started"}),
        (None, None) => json!({
            "type": "message.user.recorded", "messageId": format!("u{seq}"),
            "messageScope": "session", "content": "hi"
        }),
    };
    let o = v.as_object_mut().unwrap();
    o.insert("protocolVersion".into(), json!("narad/v1"));
    o.insert("eventId".into(), json!(format!("e{seq}")));
    o.insert("timestamp".into(), json!("2026-08-05T00:00:00Z"));
    o.insert("sessionId".into(), json!("h"));
    o.insert("sessionSequence".into(), json!(seq));
    if let Some((wf, wseq)) = workflow {
        o.insert("workflowId".into(), json!(wf));
        o.insert("workflowSequence".into(), json!(wseq));
    }
    stored(&serde_json::to_vec(&v).unwrap())
}

/// The §10.2 rule written the slow way, over the whole journal: which
/// session positions each cursor names, and the filtered events after the
/// first position they share.
fn history_oracle(all: &[StoredEvent], q: &HistoryQuery) -> Result<Vec<StoredEvent>, StoreError> {
    let head = all.len() as u64;
    let mut positions: Vec<u64> = (0..=head + 1).collect();
    if let Some(a) = q.after_session_sequence {
        positions.retain(|p| *p == a);
    }
    type Pick = fn(&StoredEvent) -> Option<&(String, u64)>;
    type Filter<'a> = Option<&'a (String, Option<u64>)>;
    let scopes: [(Filter<'_>, Pick); 2] = [
        (q.run.as_ref(), |e| e.position.run.as_ref()),
        (q.workflow.as_ref(), |e| e.position.workflow.as_ref()),
    ];
    for (filter, pick) in scopes {
        if let Some((id, Some(n))) = filter {
            let in_scope: Vec<u64> = all
                .iter()
                .filter(|e| pick(e).is_some_and(|(i, _)| i == id))
                .map(|e| e.position.session_sequence)
                .collect();
            if *n as usize > in_scope.len() {
                return Err(StoreError::CursorConflict);
            }
            // Position p is named by n when exactly n scope events are <= p.
            positions.retain(|p| in_scope.iter().filter(|s| **s <= *p).count() as u64 == *n);
        }
    }
    let Some(start) = positions.first() else {
        return Err(StoreError::CursorConflict);
    };
    Ok(all
        .iter()
        .filter(|e| e.position.session_sequence > *start)
        .filter(|e| {
            q.run
                .as_ref()
                .is_none_or(|(id, _)| e.position.run.as_ref().is_some_and(|(i, _)| i == id))
                && q.workflow.as_ref().is_none_or(|(id, _)| {
                    e.position.workflow.as_ref().is_some_and(|(i, _)| i == id)
                })
        })
        .take(q.limit)
        .cloned()
        .collect())
}

/// Suite case `combined_cursors_must_be_mutually_consistent`.
pub async fn combined_cursors_must_be_mutually_consistent<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    // Interleaved: run "r" (some of it inside workflow "wf"), workflow-only
    // events, another run tree "q", and plain session events.
    let (mut r, mut q, mut w) = (0, 0, 0);
    let mut evs = Vec::new();
    for seq in 1..=14u64 {
        let ev = match seq % 5 {
            0 | 1 => {
                r += 1;
                if seq % 2 == 0 {
                    w += 1;
                    placed(seq, Some(("r", r)), Some(("wf", w)))
                } else {
                    placed(seq, Some(("r", r)), None)
                }
            }
            2 => {
                w += 1;
                placed(seq, None, Some(("wf", w)))
            }
            3 => {
                q += 1;
                placed(seq, Some(("q", q)), None)
            }
            _ => placed(seq, None, None),
        };
        evs.push(ev);
    }
    s.append(batch("h", 0, evs.clone())).await.unwrap();
    let mut checked = (0, 0);
    for a in [None, Some(0), Some(3), Some(6), Some(10), Some(14)] {
        for rn in [
            None,
            Some(None),
            Some(Some(0)),
            Some(Some(2)),
            Some(Some(r)),
            Some(Some(r + 1)),
        ] {
            for wn in [
                None,
                Some(None),
                Some(Some(0)),
                Some(Some(1)),
                Some(Some(w)),
            ] {
                for limit in [2, 100] {
                    let query = HistoryQuery {
                        after_session_sequence: a,
                        run: rn.map(|n| ("r".to_owned(), n)),
                        workflow: wn.map(|n| ("wf".to_owned(), n)),
                        limit,
                    };
                    let want = history_oracle(&evs, &query);
                    let got = s.read_history("h", &query).await;
                    match (&want, &got) {
                        (Ok(w), Ok(g)) => {
                            assert_eq!(&g.events, w, "{query:?}");
                            checked.0 += 1;
                            // Paging on: `next` continues where the page ended.
                            if let Some(next) = g.next {
                                let more = s
                                    .read_history(
                                        "h",
                                        &HistoryQuery {
                                            after_session_sequence: Some(next),
                                            run: query
                                                .run
                                                .as_ref()
                                                .map(|(id, _)| (id.clone(), None)),
                                            workflow: query
                                                .workflow
                                                .as_ref()
                                                .map(|(id, _)| (id.clone(), None)),
                                            limit: 100,
                                        },
                                    )
                                    .await
                                    .unwrap();
                                assert!(more
                                    .events
                                    .iter()
                                    .all(|e| e.position.session_sequence > next));
                            }
                        }
                        (Err(_), Err(StoreError::CursorConflict)) => checked.1 += 1,
                        _ => panic!("{query:?}: oracle {want:?}, store {got:?}"),
                    }
                }
            }
        }
    }
    assert!(checked.0 > 50 && checked.1 > 50, "{checked:?}");
    // Two named cases. Run "r" event 2 is session 5 and event 3 is 6: a run
    // cursor 2 agrees with session cursor 5, not with 9.
    let agree = HistoryQuery::default()
        .run("r", Some(2))
        .after_session_sequence(5);
    let page = s.read_history("h", &agree).await.unwrap();
    assert_eq!(
        page.events.first().map(|e| e.position.session_sequence),
        Some(6)
    );
    let clash = HistoryQuery::default()
        .run("r", Some(2))
        .after_session_sequence(9);
    assert_eq!(
        s.read_history("h", &clash).await.unwrap_err().code(),
        "cursor_conflict"
    );
}

/// A run-tree event at `seq` carrying about 300 KB of args.
fn large_event(seq: u64) -> StoredEvent {
    let bytes = serde_json::to_vec(&json!({
        "type": "tool.call.started", "protocolVersion": "narad/v1",
        "eventId": format!("big-{seq}"), "timestamp": "2026-08-05T00:00:00Z",
        "sessionId": "s", "sessionSequence": seq, "rootRunId": "r", "runId": "r",
        "sequence": seq, "toolCallId": format!("t{seq}"), "toolName": "x",
        "executor": "backend", "args": {"a": "x".repeat(150_000), "b": "y".repeat(150_000)}
    }))
    .unwrap();
    stored(&bytes)
}

/// Suite case `pages_of_large_events_stop_at_their_bytes`: a read of many
/// large events returns at most about [`crate::PAGE_BYTES`] of them (at
/// least one), with `next` set, and the pages join to the whole history,
/// by session and by run tree.
pub async fn pages_of_large_events_stop_at_their_bytes<S, F, Fut>(dir: &Path, open: F)
where
    S: Store + 'static,
    F: Fn(PathBuf) -> Fut,
    Fut: Future<Output = Result<S, StoreError>>,
{
    let s = open(dir.join("store")).await.unwrap();
    let all: Vec<StoredEvent> = (1..=40).map(large_event).collect();
    for (i, chunk) in all.chunks(10).enumerate() {
        let head = (i * 10) as u64;
        s.append(batch("s", head, chunk.to_vec())).await.unwrap();
    }
    let size = all[0].bytes.len();
    for by_run in [false, true] {
        let (mut read, mut after, mut pages) = (Vec::new(), 0, 0);
        loop {
            let page = if by_run {
                s.read_run("s", "r", after, 1000).await.unwrap()
            } else {
                s.read_session("s", after, 1000).await.unwrap()
            };
            pages += 1;
            let bytes: usize = page.events.iter().map(|e| e.bytes.len()).sum();
            assert!(!page.events.is_empty());
            assert!(bytes < crate::PAGE_BYTES + size, "{bytes} bytes in a page");
            read.extend(page.events);
            match page.next {
                Some(n) => {
                    assert_eq!(n, read.len() as u64, "next is the last position read");
                    after = n;
                }
                None => break,
            }
        }
        assert!(pages >= 3, "{pages} pages for 12 MB");
        assert_eq!(read, all);
    }
    // The count limit still applies below the byte budget.
    let page = s.read_session("s", 0, 2).await.unwrap();
    assert_eq!((page.events.len(), page.next), (2, Some(2)));
}
