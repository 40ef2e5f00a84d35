//! Tests of the snapshot layout: exact restores, cuts, formats, and
//! snapshots for a store.

use super::*;

fn line(n: u64, run: &str, seq: u64, body: &str) -> Vec<u8> {
    format!(
        r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},"rootRunId":"{run}","runId":"{run}","sequence":{seq},{body}}}"#
    )
    .into_bytes()
}

fn started(n: u64, run: &str, seq: u64, tool: &str) -> Vec<u8> {
    let body = format!(
        r#""type":"tool.call.started","toolCallId":"{tool}","toolName":"search","executor":"backend","args":{{}}"#
    );
    line(n, run, seq, &body)
}

fn finished(n: u64, run: &str, seq: u64, tool: &str) -> Vec<u8> {
    let body = format!(
        r#""type":"tool.call.finished","toolCallId":"{tool}","outcome":"success","response":{{}}"#
    );
    line(n, run, seq, &body)
}

/// A session of 20 closed runs (past the arenas' index threshold),
/// each with a finished tool call, then an open run with an open call;
/// and the records that go on from there.
fn session() -> (Checker, Vec<Vec<u8>>) {
    let mut c = Checker::default();
    let mut n = 0;
    let push = |c: &mut Checker, b: Vec<u8>| {
        assert!(c.push_bytes(&b).is_ok(), "{}", String::from_utf8_lossy(&b));
    };
    for i in 0..20 {
        let run = format!("run-{i}");
        push(&mut c, line(n + 1, &run, 1, r#""type":"run.started""#));
        push(&mut c, started(n + 2, &run, 2, &format!("tool-{i}")));
        push(&mut c, finished(n + 3, &run, 3, &format!("tool-{i}")));
        push(&mut c, line(n + 4, &run, 4, r#""type":"run.finished""#));
        n += 4;
    }
    push(&mut c, line(n + 1, "open", 1, r#""type":"run.started""#));
    push(&mut c, started(n + 2, "open", 2, "tool-open"));
    let next = vec![
        finished(n + 3, "open", 3, "tool-open"),
        line(n + 4, "open", 4, r#""type":"run.finished""#),
        line(1, "run-0", 1, r#""type":"run.started""#),
        line(n + 5, "run-3", 5, r#""type":"run.started""#),
    ];
    (c, next)
}

/// Every read a host makes, and the records that follow.
fn exercise(mut c: Checker, next: &[Vec<u8>]) -> String {
    let mut out = c.debug_state();
    out += &c.state_json("s").unwrap_or_default();
    let runs: Vec<String> = c.runs("s").map(|(k, _)| k.to_owned()).collect();
    for r in &runs {
        out += &format!("{:?}{:?}", c.graph("s", r), c.run_head("s", r));
        out += &format!("{:?}", c.tool_call("s", &r.replace("run", "tool")));
    }
    for b in next {
        out += &format!("{:?}", c.push_bytes(b));
    }
    out + &c.debug_state()
}

#[test]
fn a_snapshot_restores_exactly_and_no_cut_of_it_restores() {
    let (c, next) = session();
    let snap = c.snapshot();
    let restored = Checker::restore(Validator::default(), &snap).unwrap();
    assert_eq!(restored.debug_state(), c.debug_state());
    assert_eq!(exercise(restored, &next), exercise(c.clone(), &next));
    for cut in 0..snap.len() {
        assert!(Checker::restore(Validator::default(), &snap[..cut]).is_none());
    }
    let mut longer = snap.clone();
    longer.push(0);
    assert!(Checker::restore(Validator::default(), &longer).is_none());
}

/// Past a thousand events the dedup set restores as a frozen run
/// (`seen/sorted.rs`); events after the restore go beside it and then
/// into it. Redeliveries from before, across and after that merge,
/// identical or not, get the verdicts of the checker never restored.
/// Run `i` as two records, from session position `n + 1`.
fn two_record_run(n: u64, i: u64) -> [Vec<u8>; 2] {
    let id = format!("run-{i}");
    let started = line(n + 1, &id, 1, r#""type":"run.started""#);
    [started, line(n + 2, &id, 2, r#""type":"run.finished""#)]
}

/// A session of `runs` two-record runs, and its records.
fn long_session(runs: u64) -> (Checker, Vec<Vec<u8>>) {
    let mut c = Checker::default();
    let mut all = Vec::new();
    for i in 0..runs {
        for b in two_record_run(2 * i, i) {
            assert!(c.push_bytes(&b).is_ok());
            all.push(b);
        }
    }
    (c, all)
}

#[test]
fn a_long_session_restored_decides_redeliveries_as_the_original() {
    let run = two_record_run;
    let (mut c, mut all) = long_session(800);
    let mut restored = Checker::restore(Validator::default(), &c.snapshot()).unwrap();
    assert_eq!(restored.debug_state(), c.debug_state());
    // 1,300 more events: past the 1,024 the run takes beside it.
    for i in 800..1450 {
        for b in run(2 * i, i) {
            assert_eq!(
                format!("{:?}", restored.push_bytes(&b)),
                format!("{:?}", c.push_bytes(&b))
            );
            all.push(b);
        }
    }
    let again = |c: &mut Checker, b: &[u8]| format!("{:?}", c.push_bytes(b));
    for at in [0, 1, 999, 1599, 1600, 2000, 2899] {
        let b = &all[at];
        assert_eq!(again(&mut restored, b), again(&mut c, b), "{at}");
        // The same eventId with other content.
        let other = String::from_utf8_lossy(b).replace("2026-08-05", "2026-08-06");
        let want = again(&mut c, other.as_bytes());
        assert!(want.contains("Err"), "{want}");
        assert_eq!(again(&mut restored, other.as_bytes()), want, "{at}");
    }
    assert_eq!(restored.debug_state(), c.debug_state());
    let twice = Checker::restore(Validator::default(), &restored.snapshot()).unwrap();
    assert_eq!(twice.debug_state(), c.debug_state());
    assert_eq!(restored.snapshot(), c.snapshot());
}

#[test]
fn a_bit_flipped_snapshot_restores_to_none_or_a_checker_that_does_not_panic() {
    let (c, next) = session();
    let first = line(1, "run-0", 1, r#""type":"run.started""#);
    // Both kinds: every eventId kept, and none (format 9, `idsBefore`).
    for snap in [c.snapshot(), c.snapshot_for_store()] {
        let mut restored = 0;
        for i in 0..snap.len() {
            for bit in [0, 5, 7] {
                let mut bad = snap.clone();
                bad[i] ^= 1 << bit;
                if let Some(mut r) = Checker::restore(Validator::default(), &bad) {
                    restored += 1;
                    let _ = r.may_have_forgotten("s", "e1") && r.recall("s", &first);
                    exercise(r, &next);
                }
            }
        }
        // Some flips land where any value parses (a hash, an id's byte).
        assert!(restored > 0);
    }
}

/// A stored snapshot is storage contents: a flipped bit in a long
/// session's dedup set (the frozen run, restored as it lies) either
/// refuses the snapshot or restores a checker that takes redeliveries
/// and new records without a panic.
#[test]
fn a_bit_flipped_dedup_run_restores_to_none_or_a_checker_that_does_not_panic() {
    let (c, all) = long_session(800);
    let snap = c.snapshot();
    // magic, format, then the JSON part; the dedup set is the next part.
    let json_len = u64::from_le_bytes(snap[12..20].try_into().unwrap()) as usize;
    let at = 20 + json_len;
    let seen_len = u64::from_le_bytes(snap[at..at + 8].try_into().unwrap()) as usize;
    assert_eq!(seen_len, all.len() * 12, "12 bytes an entry");
    let mut next: Vec<Vec<u8>> = [0, 1, 700, 1599].map(|i| all[i].clone()).into();
    next.extend(two_record_run(1600, 800));
    let (mut restored, mut refused) = (0, 0);
    // Every byte of a few entries (hash and fingerprint), and a stride
    // through the rest.
    let bytes = (0..36).chain((36..seen_len).step_by(97));
    for i in bytes.map(|i| at + 8 + i) {
        for bit in [0, 7] {
            let mut bad = snap.clone();
            bad[i] ^= 1 << bit;
            match Checker::restore(Validator::default(), &bad) {
                Some(mut r) => {
                    restored += 1;
                    // What reads the dedup set: pushes, and the next
                    // snapshot (the whole host surface: the test above).
                    for b in &next {
                        let _ = r.push_bytes(b);
                    }
                    let _ = r.snapshot();
                }
                None => refused += 1,
            }
        }
    }
    // A flip in a fingerprint still reads; one in a hash's high bits
    // breaks the order.
    assert!(restored > 0 && refused > 0, "{restored} {refused}");
}

/// A session-scoped record at session position `n`.
fn plain(n: u64, body: &str) -> Vec<u8> {
    format!(
        r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},{body}}}"#
    )
    .into_bytes()
}

/// A conversation: a user message, a completed and an open streamed
/// message in a run, reasoning, a redaction (shown and hidden); and
/// the records that go on from there, refused ones included.
fn conversation() -> (Checker, Vec<Vec<u8>>) {
    let mut c = Checker::default();
    let records = [
        plain(
            1,
            r#""type":"message.user.recorded","messageId":"u1","messageScope":"session","content":"Hi \"there\" ☃""#,
        ),
        line(2, "r1", 1, r#""type":"run.started""#),
        plain(
            3,
            r#""type":"reasoning.started","reasoningId":"z1","messageId":"a1""#,
        ),
        plain(
            4,
            r#""type":"reasoning.delta","reasoningId":"z1","delta":"Think""#,
        ),
        line(
            5,
            "r1",
            2,
            r#""type":"message.text.started","messageId":"a1","role":"assistant","messageScope":"run""#,
        ),
        plain(
            6,
            r#""type":"message.text.delta","messageId":"a1","delta":"Hel""#,
        ),
        plain(7, r#""type":"message.text.completed","messageId":"a1""#),
        line(
            8,
            "r1",
            3,
            r#""type":"message.text.started","messageId":"a2","role":"assistant","messageScope":"run""#,
        ),
        plain(
            9,
            r#""type":"message.text.delta","messageId":"a2","delta":"Wor""#,
        ),
        plain(
            10,
            r#""type":"message.redacted","messageId":"u1","reason":"pii","displayReplacement":"[removed]""#,
        ),
        plain(
            11,
            r#""type":"message.user.recorded","messageId":"u2","messageScope":"session","content":"" "#,
        ),
        plain(
            12,
            r#""type":"message.redacted","messageId":"u2","reason":"pii","displayReplacement":null"#,
        ),
    ];
    for b in &records {
        assert!(c.push_bytes(b).is_ok(), "{}", String::from_utf8_lossy(b));
    }
    let next = vec![
        plain(
            13,
            r#""type":"message.text.delta","messageId":"a2","delta":"ld""#,
        ),
        plain(
            14,
            r#""type":"message.text.delta","messageId":"a1","delta":"late""#,
        ),
        plain(
            14,
            r#""type":"message.user.recorded","messageId":"a1","messageScope":"session","content":"again""#,
        ),
        plain(14, r#""type":"message.text.completed","messageId":"a2""#),
        plain(
            15,
            r#""type":"message.user.recorded","messageId":"u3","messageScope":"session","content":"new""#,
        ),
        plain(
            16,
            r#""type":"reasoning.delta","reasoningId":"z1","delta":" more""#,
        ),
        plain(
            17,
            r#""type":"message.redacted","messageId":"nope","reason":"pii","displayReplacement":"x""#,
        ),
    ];
    (c, next)
}

#[test]
fn a_transcript_restores_exactly_and_flipped_bits_never_panic() {
    let (c, next) = conversation();
    let snap = c.snapshot();
    let restored = Checker::restore(Validator::default(), &snap).unwrap();
    assert_eq!(restored.debug_state(), c.debug_state());
    assert_eq!(restored.transcript("s"), c.transcript("s"));
    let (a, b) = (exercise(restored, &next), exercise(c.clone(), &next));
    assert_eq!(a, b);
    assert!(b.contains("message_duplicate") && b.contains("message_completed"));
    for cut in 0..snap.len() {
        assert!(Checker::restore(Validator::default(), &snap[..cut]).is_none());
    }
    for i in 0..snap.len() {
        for bit in [0, 6] {
            let mut bad = snap.clone();
            bad[i] ^= 1 << bit;
            if let Some(r) = Checker::restore(Validator::default(), &bad) {
                exercise(r, &next);
            }
        }
    }
}

/// The messages have one source, their binary part: a snapshot whose
/// JSON carries them too (no checker writes one) is refused.
#[test]
fn a_snapshot_whose_json_carries_messages_or_reasoning_is_refused() {
    let (c, _) = conversation();
    let snap = c.snapshot();
    let json_len = u64::from_le_bytes(snap[12..20].try_into().unwrap()) as usize;
    let open: serde_json::Value = serde_json::from_slice(&snap[20..20 + json_len]).unwrap();
    // The snapshot with its JSON part replaced by `open`.
    let with = |open: &serde_json::Value| {
        let json = serde_json::to_vec(open).unwrap();
        let mut out = snap[..12].to_vec();
        out.extend_from_slice(&(json.len() as u64).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(&snap[20 + json_len..]);
        out
    };
    let restored = Checker::restore(Validator::default(), &with(&open)).unwrap();
    assert_eq!(restored.debug_state(), c.debug_state());
    let mut carrying = open.clone();
    let messages = serde_json::to_value(c.transcript("s").unwrap()).unwrap()["messages"].take();
    carrying["sessions"]["s"]["state"]["transcript"]["messages"] = messages;
    assert!(Checker::restore(Validator::default(), &with(&carrying)).is_none());
    let reasoning = &c.transcript("s").unwrap().reasoning;
    assert!(!reasoning.is_empty());
    let mut carrying = open.clone();
    let reasoning = serde_json::to_value(reasoning).unwrap();
    carrying["sessions"]["s"]["state"]["transcript"]["reasoning"] = reasoning;
    assert!(Checker::restore(Validator::default(), &with(&carrying)).is_none());
}

/// The second thread's work comes back; if it panics, `beside` answers
/// `None` for it (and the caller refuses the snapshot), never a panic
/// of its own.
#[test]
fn beside_returns_both_results_and_survives_a_panic_on_the_second_thread() {
    assert_eq!(beside(usize::MAX, || 1, || 2), (Some(1), 2));
    assert_eq!(beside(0, || 1, || 2), (Some(1), 2));
    let (a, b) = beside(
        usize::MAX,
        || -> u8 { panic!("on the second thread") },
        || 2,
    );
    assert_eq!((a, b), (None, 2));
}

/// The host's check runs exactly once, whether the bytes hold sessions,
/// none, or are no snapshot at all; when it fails, no checker.
#[test]
fn the_check_runs_once_and_a_failed_check_gives_no_checker() {
    let (c, _) = conversation();
    let snap = c.snapshot();
    let empty = Checker::default().snapshot();
    let inputs: [&[u8]; 4] = [&snap, &empty, &snap[..snap.len() - 1], b"not a snapshot"];
    for (i, bytes) in inputs.into_iter().enumerate() {
        for answer in [true, false] {
            let mut runs = 0;
            let (passed, restored) = read_checked(Validator::default(), bytes, None, || {
                runs += 1;
                answer
            });
            assert_eq!((runs, passed), (1, answer), "input {i}");
            assert_eq!(restored.is_some(), answer && i < 2, "input {i}");
        }
    }
}

#[test]
fn a_snapshot_of_another_format_is_not_restored() {
    let (c, _) = session();
    // Older layouts (8 and 9 held the messages as rows) and unknown
    // ones are replayed, not restored.
    for format in [5, 8, 9, 13] {
        let mut snap = c.snapshot();
        snap[MAGIC.len()] = format;
        assert!(Checker::restore(Validator::default(), &snap).is_none());
    }
}

/// A snapshot for a store keeps no eventId: the restored checker says
/// which ids it may have forgotten, takes back only stored events of
/// positions the snapshot covered, and then decides as before.
#[test]
fn a_snapshot_for_a_store_forgets_event_ids_until_they_are_recalled() {
    let (c, next) = session();
    let full = c.snapshot();
    let forgetful = c.snapshot_for_store();
    assert_eq!(&full[MAGIC.len()..MAGIC.len() + 4], &[10, 0, 0, 0]);
    assert_eq!(&forgetful[MAGIC.len()..MAGIC.len() + 4], &[11, 0, 0, 0]);
    // 81 events' dedup entries of 12 bytes, and `"idsBefore":82`.
    assert_eq!(full.len() - forgetful.len(), 82 * 12 - 15);
    let mut r = Checker::restore(Validator::default(), &forgetful).unwrap();
    let first = line(1, "run-0", 1, r#""type":"run.started""#);
    assert!(r.may_have_forgotten("s", "e1"));
    assert!(!r.may_have_forgotten("t", "e1"), "no such session");
    // Not an authority event of `s` at a covered position: not taken.
    assert!(!r.recall("t", &first));
    assert!(!r.recall("s", b"{}"));
    assert!(!r.recall("s", &line(83, "run-0", 1, r#""type":"run.started""#)));
    assert!(r.may_have_forgotten("s", "e1"));
    assert!(r.recall("s", &first));
    assert!(!r.may_have_forgotten("s", "e1"));
    assert_eq!(r.push_bytes(&first), Ok(super::super::Applied::Duplicate));
    let changed = line(1, "run-0", 1, r#""type":"run.started","parentRunId":"x""#);
    let refused = r.push_bytes(&changed).map_err(|e| e.code);
    assert_eq!(refused, Err("duplicate_event_conflict"));
    // New events are known as they are pushed.
    let (mut a, mut b) = (r, Checker::restore(Validator::default(), &full).unwrap());
    for n in &next {
        let code = |r: Result<_, super::super::Rejection>| r.map_err(|e| e.code);
        assert_eq!(code(a.push_bytes(n)), code(b.push_bytes(n)));
    }
    assert!(!a.may_have_forgotten("s", "e84"));
    // Still forgetful after its own full snapshot: format 11 again.
    let again = a.snapshot();
    assert_eq!(&again[MAGIC.len()..MAGIC.len() + 4], &[11, 0, 0, 0]);
    let a = Checker::restore(Validator::default(), &again).unwrap();
    assert!(a.may_have_forgotten("s", "e2") && !a.may_have_forgotten("s", "e84"));
    // Version 10 never omits ids; no session omits ids past its head.
    let mut v10 = forgetful.clone();
    v10[MAGIC.len()] = 10;
    assert!(Checker::restore(Validator::default(), &v10).is_none());
    let mut past = forgetful.clone();
    let key = b"\"idsBefore\":82";
    let at = past.windows(key.len()).position(|w| w == key).unwrap();
    past[at + key.len() - 2..at + key.len()].copy_from_slice(b"99");
    assert!(Checker::restore(Validator::default(), &past).is_none());
    past[at + key.len() - 2..at + key.len()].copy_from_slice(b"81");
    assert!(Checker::restore(Validator::default(), &past).is_some());
}
