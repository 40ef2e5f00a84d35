//! The `narad` command-line tool: check traces, inspect, export, import,
//! verify and migrate stores, and run the benchmarks. Store URLs are
//! `redb:PATH` and `sqlite:PATH` (a bare path means redb).
//!
//! `-v` (info), `-vv` (debug), `-vvv` (trace) or `RUST_LOG` print the
//! engine's and stores' `tracing` logs on stderr, for people; stdout stays
//! the command's output.
//!
//! Errors are one line on stderr and a non-zero exit, never a panic. All
//! output goes through [`output`]: a closed pipe ends a command quietly
//! with exit status 2, any other write failure with one typed line and 2.

mod bench_cmd;
mod bench_files;
mod import_cmd;
mod lifecycle_cmds;
mod migrate_cmd;
mod ops_cmds;
mod output;
mod progress;
mod records;
mod show_cmd;
mod store_cmds;
mod tick_cmd;
mod validate;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Narad v1 engine tools.
#[derive(Debug, Parser)]
#[command(name = "narad", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Logs on stderr: -v info, -vv debug, -vvv trace (`RUST_LOG` overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check JSONL traces with the journal checker; one line per file.
    ///
    /// Prints `FILE: ok (N records)` or `FILE: rejected at line N: CODE: message`.
    /// Exits 0 if every file is accepted, 1 if any is rejected, 2 on usage or IO errors.
    ///
    /// Example: `narad validate --profiles narad.workflow/v1 trace.jsonl`
    Validate(validate::Args),
    /// One line per session: id, head sessionSequence, active execution, last event time.
    ///
    /// Example: `narad sessions --store sqlite:narad.db --json`
    Sessions {
        /// Store URL (`redb:PATH`, `sqlite:PATH`, `postgres://…`).
        #[arg(long)]
        store: String,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Only these statuses: idle, running, paused, awaiting_input,
        /// finished, archived (repeatable).
        #[arg(long)]
        status: Vec<String>,
        /// Only this workspace.
        #[arg(long)]
        workspace: Option<String>,
        /// Only sessions with this label, `KEY=VALUE` (repeatable: all).
        #[arg(long)]
        label: Vec<String>,
        /// Only sessions active after this RFC 3339 time.
        #[arg(long)]
        updated_after: Option<String>,
    },
    /// Rewrites every session-index entry that differs from its rebuild
    /// from the journal, and adds the interrupt-index entries a journal
    /// calls for that the store lacks (what `verify` reports).
    ///
    /// Example: `narad reindex --store redb:narad.redb`
    Reindex {
        /// Store URL.
        #[arg(long)]
        store: String,
    },
    /// A session's state: runs as a tree with their tool calls (name, args
    /// summary, outcome), interrupts (kind, title, decision, expiry) and
    /// terminals (code, message); usage totals; the transcript.
    ///
    /// Example: `narad show --store redb:narad.redb --session s-1 --json`
    Show {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// The session.
        #[arg(long)]
        session: String,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Authority events as JSONL on stdout, bytes exactly as stored.
    ///
    /// Example: `narad export --store redb:narad.redb --session s-1 --after 10`
    Export {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// The session.
        #[arg(long, conflicts_with = "all")]
        session: Option<String>,
        /// Only events after this sessionSequence.
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Every session, one after another.
        #[arg(long)]
        all: bool,
    },
    /// Appends JSONL journals through the checker, streaming, in batches of
    /// up to 1,000 events of one session, each all-or-nothing; rerunning is safe.
    ///
    /// Example: `narad import --store sqlite:narad.db sessions/*.jsonl`
    Import {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// JSONL files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Checks every stored journal with the core checker; exit 0 iff all
    /// are valid. One line per damaged or refused session, counts per
    /// damage kind and per refusal code, and a summary line.
    ///
    /// Example: `narad verify --store sqlite:narad.db --json`
    Verify {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// One JSON object per line (findings, then a summary).
        #[arg(long)]
        json: bool,
    },
    /// Copies every session between backends, verifying counts and bytes; safe to rerun.
    ///
    /// Example: `narad migrate --from redb:narad.redb --to postgres://localhost/narad`
    Migrate {
        /// Source store URL.
        #[arg(long)]
        from: String,
        /// Target store URL.
        #[arg(long)]
        to: String,
    },
    /// Fires every timer due now (interrupt expiry, client token and lease
    /// expiry, automatic resume) in every session, then exits: one line
    /// per fired timer and a summary. Exit 1 if a due timer was refused.
    ///
    /// Example: `narad tick --store sqlite:narad.db` (from cron, say)
    Tick {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Open interrupts across sessions, one line each: session, interrupt
    /// id, run or workflow, kind, title, actions and expiry.
    ///
    /// Example: `narad interrupts --store sqlite:narad.db --json`
    Interrupts {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Resolves an open interrupt through the engine (checked and
    /// authorized as `narad-cli`); the run or workflow resumes.
    ///
    /// Example: `narad resolve --store sqlite:narad.db interrupt-3f2a approve --reason "looks right"`
    Resolve {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// The interrupt, as `narad interrupts` lists it.
        interrupt_id: String,
        /// One of its actions.
        decision: String,
        /// Why (journaled with the resolution).
        #[arg(long)]
        reason: Option<String>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Stops a run (default: the session's active one) through the engine:
    /// open tool calls, interrupts and pauses close, and each run of the
    /// subtree ends with `run.cancelled`, in one batch.
    ///
    /// Example: `narad stop --store redb:narad.redb --session s-1 --run run-7`
    Stop {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// The session.
        #[arg(long)]
        session: String,
        /// The run to stop (default: the active top-level run).
        #[arg(long)]
        run: Option<String>,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Deletes a session and every record of it, leaving a tombstone so
    /// the id is refused later. A session with open work is deleted only
    /// with --force; otherwise the refusal names what is open.
    ///
    /// Example: `narad delete --store redb:narad.redb s-1`
    Delete {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// The session.
        session: String,
        /// Delete even with open work (runs, interrupts, queued starts).
        #[arg(long)]
        force: bool,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Deletes sessions idle longer than a duration (retention by hand);
    /// sessions with open work are kept unless --force.
    ///
    /// Example: `narad prune --store redb:narad.redb --older-than 30d --dry-run`
    Prune {
        /// Store URL.
        #[arg(long)]
        store: String,
        /// Idle time, e.g. `30d`, `12h`.
        #[arg(long)]
        older_than: String,
        /// List what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Delete sessions with open work too.
        #[arg(long)]
        force: bool,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks: durable appends, replay, engine commands (against a
    /// store), and streaming validate and import (on generated files).
    ///
    /// Example: `narad bench engine --store redb:/tmp/bench.redb --json`
    Bench {
        /// Which benchmark.
        #[arg(value_enum)]
        which: Which,
        /// Store URL, for append, replay and engine. append and engine write
        /// to it and refuse a store that holds sessions.
        #[arg(long)]
        store: Option<String>,
        /// Print one JSON object of figures.
        #[arg(long)]
        json: bool,
        /// The full-size run (default: a short one).
        #[arg(long)]
        full: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Which {
    /// Durable appends/s and latency through the store trait.
    Append,
    /// Parse + validate + reduce every stored journal.
    Replay,
    /// Commands/s through the engine, 1 and 64 sessions.
    Engine,
    /// Streaming `validate` of a generated 10M-record file (1M without
    /// `--full`): records/s and peak RSS.
    Validate,
    /// `import` of 10k and 100k one-event sessions (2k and 20k without
    /// `--full`) into private SQLite stores: times and their ratio.
    Import,
}

async fn run(command: Command) -> store_cmds::Outcome {
    // Only commands that write may create a store; reads open existing ones.
    let open = |url: String| async move {
        narad_stores::open_with(&url, &store_cmds::open_options())
            .await
            .map_err(|e| e.to_string())
    };
    let existing = |url: String| async move {
        narad_stores::open_existing_with(&url, &store_cmds::open_options())
            .await
            .map_err(|e| e.to_string())
    };
    // Commands that only read also open a store this process may not
    // write (a read-only mount, another user's file, a backup).
    let reading = |url: String| async move {
        narad_stores::open_for_reading_with(&url, &store_cmds::open_options())
            .await
            .map_err(|e| e.to_string())
    };
    match command {
        Command::Validate(_) => Ok(0),
        Command::Sessions {
            store,
            json,
            status,
            workspace,
            label,
            updated_after,
        } => {
            let filters = lifecycle_cmds::SessionFilters {
                status,
                workspace,
                label,
                updated_after,
            };
            lifecycle_cmds::sessions(reading(store).await?, &filters, json).await
        }
        Command::Prune {
            store,
            older_than,
            dry_run,
            force,
            json,
        } => {
            let store = existing(store).await?;
            lifecycle_cmds::prune(store, &older_than, dry_run, force, json).await
        }
        Command::Reindex { store } => lifecycle_cmds::reindex(existing(store).await?).await,
        Command::Show {
            store,
            session,
            json,
        } => show_cmd::show(&reading(store).await?, &session, json).await,
        Command::Export {
            store,
            session,
            after,
            all,
        } => store_cmds::export(&reading(store).await?, session.as_deref(), after, all).await,
        Command::Import { store, files } => import_cmd::import(open(store).await?, &files).await,
        Command::Verify { store, json } => store_cmds::verify(&store, json).await,
        Command::Tick { store, json } => tick_cmd::tick(existing(store).await?, json).await,
        Command::Migrate { from, to } => {
            migrate_cmd::distinct(&from, &to)?;
            let (from, to) = (reading(from).await?, open(to).await?);
            migrate_cmd::migrate(&from, &to).await
        }
        Command::Interrupts { store, json } => {
            ops_cmds::interrupts(reading(store).await?, json).await
        }
        Command::Resolve {
            store,
            interrupt_id,
            decision,
            reason,
            json,
        } => ops_cmds::resolve(existing(store).await?, interrupt_id, decision, reason, json).await,
        Command::Stop {
            store,
            session,
            run,
            json,
        } => ops_cmds::stop(existing(store).await?, session, run, json).await,
        Command::Delete {
            store,
            session,
            force,
            json,
        } => lifecycle_cmds::delete(existing(store).await?, session, force, json).await,
        Command::Bench {
            which,
            store,
            json,
            full,
        } => {
            let replay = matches!(which, Which::Replay);
            let store = || async {
                match store {
                    Some(url) if replay => existing(url).await,
                    Some(url) => open(url).await,
                    None => Err("give --store URL for this benchmark".to_owned()),
                }
            };
            match which {
                Which::Append => bench_cmd::append(store().await?, full, json).await,
                Which::Replay => bench_cmd::replay(store().await?, json).await,
                Which::Engine => bench_cmd::engine(store().await?, full, json).await,
                Which::Validate => bench_files::validate(full, json),
                Which::Import => bench_files::import(full, json).await,
            }
        }
    }
}

/// Human-readable logs on stderr when asked for (`-v…` or `RUST_LOG`);
/// none otherwise, so the engine's instrumentation costs nothing.
fn logs(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let from_env = std::env::var_os(EnvFilter::DEFAULT_ENV).is_some();
    if verbose == 0 && !from_env {
        return;
    }
    let level = match verbose {
        0 | 1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = if from_env {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level))
    } else {
        EnvFilter::new(level)
    };
    // Each span is logged when it closes, with its fields (the outcome is
    // recorded late) and its time.
    let _ = tracing_subscriber::fmt()
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Where the last panic happened, for the one line `main` prints if a
/// panic escapes (the store backends catch theirs and report typed errors).
static PANICKED_AT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

fn main() -> ExitCode {
    // No panic message or backtrace on stderr: a caught panic becomes a
    // typed error line, and an escaped one is reported below in one line.
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut at) = PANICKED_AT.lock() {
            *at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
        }
    }));
    let cli = Cli::parse();
    logs(cli.verbose);
    if let Command::Validate(args) = &cli.command {
        return validate::run(args);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::error_line(format_args!("narad: cannot start the runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(run(cli.command))
    }));
    match outcome {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(e)) => ExitCode::from(e.report()),
        Err(_) => {
            let at = PANICKED_AT.lock().ok().and_then(|a| a.clone());
            eprintln!(
                "narad: internal error (panic at {})",
                at.as_deref().unwrap_or("an unknown place")
            );
            ExitCode::from(101)
        }
    }
}
