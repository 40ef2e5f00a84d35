//! Space reclaimed on redb: 10k sessions (1k with `NARAD_BENCH_QUICK=1`)
//! of 20 events, 90% deleted, then the backend's compaction; prints the
//! file size after each step.

use narad_store_redb::RedbStore;

fn main() {
    narad_store::bench_reclaim::run_embedded(
        "redb",
        "reclaim.redb",
        RedbStore::open,
        RedbStore::compact,
    );
}
