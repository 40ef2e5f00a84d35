//! The shared store suite on PostgreSQL (a real server), plus the checks
//! specific to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

narad_store::store_suite!(common::open, unless common::ready());
