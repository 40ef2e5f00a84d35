//! Parse -> serialize round trips over every published record, with and
//! without unknown fields, and the typed model checked against every
//! structurally valid mutant.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a panic is a failure report

use narad_conformance::{load_traces, mutate::mutations, require_spec};
use narad_core::{Parsed, Record, ValidationCode, Validator};
use serde_json::{json, Value};

fn parse(bytes: &[u8]) -> Result<Record, narad_core::ValidationError> {
    match Validator::default().parse(bytes)? {
        Parsed::Record { record, .. } => Ok(record),
        Parsed::Ignorable { profile, .. } => panic!("all profiles active, yet {profile} ignorable"),
    }
}

fn published() -> Option<Vec<(String, Vec<u8>, Value)>> {
    let spec = require_spec("round_trip")?;
    let mut out = Vec::new();
    for t in load_traces(&spec.join("conformance")).expect("traces readable") {
        for (line, bytes) in t.lines {
            let v: Value = serde_json::from_slice(&bytes).expect("json");
            if Validator::default().check(&v).is_ok() {
                out.push((format!("{}:{line}", t.name), bytes, v));
            }
        }
    }
    Some(out)
}

#[test]
fn every_published_record_round_trips_with_its_bytes_and_typed_model_intact() {
    let Some(records) = published() else { return };
    assert!(
        records.len() > 90,
        "expected the published corpus, got {}",
        records.len()
    );
    for (at, bytes, value) in &records {
        let record = parse(bytes).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(
            &record.wire().bytes()[..],
            &bytes[..],
            "{at}: bytes changed"
        );
        assert_eq!(&record.to_json_value(), value, "{at}: value changed");
        // The typed model alone reproduces every published field.
        assert_eq!(
            &record.typed_json_value().expect("serializable"),
            value,
            "{at}: typed model lost a field"
        );
    }
}

#[test]
fn unknown_fields_are_preserved_but_ignored_by_the_typed_model() {
    let Some(records) = published() else { return };
    for (at, _, value) in &records {
        let mut extended = value.clone();
        let obj = extended.as_object_mut().expect("object");
        obj.insert(
            "x-vendor".into(),
            json!({"deep": [1, {"k": null}], "n": 1.25}),
        );
        obj.insert("zzUnknownFlag".into(), json!(true));
        let bytes = serde_json::to_vec(&extended).expect("serializable");
        let record = parse(&bytes).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(record.to_json_value(), extended, "{at}");
        assert_eq!(&record.wire().bytes()[..], &bytes[..], "{at}");
        assert_eq!(
            &record.typed_json_value().expect("serializable"),
            value,
            "{at}"
        );
    }
}

#[test]
fn typed_model_represents_every_structurally_valid_mutant() {
    let Some(records) = published() else { return };
    let mut valid = 0;
    for (at, _, value) in &records {
        for (label, mutant) in mutations(value.as_object().expect("object")) {
            let bytes = serde_json::to_vec(&mutant).expect("serializable");
            match parse(&bytes) {
                Ok(record) => {
                    valid += 1;
                    assert_eq!(record.to_json_value(), mutant, "{at} {label}");
                }
                Err(e) => assert_ne!(
                    e.code,
                    ValidationCode::ModelMismatch,
                    "{at} {label}: {e}\n{mutant}"
                ),
            }
        }
    }
    assert!(valid > 1_000, "too few valid mutants exercised: {valid}");
}
