//! `narad migrate`: copies a whole store to another backend through the
//! contract's enumeration of every record ([`narad_store::migrate`]) and
//! verifies every part of the target against the source.

use narad_store::migrate::{compare, copy_all};
use narad_stores::AnyStore;

use crate::output::out;
use crate::progress;
use crate::store_cmds::Outcome;

/// Copies every session's journal, every record of every side space and
/// every workspace watch stream; resumes where a previous run stopped;
/// then compares counts and bytes of every part.
pub async fn migrate(from: &AnyStore, to: &AnyStore) -> Outcome {
    let mut bar = None;
    let copied = copy_all(from, to, |i, n, sid| {
        let bar = bar.get_or_insert_with(|| progress::bar(n as u64, "migrate", "sessions"));
        bar.set_position(i as u64 + 1);
        bar.set_message(sid.to_owned());
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
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
