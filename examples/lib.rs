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

/// A private temporary directory for an example's stores, removed (with
/// everything in it, SQLite's `-wal` and `-shm` files included) when
/// dropped, on success or error.
#[derive(Debug)]
pub struct Scratch(std::path::PathBuf);

impl Scratch {
    /// Creates `$TMPDIR/NAME-PID/`.
    pub fn new(name: &str) -> std::io::Result<Self> {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }

    /// A path inside it.
    pub fn join(&self, file: &str) -> std::path::PathBuf {
        self.0.join(file)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Ends the process with a message when `--store` is given to an example
/// that runs on its own private stores.
pub fn refuse_store_flag(example: &str) {
    if std::env::args().any(|a| a == "--store") {
        eprintln!("{example} does not take --store: it runs on private temporary stores");
        std::process::exit(2);
    }
}
