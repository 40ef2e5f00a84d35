//! `narad bench validate|import`: the file commands on generated data in a
//! private temporary directory. Figures only; no store of the user's is
//! touched.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use narad_core::{Validator, ValidatorConfig};
use serde_json::{json, Value};

use crate::bench_cmd::{emit, BenchError};
use crate::store_cmds::Outcome;

/// Events per generated session: ten whole runs of eight events, so every
/// session ends with no open work.
const PER_SESSION: u64 = 80;

/// Writes `sessions` sessions of [`PER_SESSION`] events (back-to-back
/// runs: started, tool call, progress, three custom events, tool finish,
/// finished), one session after another, streaming. Returns the bytes.
fn finished_sessions(path: &Path, sessions: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut bytes = 0u64;
    for s in 0..sessions {
        let mut seq = 0u64;
        for run in 1..=PER_SESSION / 8 {
            let root = format!("run-{run}");
            let tool = format!("tool-{run}");
            let bodies = [
                json!({"type": "run.started"}),
                json!({"type": "tool.call.started", "toolCallId": tool, "toolName": "search", "executor": "backend", "args": {"query": "narad"}}),
                json!({"type": "progress.recorded", "progressId": "phase", "category": "phase", "label": "Searching", "status": "active", "privacy": "public"}),
                json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 17}}),
                json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 18}}),
                json!({"type": "run.custom", "name": "acme.tokens", "value": {"n": 19}}),
                json!({"type": "tool.call.finished", "toolCallId": tool, "outcome": "success", "response": {"hits": 1}}),
                json!({"type": "run.finished"}),
            ];
            for (k, body) in bodies.into_iter().enumerate() {
                seq += 1;
                let mut m = json!({
                    "protocolVersion": "narad/v1", "eventId": format!("evt-{s}-{seq}"),
                    "timestamp": "2026-08-05T00:00:01.250Z", "sessionId": format!("session-{s}"),
                    "sessionSequence": seq, "rootRunId": root, "runId": root, "sequence": k + 1
                });
                if let (Some(m), Value::Object(b)) = (m.as_object_mut(), body) {
                    m.extend(b);
                }
                let line = m.to_string();
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")?;
                bytes += line.len() as u64 + 1;
            }
        }
    }
    w.flush()?;
    Ok(bytes)
}

/// Writes `sessions` sessions of one `run.started` event each.
fn one_event_sessions(path: &Path, sessions: u64) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for s in 0..sessions {
        writeln!(
            w,
            r#"{{"type":"run.started","protocolVersion":"narad/v1","eventId":"e-{s}","timestamp":"2026-08-05T00:00:00Z","sessionId":"s-{s}","sessionSequence":1,"rootRunId":"r","runId":"r","sequence":1}}"#
        )?;
    }
    w.flush()
}

/// This process's peak resident set, in MiB (Linux; `None` elsewhere).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((kib / 1024.0).round())
}

/// CPU seconds (user + system, all threads) this process has used so far,
/// from `/proc/self/stat` (Linux, `USER_HZ` = 100). Less disturbed than
/// wall time by other work on the machine.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let mut after_name = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let user: f64 = after_name.next()?.parse().ok()?;
    let system: f64 = after_name.next()?.parse().ok()?;
    Some((user + system) / 100.0)
}

fn scratch() -> Result<tempfile::TempDir, BenchError> {
    tempfile::tempdir().map_err(|e| BenchError::Scratch(e.kind()))
}

/// `narad bench validate`: streams a generated file of 10M records
/// (`--full`; 1M otherwise) in finished sessions of 80 events through
/// `validate`'s checker, and prints records/s and this process's peak RSS
/// (which holds the checker's state of every session in the file).
pub fn validate(full: bool, json_out: bool) -> Outcome {
    let dir = scratch()?;
    let path = dir.path().join("corpus.jsonl");
    let records: u64 = if full { 10_000_000 } else { 1_000_000 };
    let sessions = records / PER_SESSION;
    let bytes = finished_sessions(&path, sessions).map_err(|e| BenchError::Scratch(e.kind()))?;
    let before = peak_rss_mib();
    let t = Instant::now();
    let checked = crate::validate::check_file(&path, Validator::new(ValidatorConfig::default()));
    let secs = t.elapsed().as_secs_f64().max(1e-9);
    let verdict = match checked {
        Ok(crate::validate::Outcome::Ok(n)) => format!("ok ({n} records)"),
        Ok(crate::validate::Outcome::Rejected { line, reason }) => {
            format!("rejected at line {line}: {reason}")
        }
        Err(e) => format!("error: {e}"),
    };
    emit(
        json_out,
        json!({"records": records, "sessions": sessions, "file_mib": (bytes as f64 / 1_048_576.0).round(),
               "verdict": verdict, "seconds": (secs * 100.0).round() / 100.0,
               "records_per_s": (records as f64 / secs).round(),
               "peak_rss_mib_before": before, "peak_rss_mib": peak_rss_mib()}),
    )?;
    Ok(0)
}

/// `narad bench import`: imports generated files of 10k and 100k
/// one-event sessions (`--full`; 2k and 20k otherwise) into fresh private
/// SQLite stores and prints the times and their ratio (linear: ≈ 10).
pub async fn import(full: bool, json_out: bool) -> Outcome {
    let dir = scratch()?;
    let sizes: [u64; 2] = if full {
        [10_000, 100_000]
    } else {
        [2_000, 20_000]
    };
    let mut out = serde_json::Map::new();
    let mut times = Vec::new();
    for n in sizes {
        let file = dir.path().join(format!("sessions-{n}.jsonl"));
        one_event_sessions(&file, n).map_err(|e| BenchError::Scratch(e.kind()))?;
        let url = format!(
            "sqlite:{}",
            dir.path().join(format!("import-{n}.sqlite")).display()
        );
        let store = narad_stores::open(&url)
            .await
            .map_err(|e| BenchError::Store(e.to_string()))?;
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let failed = crate::import_cmd::import_files(store, &[file], false).await?;
        let secs = t.elapsed().as_secs_f64().max(1e-9);
        let cpu = cpu_seconds().zip(cpu).map(|(b, a)| (b - a).max(0.01));
        times.push((secs, cpu));
        out.insert(
            format!("{n} one-event sessions"),
            json!({"seconds": (secs * 100.0).round() / 100.0,
                   "cpu_seconds": cpu.map(|c| (c * 100.0).round() / 100.0),
                   "sessions_per_s": (n as f64 / secs).round(), "refused": failed}),
        );
    }
    let ratio = |a: f64, b: f64| (b / a * 100.0).round() / 100.0;
    if let [(small, small_cpu), (large, large_cpu)] = times[..] {
        out.insert(
            "time ratio (10x the sessions)".into(),
            json!(ratio(small, large)),
        );
        if let (Some(a), Some(b)) = (small_cpu, large_cpu) {
            out.insert("cpu time ratio".into(), json!(ratio(a, b)));
        }
    }
    out.insert("peak_rss_mib".into(), json!(peak_rss_mib()));
    emit(json_out, Value::Object(out))?;
    Ok(0)
}
