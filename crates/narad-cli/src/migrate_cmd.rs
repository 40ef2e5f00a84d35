//! `narad migrate`: copies a whole store to another backend through the
//! contract's enumeration of every record ([`narad_store::migrate`]) and
//! verifies every part of the target against the source.

use narad_store::migrate::{compare, copy_all};
use narad_stores::{AnyStore, StoreUrl};

use crate::output::{out, plain};
use crate::progress;
use crate::store_cmds::Outcome;

/// Refuses a `--from` and `--to` that name one store (however its path
/// is spelled): opening a redb file twice would fail as "already open",
/// and a SQLite or PostgreSQL store would be "verified" against itself.
/// Malformed URLs pass here, for the opening to word them.
pub fn distinct(from: &str, to: &str) -> Result<(), String> {
    match (StoreUrl::parse(from), StoreUrl::parse(to)) {
        (Ok(a), Ok(b)) if a.same_store(&b) => {
            // A PostgreSQL URL may hold a password: it is not echoed.
            let which = match &b {
                StoreUrl::Redb(path) | StoreUrl::Sqlite(path) => plain(path).into_owned(),
                StoreUrl::Postgres(..) => "one PostgreSQL database and schema".to_owned(),
            };
            Err(format!(
                "--from and --to name the same store ({which}); migrate copies from one store to another"
            ))
        }
        _ => Ok(()),
    }
}

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
