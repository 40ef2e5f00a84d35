//! `narad migrate`: copies a whole store to another backend through the
//! contract's enumeration of every record ([`narad_store::migrate`]) and
//! verifies every part of the target against the source.

use std::io::IsTerminal;

use narad_store::migrate::{compare, copy_all};
use narad_stores::AnyStore;

use crate::output::{self, out};
use crate::store_cmds::Outcome;

/// Copies every session's journal, every record of every side space and
/// every workspace watch stream; resumes where a previous run stopped;
/// then compares counts and bytes of every part.
pub async fn migrate(from: &AnyStore, to: &AnyStore) -> Outcome {
    let tty = std::io::stderr().is_terminal();
    let copied = copy_all(from, to, |i, n, sid| {
        if tty {
            output::error_text(format_args!("\r[{}/{n}] {sid}\x1b[K", i + 1));
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    if tty {
        output::error_text(format_args!("\n"));
    }
    let verified = compare(from, to).await.map_err(|e| e.to_string())?;
    out!(
        "{} sessions verified in the target ({} events copied this run)",
        verified.sessions,
        copied.events
    );
    out!("verified: {}", verified.summary());
    Ok(0)
}
