//! Parse + validate + reduce beside a plain `serde_json::from_slice::<Value>`
//! of the same bytes, for two corpora at several sizes. Prints, per corpus
//! and size: both rates, their ratio (reduce rate / parse rate; the issue's
//! target is ≥ 1.0), the cost per event (flat from size to size when the
//! checker's work per event does not grow with history), the transcript
//! text the checker must hold, and peak RSS.
//!
//! ```text
//! cargo bench -p narad-core --bench reduce
//! cargo bench -p narad-core --bench reduce -- --sizes 10000,100000 --corpus conversation
//! ```
//!
//! Each corpus is written once, as JSONL, to a temporary directory (removed
//! at the end). Each size then runs in a fresh child process (this binary,
//! re-executed with `--child`) that streams the first N lines of the file,
//! so its peak RSS (`VmHWM`) is that size's alone and the input is never
//! held in memory. Sizes up to 100k take the best of three passes, larger
//! ones the best of two; within a pass the reduce and the parse take turns
//! going first. The `read ns/ev` column is the time to stream the lines
//! alone, which both rates include.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code

use narad_core::checker::Checker;
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const SESSION: &str = "session-bench";
const DEFAULT_SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

#[path = "shared/corpus.rs"]
mod corpus;
use corpus::Corpus;

/// Writes `n` events of `corpus` to `path`, streamed.
fn write_corpus(corpus: Corpus, n: usize, path: &Path) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    for m in corpus::records(corpus, SESSION, 1).take(n) {
        serde_json::to_writer(&mut out, &m).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Calls `f` with each of the first `n` lines of `path` (without the
/// newline), reading through one reused buffer.
fn each_line(path: &Path, n: usize, mut f: impl FnMut(usize, &[u8])) {
    let mut r = BufReader::with_capacity(1 << 16, File::open(path).unwrap());
    let mut line = Vec::with_capacity(1024);
    for i in 0..n {
        line.clear();
        if r.read_until(b'\n', &mut line).unwrap() == 0 {
            panic!("corpus has only {i} lines, {n} wanted");
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        f(i, &line);
    }
}

/// One size in this (child) process; prints `key=value` fields for the parent.
fn child(path: &Path, n: usize) {
    let start_kib = vm_hwm_kib().unwrap_or(0);
    // Warm the page cache without holding the file.
    let mut sink = [0u8; 1 << 16];
    let mut f = File::open(path).unwrap();
    while f.read(&mut sink).unwrap() > 0 {}

    let passes = if n <= 100_000 { 3 } else { 2 };
    let (mut reduce, mut parse, mut read) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut bytes, mut transcript, mut reduce_kib) = (0usize, 0usize, 0);
    for pass in 0..passes {
        // The first pass reduces first, so that its peak RSS is the
        // reduce's own.
        for reduce_now in [pass % 2 == 0, pass % 2 != 0] {
            if reduce_now {
                let t = Instant::now();
                let mut checker = Checker::default();
                each_line(path, n, |i, line| {
                    if let Err(e) = checker.push_bytes(line) {
                        panic!("corpus rejected at record {i}: {e}");
                    }
                });
                reduce = reduce.min(t.elapsed());
                assert_eq!(checker.session_head(SESSION), Some(n as u64));
                if pass == 0 {
                    reduce_kib = vm_hwm_kib().unwrap_or(0);
                    transcript = checker.transcript(SESSION).map_or(0, |t| {
                        t.messages.iter().map(|m| m.content.len()).sum::<usize>()
                            + t.reasoning.iter().map(|r| r.content.len()).sum::<usize>()
                    });
                }
            } else {
                let t = Instant::now();
                let mut ok = 0usize;
                each_line(path, n, |_, line| {
                    ok += usize::from(serde_json::from_slice::<Value>(line).is_ok());
                });
                parse = parse.min(t.elapsed());
                assert_eq!(ok, n);
            }
        }
        let t = Instant::now();
        let mut seen = 0usize;
        each_line(path, n, |_, line| seen += line.len() + 1);
        read = read.min(t.elapsed());
        bytes = seen;
    }
    println!(
        "reduce_ns={} parse_ns={} read_ns={} bytes={bytes} transcript={transcript} start_kib={start_kib} peak_kib={reduce_kib}",
        reduce.as_nanos(),
        parse.as_nanos(),
        read.as_nanos()
    );
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn field(out: &str, key: &str) -> f64 {
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("child output lacks {key}: {out}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let path = PathBuf::from(&args[i + 1]);
        child(&path, args[i + 2].parse().unwrap());
        return;
    }
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let sizes: Vec<usize> = value("--sizes").map_or(DEFAULT_SIZES.to_vec(), |s| {
        s.split(',').map(|x| x.trim().parse().unwrap()).collect()
    });
    let corpora: Vec<Corpus> = match value("--corpus").map(String::as_str) {
        Some("steady") => vec![Corpus::Steady],
        Some("conversation") => vec![Corpus::Conversation],
        _ => vec![Corpus::Steady, Corpus::Conversation],
    };
    let max = sizes.iter().copied().max().unwrap_or(0);
    let dir = TempDir(std::env::temp_dir().join(format!("narad-reduce-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let exe = std::env::current_exe().unwrap();

    println!("reduce: parse + validate + reduce vs serde_json::from_slice::<Value>, input streamed from a file, one process per size");
    println!(
        "{:<13} {:>9} {:>9} {:>13} {:>13} {:>7} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10}",
        "corpus",
        "events",
        "MiB",
        "parse ev/s",
        "reduce ev/s",
        "ratio",
        "parse ns/ev",
        "reduce ns/ev",
        "read ns/ev",
        "transcript",
        "RSS start",
        "peak RSS"
    );
    for corpus in corpora {
        let path = dir.0.join(format!("{}.jsonl", corpus.name()));
        write_corpus(corpus, max, &path);
        for &n in &sizes {
            let out = Command::new(&exe)
                .arg("--child")
                .arg(&path)
                .arg(n.to_string())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "child failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (reduce_ns, parse_ns) = (field(&stdout, "reduce_ns"), field(&stdout, "parse_ns"));
            let rate = |ns: f64| n as f64 / (ns / 1e9);
            let mib = |b: f64| b / 1_048_576.0;
            println!(
                "{:<13} {:>9} {:>9.1} {:>13.0} {:>13.0} {:>6.2}x {:>10.0} {:>10.0} {:>10.0} {:>7.1} MiB {:>6.0} MiB {:>6.0} MiB",
                corpus.name(),
                n,
                mib(field(&stdout, "bytes")),
                rate(parse_ns),
                rate(reduce_ns),
                parse_ns / reduce_ns,
                parse_ns / n as f64,
                reduce_ns / n as f64,
                field(&stdout, "read_ns") / n as f64,
                mib(field(&stdout, "transcript")),
                field(&stdout, "start_kib") / 1024.0,
                field(&stdout, "peak_kib") / 1024.0,
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
    println!("ratio = reduce rate / parse rate (target >= 1.0); peak RSS is the child's VmHWM after its first reduce pass");
}
