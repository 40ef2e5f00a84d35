//! The `narad` command-line tool.
//!
//! Implemented today: `narad validate`. The store commands (sessions, show,
//! export, import, verify, migrate, bench) arrive with the store and CLI
//! issues.

mod validate;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Narad v1 engine tools.
#[derive(Debug, Parser)]
#[command(name = "narad", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check JSONL traces with the journal checker; one line per file.
    ///
    /// Prints `FILE: ok (N records)` or `FILE: rejected at line N: CODE: message`.
    /// Exits 0 if every file is accepted, 1 if any is rejected, 2 on usage or IO errors.
    Validate(validate::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate(args) => validate::run(&args),
    }
}
