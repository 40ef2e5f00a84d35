//! # narad-store-sqlite
//!
//! The SQLite backend (rusqlite), safe for several processes on one file.
//!
//! **Not implemented yet**: this crate is a placeholder so the workspace has
//! its final shape; see the open issues. It exports nothing.
