//! # narad-store-postgres
//!
//! The PostgreSQL backend, for several engine processes on several hosts.
//!
//! **Not implemented yet**: this crate is a placeholder so the workspace has
//! its final shape; see the open issues. It exports nothing.
