//! The `narad` command-line tool.
//!
//! Not implemented yet: `narad validate` arrives with the reducer issue and
//! the remaining commands with the CLI issue. Until then every invocation
//! says so and exits 2, the usage-error code.

fn main() -> std::process::ExitCode {
    eprintln!("narad: no commands are implemented yet (validate, sessions, show, export, import, verify, migrate and bench are planned)");
    std::process::ExitCode::from(2)
}
