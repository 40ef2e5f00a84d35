//! `narad validate`: each file is one journal, checked from empty state.

use narad_core::checker::Checker;
use narad_core::{ProfileSet, Validator, ValidatorConfig};
use std::path::{Path, PathBuf};

use crate::output::{self, Failure};
use crate::records::{ReadError, RecordFile};
use std::process::ExitCode;

/// Arguments of `narad validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Active profiles: `all`, or a comma-separated list of profile ids
    /// (e.g. `narad.workflow/v1,narad.progress/v1`). Events of other profiles are ignored.
    #[arg(long, default_value = "all", value_parser = parse_profiles)]
    profiles: ProfileSet,
    /// JSONL trace files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn parse_profiles(s: &str) -> Result<ProfileSet, String> {
    ProfileSet::parse(s)
}

/// The outcome of checking one file.
pub(crate) enum Outcome {
    Ok(usize),
    Rejected { line: u64, reason: String },
}

/// Streams one file through a fresh checker: memory is the checker's
/// state plus one record, whatever the file's size.
pub(crate) fn check_file(path: &Path, validator: Validator) -> Result<Outcome, ReadError> {
    let mut file = RecordFile::open(path, &validator.config().limits)?;
    let mut checker = Checker::new(validator);
    let mut records = 0;
    loop {
        let (number, line) = match file.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(Outcome::Ok(records)),
            Err(e @ ReadError::TooLarge { line, .. }) => {
                return Ok(Outcome::Rejected {
                    line,
                    reason: format!("{}: {e} (§5)", e.code()),
                })
            }
            Err(e) => return Err(e),
        };
        records += 1;
        if let Err(e) = checker.push_bytes(line) {
            return Ok(Outcome::Rejected {
                line: number,
                reason: e.to_string(),
            });
        }
    }
}

/// Runs the command and returns its exit code.
pub fn run(args: &Args) -> ExitCode {
    let validator = Validator::new(ValidatorConfig {
        profiles: args.profiles,
        ..ValidatorConfig::default()
    });
    let (mut rejected, mut io_error) = (false, false);
    for file in &args.files {
        let shown = file.display();
        let line = match check_file(file, validator) {
            Err(e) => {
                io_error = true;
                format!("{shown}: error: {e}")
            }
            Ok(Outcome::Ok(n)) => format!("{shown}: ok ({n} records)"),
            Ok(Outcome::Rejected { line, reason }) => {
                rejected = true;
                // The reason quotes the record (an eventId, a type): a
                // hostile file must not drive the terminal through it.
                format!(
                    "{shown}: rejected at line {line}: {}",
                    output::plain(&reason)
                )
            }
        };
        if let Err(e) = output::line(format_args!("{line}")) {
            return ExitCode::from(Failure::Output(e).report());
        }
    }
    if io_error {
        ExitCode::from(2)
    } else if rejected {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
