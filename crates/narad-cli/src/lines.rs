//! A bounded line reader: JSONL input one line at a time, never buffering
//! more than a fixed number of bytes, whatever the input holds.
//!
//! Every command that reads records (`validate`, `import`) goes through it,
//! so an oversized record is refused before anything is allocated in
//! proportion to it. The reader is a pure function of its
//! [`BufRead`] input, which is what the fuzz target drives.
//!
//! ```
//! use narad_cli::lines::{LineError, LineReader};
//! let input: &[u8] = b"{\"a\":1}\r\n\n0123456789\nlast";
//! let mut r = LineReader::new(input, 8);
//! let first = r.next_line().unwrap().unwrap();
//! assert_eq!((first.number, first.bytes), (1, &b"{\"a\":1}\r"[..]));
//! assert!(r.next_line().unwrap().unwrap().is_blank()); // line 2
//! // Line 3 is over the bound: skipped to its newline, not buffered.
//! assert_eq!(r.next_line().unwrap(), Err(LineError::TooLong { line: 3, length: 10, max: 8 }));
//! assert_eq!(r.next_line().unwrap().unwrap().bytes, b"last");
//! assert!(r.next_line().is_none());
//! ```

use std::io::{BufRead, ErrorKind};

/// One line of input, without its `\n` (a `\r` before it is kept: JSON
/// parsers treat it as whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number in the input.
    pub number: u64,
    /// The line's bytes; at most the reader's `max_len` of them.
    pub bytes: &'a [u8],
}

impl Line<'_> {
    /// Whether the line holds only ASCII whitespace (record readers skip it).
    pub fn is_blank(&self) -> bool {
        self.bytes.iter().all(u8::is_ascii_whitespace)
    }
}

/// Why a line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// The line is longer than the bound. Its bytes were skipped up to the
    /// next newline without being kept; reading may continue after it.
    #[error("line {line} is {length} bytes, over the limit of {max}")]
    TooLong {
        /// 1-based line number.
        line: u64,
        /// The line's full length in bytes (without its `\n`).
        length: u64,
        /// The bound it exceeds.
        max: usize,
    },
    /// The input failed while reading this line. The reader is finished:
    /// every later call returns `None`.
    #[error("cannot read line {line}: {kind}")]
    Io {
        /// 1-based line number.
        line: u64,
        /// What failed.
        kind: ErrorKind,
    },
}

impl LineError {
    /// A stable machine code: `line_too_long` or `read_failed`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooLong { .. } => "line_too_long",
            Self::Io { .. } => "read_failed",
        }
    }

    /// The 1-based number of the line concerned.
    pub fn line(&self) -> u64 {
        match self {
            Self::TooLong { line, .. } | Self::Io { line, .. } => *line,
        }
    }
}

/// Reads `\n`-terminated lines of at most `max_len` bytes from a
/// [`BufRead`]. Memory use is `max_len` plus the input's own buffer, for
/// any input. A final line without `\n` is returned like any other; the
/// empty segment after a final `\n` is not a line.
#[derive(Debug)]
pub struct LineReader<R> {
    input: R,
    max_len: usize,
    buf: Vec<u8>,
    number: u64,
    done: bool,
}

impl<R: BufRead> LineReader<R> {
    /// A reader refusing lines longer than `max_len` bytes (without `\n`).
    pub fn new(input: R, max_len: usize) -> Self {
        Self {
            input,
            max_len,
            buf: Vec::new(),
            number: 0,
            done: false,
        }
    }

    /// The next line, `Some(Err(..))` for a line that is too long or could
    /// not be read, or `None` at the end of the input. Not an `Iterator`:
    /// the line borrows the reader's buffer.
    pub fn next_line(&mut self) -> Option<Result<Line<'_>, LineError>> {
        match self.fill()? {
            Ok(number) => Some(Ok(Line {
                number,
                bytes: &self.buf,
            })),
            Err(e) => Some(Err(e)),
        }
    }

    /// Like [`next_line`](Self::next_line), skipping lines that are only
    /// ASCII whitespace.
    pub fn next_non_blank(&mut self) -> Option<Result<Line<'_>, LineError>> {
        loop {
            match self.fill()? {
                Ok(_) if self.buf.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(number) => {
                    return Some(Ok(Line {
                        number,
                        bytes: &self.buf,
                    }))
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Reads the next line into `buf`; returns its number.
    fn fill(&mut self) -> Option<Result<u64, LineError>> {
        if self.done {
            return None;
        }
        self.buf.clear();
        let number = self.number + 1;
        let (mut length, mut started, mut over) = (0u64, false, false);
        loop {
            let chunk = match self.input.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(LineError::Io {
                        line: number,
                        kind: e.kind(),
                    }));
                }
            };
            if chunk.is_empty() {
                self.done = true;
                if !started {
                    return None;
                }
                break;
            }
            started = true;
            let (take, newline) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            length += take as u64;
            if !over {
                if self.buf.len() + take > self.max_len {
                    over = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(&chunk[..take]);
                }
            }
            self.input.consume(take + usize::from(newline));
            if newline {
                break;
            }
        }
        self.number = number;
        if over {
            return Some(Err(LineError::TooLong {
                line: number,
                length,
                max: self.max_len,
            }));
        }
        Some(Ok(number))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Result<(u64, Vec<u8>), LineError>> {
        let mut r = LineReader::new(std::io::BufReader::with_capacity(3, input), max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line() {
            out.push(l.map(|l| (l.number, l.bytes.to_vec())));
        }
        out
    }

    #[test]
    fn lines_split_across_buffer_refills_come_back_whole() {
        let got = all(b"abcdefg\nhi\n\nxyz", 16);
        let want: Vec<_> = [(1, &b"abcdefg"[..]), (2, b"hi"), (3, b""), (4, b"xyz")]
            .iter()
            .map(|(n, b)| Ok((*n, b.to_vec())))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_line_of_exactly_the_bound_passes_and_one_more_byte_does_not() {
        let got = all(b"1234\n12345\nok", 4);
        assert_eq!(got[0], Ok((1, b"1234".to_vec())));
        assert_eq!(
            got[1],
            Err(LineError::TooLong {
                line: 2,
                length: 5,
                max: 4
            })
        );
        assert_eq!(got[2], Ok((3, b"ok".to_vec())));
    }

    #[test]
    fn empty_input_and_a_lone_newline() {
        assert!(all(b"", 4).is_empty());
        assert_eq!(all(b"\n", 4), vec![Ok((1, Vec::new()))]);
    }

    #[test]
    fn a_read_error_ends_the_reader() {
        struct Failing;
        impl std::io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(ErrorKind::InvalidData))
            }
        }
        let mut r = LineReader::new(std::io::BufReader::new(Failing), 4);
        assert_eq!(
            r.next_line().unwrap().unwrap_err(),
            LineError::Io {
                line: 1,
                kind: ErrorKind::InvalidData
            }
        );
        assert!(r.next_line().is_none());
    }
}
