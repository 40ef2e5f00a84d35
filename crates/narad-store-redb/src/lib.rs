//! # narad-store-redb
//!
//! The embedded default backend, on redb.
//!
//! **Not implemented yet**: this crate is a placeholder so the workspace has
//! its final shape; see the open issues. It exports nothing.
