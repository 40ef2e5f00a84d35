//! Arbitrary bytes into `Validator::parse`: never a panic, and a record that
//! parses keeps its exact bytes and re-serializes to a record that parses
//! again to the same JSON object. Whatever the hand-written fast path
//! accepts, the strict slow path accepts too, as the same record with the
//! same content fingerprint.
#![no_main]

use libfuzzer_sys::fuzz_target;
use narad_core::{Parsed, Record, Validator};

fn fingerprint(p: &Parsed) -> Option<u64> {
    match p {
        Parsed::Record {
            record: Record::Authority(ev),
            ..
        } => Some(ev.wire.fingerprint()),
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let v = Validator::default();
    let bytes = bytes::Bytes::copy_from_slice(data);
    if let Some(fast) = v.parse_fast(&bytes) {
        let slow = match v.parse_slow(bytes) {
            Ok(slow) => slow,
            Err(e) => panic!("the fast path took what the slow path refuses: {}", e.code.as_str()),
        };
        assert_eq!(fast, slow, "the two paths read different records");
        assert_eq!(fingerprint(&fast), fingerprint(&slow), "fingerprints differ");
    }
    let Ok(parsed) = v.parse(data) else {
        return;
    };
    let Parsed::Record { record, class } = parsed else {
        return;
    };
    assert_eq!(&record.wire().bytes()[..], data, "bytes not kept exactly");
    let value = record.to_json_value();
    let again = match serde_json::to_vec(&value) {
        Ok(b) => b,
        Err(e) => panic!("a parsed record does not serialize: {e}"),
    };
    match v.parse(&again) {
        Ok(Parsed::Record {
            record: r2,
            class: c2,
        }) => {
            assert_eq!(c2, class, "class changed on re-parse");
            assert_eq!(r2.to_json_value(), value, "re-parse changed the object");
        }
        Ok(other) => panic!("re-serialized record became {other:?}"),
        Err(e) => panic!("re-serialized record refused: {}", e.code.as_str()),
    }
});
