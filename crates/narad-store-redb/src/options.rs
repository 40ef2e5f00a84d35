//! How a redb store file is opened: [`RedbOptions`].

/// redb's own default page cache: a ceiling of 1 GiB.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Options for [`crate::RedbStore::open_with`].
///
/// The page cache is a ceiling, not an allocation: every page a read or
/// write touches stays cached until the ceiling is reached, so a process
/// that reads a large file once (an export, a verify) grows by the pages
/// it read. A one-shot reader caps it low; a long-lived host with hot
/// sessions keeps the default.
///
/// ```
/// use narad_store_redb::RedbOptions;
/// let reader = RedbOptions::default().cache_bytes(8 << 20);
/// assert_eq!(reader.cache(), 8 << 20);
/// assert_eq!(RedbOptions::default().cache(), narad_store_redb::DEFAULT_CACHE_BYTES);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedbOptions {
    cache_bytes: usize,
}

impl Default for RedbOptions {
    fn default() -> Self {
        Self {
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

impl RedbOptions {
    /// Caps redb's page cache at `bytes`.
    #[must_use]
    pub const fn cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// The page cache ceiling, in bytes.
    pub const fn cache(&self) -> usize {
        self.cache_bytes
    }

    /// A redb builder with these options.
    pub(crate) fn builder(&self) -> redb::Builder {
        let mut b = redb::Builder::new();
        b.set_cache_size(self.cache_bytes);
        b
    }
}
