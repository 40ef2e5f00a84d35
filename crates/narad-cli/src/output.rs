//! Every byte the tool writes goes through here, so that a closed pipe or
//! a full disk ends a command with a typed error instead of a panic.
//!
//! A closed pipe (`narad sessions | head`) ends the command quietly with
//! exit status 2, like any other output failure but without a message —
//! the reader has gone, as with standard Unix tools. Any other write
//! failure prints one line, `narad: write_failed: …`, and exits 2.

use std::fmt;
use std::io::{ErrorKind, Write};

/// Writing the output failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// The reader of stdout has gone (EPIPE).
    #[error("the reader of the output has gone")]
    Closed,
    /// Any other write failure (e.g. the disk is full).
    #[error("cannot write the output: {0}")]
    Failed(ErrorKind),
}

impl OutputError {
    /// A stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Closed => "output_closed",
            Self::Failed(_) => "write_failed",
        }
    }
}

impl From<std::io::Error> for OutputError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            ErrorKind::BrokenPipe => Self::Closed,
            kind => Self::Failed(kind),
        }
    }
}

/// Why a command failed: its output, or a one-line message.
#[derive(Debug)]
pub enum Failure {
    /// Writing stdout failed.
    Output(OutputError),
    /// Anything else, already worded for the user.
    Message(String),
}

impl From<OutputError> for Failure {
    fn from(e: OutputError) -> Self {
        Self::Output(e)
    }
}

impl From<String> for Failure {
    fn from(m: String) -> Self {
        Self::Message(m)
    }
}

impl From<&str> for Failure {
    fn from(m: &str) -> Self {
        Self::Message(m.to_owned())
    }
}

/// What a terminal must not receive raw from stored data: C0 and C1
/// controls (escape sequences, bell, carriage return, newline) and the
/// bidirectional overrides and isolates that reorder what is shown.
fn unsafe_on_a_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// One field of a plain line: what [`unsafe_on_a_terminal`] names
/// escaped (`\u{1b}`, `\n`), so a line stays one line and shows what the
/// store holds.
pub(crate) fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(unsafe_on_a_terminal) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_on_a_terminal(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// Multi-line text (a transcript message) for a terminal: as [`plain`],
/// but each newline stays a line break, its continuation indented by
/// `indent`, so a message cannot forge lines of the report around it.
pub(crate) fn text_block(s: &str, indent: &str) -> String {
    s.split('\n')
        .map(|line| plain(line))
        .collect::<Vec<_>>()
        .join(&format!("\n{indent}"))
}

/// The engine's refusal as one line, `code: message`.
pub(crate) fn refused(e: narad_engine::EngineError) -> Failure {
    Failure::Message(format!("{}: {e}", e.code()))
}

impl Failure {
    /// Reports the failure on stderr (nothing for a closed pipe) and gives
    /// the exit status: 2 for output failures, 1 otherwise.
    pub fn report(&self) -> u8 {
        match self {
            Self::Output(OutputError::Closed) => 2,
            Self::Output(e) => {
                error_line(format_args!("narad: {}: {e}", e.code()));
                2
            }
            Self::Message(m) => {
                error_line(format_args!("narad: {m}"));
                1
            }
        }
    }
}

/// Writes one line to stdout.
pub fn line(args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Writes one line to stderr; a failure there has nowhere to be reported.
pub fn error_line(args: fmt::Arguments<'_>) {
    // An error may quote what a file or the store holds: one line, and
    // nothing that acts on a terminal.
    let line = args.to_string();
    let _ = writeln!(std::io::stderr().lock(), "{}", plain(&line));
}

/// `println!` through [`line()`]: `out!(...)` returns from the calling
/// function with the output error when the write fails.
macro_rules! out {
    ($($t:tt)*) => {
        $crate::output::line(format_args!($($t)*))?
    };
}
pub(crate) use out;
