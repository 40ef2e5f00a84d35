//! # narad-store
//!
//! The storage trait every backend implements and the one backend-agnostic test suite.
//!
//! **Not implemented yet**: this crate is a placeholder so the workspace has
//! its final shape; see the open issues. It exports nothing.
