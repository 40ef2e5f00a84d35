//! # narad-engine
//!
//! The embedded host: checks every command against the reduced state before an atomic append.
//!
//! **Not implemented yet**: this crate is a placeholder so the workspace has
//! its final shape; see the open issues. It exports nothing.
