//! Where the test server is: `NARAD_TEST_POSTGRES_URL`. Without it the
//! tests skip with a printed notice — except under CI, where it must be set.
#![allow(dead_code, clippy::panic)]

use std::hash::{Hash, Hasher};
use std::path::Path;

pub fn url() -> Option<String> {
    if let Ok(u) = std::env::var("NARAD_TEST_POSTGRES_URL") {
        return Some(u);
    }
    if std::env::var_os("CI").is_some() {
        panic!("NARAD_TEST_POSTGRES_URL is not set (CI must start a server: .ci/postgres)");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: NARAD_TEST_POSTGRES_URL is not set (start one with .ci/postgres start DIR)"
    );
    None
}

pub fn ready() -> bool {
    url().is_some()
}

/// One schema per test store path, so tests never share data.
pub fn schema_for(path: &Path) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    format!("t{:016x}", h.finish())
}

pub async fn open(
    path: std::path::PathBuf,
) -> Result<narad_store_postgres::PostgresStore, narad_store::StoreError> {
    let url = url().ok_or(narad_store::StoreError::Closed)?;
    narad_store_postgres::PostgresStore::open(&url, &schema_for(&path)).await
}
