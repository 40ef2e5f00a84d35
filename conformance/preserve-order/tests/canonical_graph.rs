//! narad-core's canonical graph test, compiled with serde_json's
//! `preserve_order` on: the same pinned bytes must hold.
#![allow(clippy::unwrap_used, clippy::panic)]

include!("../../../crates/narad-core/tests/canonical/cases.rs");

#[test]
fn this_build_has_preserve_order_on() {
    assert!(preserve_order_on());
}
