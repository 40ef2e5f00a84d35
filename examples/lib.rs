//! Shared helpers for the runnable examples (`cargo run --example NAME`).
