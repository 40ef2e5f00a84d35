//! Space reclaimed on sqlite: 10k sessions (1k with `NARAD_BENCH_QUICK=1`)
//! of 20 events, 90% deleted, then the backend's compaction; prints the
//! file size after each step.

use narad_store_sqlite::SqliteStore;

fn main() {
    narad_store::bench_reclaim::run_embedded(
        "sqlite",
        "reclaim.sqlite",
        SqliteStore::open,
        SqliteStore::compact,
    );
}
