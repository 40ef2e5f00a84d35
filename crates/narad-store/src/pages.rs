//! A session's stored journal read a page at a time, with the cursor
//! checked to advance: the one paging loop of the readers that walk a
//! whole journal (`migrate`, the CLI's `export`, `verify` and `show`).

use crate::{row, Store, StoreError, StoredEvent};

/// A session's stored events after `after`, a page of at most `limit` (and
/// [`crate::PAGE_BYTES`]) at a time, so a reader holds one page, never the
/// journal. The cursor must advance with every page (a damaged store must
/// not make a reader loop), and every row agrees with its key (the store
/// checks).
///
/// ```
/// # async fn demo(store: &dyn narad_store::Store) -> Result<(), narad_store::StoreError> {
/// let mut pages = narad_store::JournalPages::new(store, "s-1", 0, 256);
/// while let Some(page) = pages.next().await? {
///     for ev in page {
///         println!("{}", ev.position.session_sequence);
///     }
/// }
/// # Ok(()) }
/// ```
pub struct JournalPages<'a, S: Store + ?Sized> {
    store: &'a S,
    session_id: &'a str,
    cursor: u64,
    limit: usize,
    done: bool,
}

impl<S: Store + ?Sized> std::fmt::Debug for JournalPages<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalPages")
            .field("session_id", &self.session_id)
            .field("cursor", &self.cursor)
            .field("done", &self.done)
            .finish()
    }
}

impl<'a, S: Store + ?Sized> JournalPages<'a, S> {
    /// Pages of `session_id` after session position `after`.
    pub fn new(store: &'a S, session_id: &'a str, after: u64, limit: usize) -> Self {
        Self {
            store,
            session_id,
            cursor: after,
            limit,
            done: false,
        }
    }

    /// The next page (`None` after the last).
    pub async fn next(&mut self) -> Result<Option<Vec<StoredEvent>>, StoreError> {
        if self.done {
            return Ok(None);
        }
        let sid = self.session_id;
        let page = self
            .store
            .read_session(sid, self.cursor, self.limit)
            .await?;
        let before = self.cursor;
        for ev in &page.events {
            self.cursor = row::advance(sid, self.cursor, ev.position.session_sequence)?;
        }
        if page.next.is_none() {
            self.done = true;
        } else {
            row::advance(sid, before, self.cursor)?;
        }
        Ok(Some(page.events))
    }
}
