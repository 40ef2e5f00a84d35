//! JSONL record files, read one bounded line at a time: the one way
//! `validate` and `import` read their input.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use narad_cli::lines::{LineError, LineReader};
use narad_core::Limits;

/// Why a record file could not be read to its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be opened or read.
    #[error("cannot read: {}", io_words(*.0))]
    Io(std::io::ErrorKind),
    /// A line is longer than the record limit.
    #[error("record larger than {max} bytes")]
    TooLarge {
        /// 1-based line number.
        line: u64,
        /// The record limit.
        max: usize,
    },
}

/// An I/O failure in plain words: std's "entity not found" is a missing
/// file here.
fn io_words(kind: std::io::ErrorKind) -> String {
    match kind {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        other => other.to_string(),
    }
}

impl ReadError {
    /// The stable code, the core's own for an oversized record.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io(_) => "read_failed",
            Self::TooLarge { .. } => narad_core::ValidationCode::RecordTooLarge.as_str(),
        }
    }
}

/// The non-blank lines of one file, each at most the record limit long.
#[derive(Debug)]
pub struct RecordFile {
    lines: LineReader<BufReader<File>>,
}

impl RecordFile {
    /// Opens `path` for reading records no longer than `limits` allow.
    pub fn open(path: &Path, limits: &Limits) -> Result<Self, ReadError> {
        let file = File::open(path).map_err(|e| ReadError::Io(e.kind()))?;
        Ok(Self {
            lines: LineReader::new(
                BufReader::with_capacity(1 << 16, file),
                limits.max_record_bytes,
            ),
        })
    }

    /// The next record as `(line number, bytes)`, or `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<(u64, &[u8])>, ReadError> {
        match self.lines.next_non_blank() {
            None => Ok(None),
            Some(Ok(line)) => Ok(Some((line.number, line.bytes))),
            Some(Err(LineError::TooLong { line, max, .. })) => {
                Err(ReadError::TooLarge { line, max })
            }
            Some(Err(LineError::Io { kind, .. })) => Err(ReadError::Io(kind)),
        }
    }
}
