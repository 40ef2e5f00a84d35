//! Inputs the fuzz targets (`fuzz/`) found, kept as regression tests.

#![allow(clippy::unwrap_used, clippy::panic)]

use narad_core::checker::Checker;
use narad_core::{Parsed, Validator};

/// `parse_validate`: a 70-digit integer is read as a float. Without exact
/// float parsing the typed view drifts by one ulp from what the bytes say,
/// and re-serializing the record gives a different record.
#[test]
fn a_parsed_record_reserializes_to_the_same_object() {
    let line = br#"{"type":"view.updated","protocolVersion":"narad/v1","eventId":"evt-2","timestamp":"2026-08-05T00:00:02Z","sessionId":"s-1","sessionSequence":2,"viewId":"v2","operation":"patch","patch":[{"op":"add","path":"/rows/-","value":5555555555555556555555555555555555555555555555555555555555555555555550}]}"#;
    let v = Validator::default();
    let Ok(Parsed::Record { record, .. }) = v.parse(line) else {
        panic!("the line is a valid record")
    };
    let again = serde_json::to_vec(&record.to_json_value()).unwrap();
    let Ok(Parsed::Record { record: r2, .. }) = v.parse(&again) else {
        panic!("the re-serialized line is a valid record")
    };
    assert_eq!(r2.to_json_value(), record.to_json_value());
}

/// The same drift through the checker's snapshot: a restored checker must
/// hold exactly the state it was snapshotted from.
#[test]
fn a_checker_snapshot_restores_float_values_exactly() {
    let journal = [
        r#"{"type":"view.opened","protocolVersion":"narad/v1","eventId":"evt-1","timestamp":"2026-08-05T00:00:01Z","sessionId":"s-1","sessionSequence":1,"viewId":"v1","model":{"rows":[]}}"#,
        r#"{"type":"view.updated","protocolVersion":"narad/v1","eventId":"evt-2","timestamp":"2026-08-05T00:00:02Z","sessionId":"s-1","sessionSequence":2,"viewId":"v1","operation":"patch","patch":[{"op":"add","path":"/rows/-","value":5555555555555556555555555555555555555555555555555555555555555555555550}]}"#,
    ];
    let mut c = Checker::default();
    for l in journal {
        c.push_bytes(l.as_bytes()).unwrap();
    }
    let restored = Checker::restore(Validator::default(), &c.snapshot()).unwrap();
    assert_eq!(restored.debug_state(), c.debug_state());
}
