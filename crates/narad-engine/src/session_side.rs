//! Side records owned by one session and keyed by it: the key starts with
//! the session id, length-prefixed (`5:s-abc/`), so one session's records
//! sort together and no session's prefix is another's (`a/b` against `a`).
//! Idempotency keys and closed history are kept so.

use bytes::Bytes;
use narad_store::{Damage, SideSpace, Store, StoreError};

use crate::error::EngineError;

/// The prefix every record of `session_id` in such a space starts with.
pub(crate) fn session_prefix(session_id: &str) -> String {
    format!("{}:{session_id}/", session_id.len())
}

/// Every record of `session_id` in `space`, in key order, paged.
pub(crate) async fn records<S: Store + ?Sized>(
    store: &S,
    space: SideSpace,
    session_id: &str,
) -> Result<Vec<(String, Bytes)>, EngineError> {
    const PAGE: usize = 1024;
    let prefix = session_prefix(session_id);
    let mut after = prefix.clone();
    let mut out = Vec::new();
    loop {
        let page = store.list_side(space, Some(&after), PAGE).await?;
        let full = page.len() == PAGE;
        for (k, v) in page {
            if k.as_str() <= after.as_str() {
                return Err(
                    StoreError::corrupt(Damage::CursorStalled, Some(session_id), None).into(),
                );
            }
            if !k.starts_with(&prefix) {
                return Ok(out);
            }
            after = k.clone();
            out.push((k, v));
        }
        if !full {
            return Ok(out);
        }
    }
}
