use super::*;
use crate::checker::{Applied, CLOSED_RECALL};
use crate::Validator;

fn ev(n: u64, body: &str) -> Vec<u8> {
    format!(
        r#"{{"protocolVersion":"narad/v1","eventId":"e{n}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s","sessionSequence":{n},{body}}}"#
    )
    .into_bytes()
}

fn user(n: u64, id: &str) -> Vec<u8> {
    ev(
        n,
        &format!(
            r#""type":"message.user.recorded","messageId":"{id}","messageScope":"session","content":"message number {n}""#
        ),
    )
}

/// A checker that left `n` user messages (`u1`..) to the store, restored
/// from its snapshot for the store; and the record it handed over.
fn restored(n: u64) -> (Checker, Checker, Vec<u8>) {
    let mut c = Checker::default().with_transcript_handover(64, 8);
    c.leave_closed_to_store();
    for i in 1..=n {
        c.push_bytes(&user(i, &format!("u{i}"))).unwrap();
    }
    let taken = c.take_closed("s", usize::MAX);
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].key, key());
    let r = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
    (c, r, taken[0].bytes.clone())
}

#[test]
fn a_snapshot_for_the_store_describes_a_long_transcript_instead_of_holding_it() {
    let (c, r, record) = restored(200);
    let full = c.snapshot();
    let for_store = c.snapshot_for_store();
    // 8 bytes an id hash, not the messages themselves.
    assert!(for_store.len() + record.len() / 2 < full.len());
    assert!(!r.holds_closed_history("s"));
    assert_eq!(r.transcript("s").unwrap().messages.len(), 200);
    assert_eq!(r.transcript("s").unwrap().messages.iter().count(), 0);
    assert_eq!(r.transcript_wanted("s").map(|w| w.at()), Some(200));
}

#[test]
fn a_new_message_id_is_decided_without_the_store() {
    let (_, mut r, _) = restored(200);
    assert_eq!(r.push_bytes(&user(201, "new")), Ok(Applied::Applied));
    assert_eq!(r.transcript("s").unwrap().messages.len(), 201);
}

#[test]
fn a_message_id_of_the_stored_ones_asks_for_the_record_then_decides_as_before() {
    let (c, mut r, record) = restored(200);
    let again = user(201, "u7");
    let err = r.push_bytes(&again).unwrap_err();
    assert_eq!(err.code, CLOSED_RECALL);
    // Not a verdict: nothing counted, nothing changed.
    assert_eq!(r.records_seen(), c.records_seen());
    assert_eq!(r.closed_needed("s"), vec![key()]);
    // Bytes other than the record are not taken.
    let mut other = record.clone();
    other[30] ^= 1;
    assert!(!r.recall_closed("s", &key(), Some(&other)));
    assert!(!r.recall_closed("s", &key(), None));
    assert!(r.recall_closed("s", &key(), Some(&record)));
    assert_eq!(r.transcript_wanted("s").map(|w| w.at()), None);
    assert_eq!(r.transcript("s").unwrap().messages.iter().count(), 200);
    assert_eq!(r.push_bytes(&again).unwrap_err().code, "message_duplicate");
    assert_eq!(
        r.transcript("s").unwrap().messages,
        c.transcript("s").unwrap().messages
    );
}

#[test]
fn a_redaction_of_a_stored_message_is_handed_over_again() {
    let (_, mut r, record) = restored(20);
    let redact = ev(
        21,
        r#""type":"message.redacted","messageId":"u3","reason":"policy","displayReplacement":null"#,
    );
    assert_eq!(r.push_bytes(&redact).unwrap_err().code, CLOSED_RECALL);
    assert!(r.recall_closed("s", &key(), Some(&record)));
    let mut r = r.with_transcript_handover(64, 8);
    assert_eq!(r.push_bytes(&redact), Ok(Applied::Applied));
    // The stored record no longer matches: a new one is due.
    let taken = r.take_closed("s", usize::MAX);
    assert_eq!(taken.len(), 1);
    assert_ne!(taken[0].bytes, record);
    let again = Checker::restore(Validator::default(), &r.snapshot_for_store()).unwrap();
    let mut again = again;
    assert!(again.recall_closed("s", &key(), Some(&taken[0].bytes)));
    let m = again.transcript("s").unwrap().get("u3").unwrap();
    assert_eq!(m.redacted, Some(None));
}

#[test]
fn messages_since_the_handover_stay_in_the_snapshot_until_too_many() {
    let (_, r, record) = restored(20);
    let mut r = r.with_transcript_handover(64, 8);
    for i in 21..=27 {
        r.push_bytes(&user(i, &format!("u{i}"))).unwrap();
    }
    assert!(!r.transcript_recall_wanted("s"));
    let r2 = Checker::restore(Validator::default(), &r.snapshot_for_store()).unwrap();
    assert_eq!(r2.transcript("s").unwrap().messages.len(), 27);
    assert_eq!(r2.transcript("s").unwrap().messages.iter().count(), 7);
    r.push_bytes(&user(28, "u28")).unwrap();
    assert!(r.transcript_recall_wanted("s"));
    assert!(r.take_closed("s", usize::MAX).is_empty());
    assert!(r.recall_closed("s", &key(), Some(&record)));
    let taken = r.take_closed("s", usize::MAX);
    assert_eq!(taken.len(), 1);
    let mut r3 = Checker::restore(Validator::default(), &r.snapshot_for_store()).unwrap();
    assert_eq!(r3.transcript_wanted("s").map(|w| w.at()), Some(28));
    assert!(r3.recall_closed("s", &key(), Some(&taken[0].bytes)));
    assert_eq!(
        r3.transcript("s").unwrap().messages,
        r.transcript("s").unwrap().messages
    );
}

#[test]
fn a_short_transcript_stays_in_the_snapshot() {
    let mut c = Checker::default();
    c.leave_closed_to_store();
    c.push_bytes(&user(1, "u1")).unwrap();
    assert!(c.take_closed("s", usize::MAX).is_empty());
    let r = Checker::restore(Validator::default(), &c.snapshot_for_store()).unwrap();
    assert_eq!(r.transcript_wanted("s").map(|w| w.at()), None);
    assert_eq!(r.transcript("s").unwrap().messages.iter().count(), 1);
}

#[test]
fn hostile_descriptions_do_not_restore() {
    let (c, _, _) = restored(20);
    let snap = c.snapshot_for_store();
    // Cut, or with a byte of the hashes changed out of order.
    for cut in [snap.len() - 1, snap.len() - 8] {
        assert!(Checker::restore(Validator::default(), &snap[..cut]).is_none());
    }
    let mut swapped = snap.clone();
    let n = swapped.len();
    swapped[n - 1] = 0;
    swapped[n - 9] = 0xff;
    let restored = Checker::restore(Validator::default(), &swapped);
    assert!(restored.is_none_or(|r| r.transcript("s").unwrap().messages.len() == 20));
}
