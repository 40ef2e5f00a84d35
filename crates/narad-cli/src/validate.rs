//! `narad validate`: each file is one journal, checked from empty state.

use narad_core::checker::Checker;
use narad_core::{ProfileSet, Validator, ValidatorConfig};
use std::io::Write;
use std::path::PathBuf;
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
enum Outcome {
    Ok(usize),
    Rejected { line: usize, reason: String },
}

fn check_file(bytes: &[u8], validator: Validator) -> Outcome {
    let mut checker = Checker::new(validator);
    let mut records = 0;
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        records += 1;
        if let Err(e) = checker.push_bytes(line) {
            let reason = format!(
                "{}: {} (§{})",
                e.code,
                strip_code(&e.message, e.code),
                e.section
            );
            return Outcome::Rejected {
                line: i + 1,
                reason,
            };
        }
    }
    Outcome::Ok(records)
}

/// Structural errors already start with their code; do not print it twice.
fn strip_code<'a>(message: &'a str, code: &str) -> &'a str {
    message
        .strip_prefix(code)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(message)
}

/// Runs the command and returns its exit code.
pub fn run(args: &Args) -> ExitCode {
    let validator = Validator::new(ValidatorConfig {
        profiles: args.profiles,
        ..ValidatorConfig::default()
    });
    let (mut rejected, mut io_error) = (false, false);
    let mut out = std::io::stdout().lock();
    for file in &args.files {
        let shown = file.display();
        let line = match std::fs::read(file) {
            Err(e) => {
                io_error = true;
                format!("{shown}: error: cannot read: {}", e.kind())
            }
            Ok(bytes) => match check_file(&bytes, validator) {
                Outcome::Ok(n) => format!("{shown}: ok ({n} records)"),
                Outcome::Rejected { line, reason } => {
                    rejected = true;
                    format!("{shown}: rejected at line {line}: {reason}")
                }
            },
        };
        if writeln!(out, "{line}").is_err() {
            return ExitCode::from(2);
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
