//! Shared parts of the fuzz targets: the seed journals every structure-aware
//! target starts from.

include!(concat!(env!("OUT_DIR"), "/journals.rs"));

/// The non-empty lines of the journal at `index` (taken modulo the number of
/// journals; empty when no trace was found at build time).
pub fn journal(index: u16) -> Vec<&'static str> {
    if JOURNALS.is_empty() {
        return Vec::new();
    }
    let (_, text) = JOURNALS[usize::from(index) % JOURNALS.len()];
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// One line of any journal, `None` when there are none.
pub fn any_line(journal_index: u16, line: u16) -> Option<&'static str> {
    let lines = journal(journal_index);
    if lines.is_empty() {
        return None;
    }
    Some(lines[usize::from(line) % lines.len()])
}
