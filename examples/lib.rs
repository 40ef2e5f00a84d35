//! Shared helpers for the runnable examples (`cargo run --example NAME`).

use narad_core::checker::Checker;
use narad_store::Store;

/// `--store URL` from the command line, else `default`.
pub fn store_url(default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--store")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

/// Prints a session's journal as JSONL and returns the checker that
/// accepted it (an error names the first refused event).
pub async fn print_journal(store: &impl Store, session_id: &str) -> Result<Checker, String> {
    let page = store
        .read_session(session_id, 0, usize::MAX)
        .await
        .map_err(|e| e.to_string())?;
    let mut checker = Checker::default();
    for ev in &page.events {
        println!("{}", String::from_utf8_lossy(&ev.bytes));
        checker
            .push_bytes(&ev.bytes)
            .map_err(|r| format!("event {}: {r}", ev.position.session_sequence))?;
    }
    Ok(checker)
}

/// Runs a session's stored journal through a fresh checker, printing
/// nothing; an error names the first refused event.
pub async fn check_journal(store: &impl Store, session_id: &str) -> Result<Checker, String> {
    let page = store
        .read_session(session_id, 0, usize::MAX)
        .await
        .map_err(|e| e.to_string())?;
    let mut checker = Checker::default();
    for ev in &page.events {
        checker
            .push_bytes(&ev.bytes)
            .map_err(|r| format!("event {}: {r}", ev.position.session_sequence))?;
    }
    Ok(checker)
}
