//! Canonical graph bytes do not depend on serde_json's map order. This file
//! is also compiled by `conformance/preserve-order`, a crate outside the
//! workspace that turns serde_json's `preserve_order` on: the pinned bytes
//! must hold in both builds.
#![allow(clippy::unwrap_used, clippy::panic)]

include!("canonical/cases.rs");
