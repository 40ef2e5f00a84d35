//! TODO(issue 13): fuzz `narad_cli::lines`, the CLI's bounded line reader,
//! once it exists (the CLI helper is adding it). Not registered in
//! `fuzz/Cargo.toml` yet; to wire it, add `narad-cli = { path =
//! "../crates/narad-cli" }` and a `[[bin]] name = "line_reader"` entry.
//!
//! Intended properties, for arbitrary bytes split into arbitrary read sizes
//! (a reader that returns short reads): no panic; every line returned is at
//! most the limit; an oversized line is one typed error and the reader goes
//! on with the next line; the concatenation of the lines returned and the
//! skipped ones, with their terminators, is the input; memory stays bounded
//! by the limit, not the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Placeholder until the API lands: split on '\n' the way the reader must.
    let _ = data.split(|b| *b == b'\n').count();
});
