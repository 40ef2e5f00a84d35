//! The conformance harness: locates the published spec folder, loads its
//! golden traces and schemas, and generates mutated record corpora.
//!
//! Tests that need `../shared/narad-spec/` call [`require_spec`]: when the
//! folder is absent (a user's clone) they print a notice and skip; under CI
//! (`CI` set) a missing folder is a failure, so CI can never pass silently.

pub mod mutate;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the published spec is expected: `NARAD_SPEC_DIR`, else
/// `../shared/narad-spec` beside the repository root.
pub fn spec_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NARAD_SPEC_DIR") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/narad-spec")
}

/// The spec folder if present. If absent, prints a skip notice naming the
/// test and returns `None`; under CI, panics instead (a test that cannot
/// read the spec must not look as if it ran).
#[allow(clippy::panic)]
pub fn require_spec(test: &str) -> Option<PathBuf> {
    let dir = spec_dir();
    if dir.join("schema").is_dir() && dir.join("conformance").is_dir() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test}: the published spec is missing at {} (CI must provide it)",
            dir.display()
        );
    }
    // Written to stderr directly, not with `eprintln!`, which libtest captures
    // and hides for passing tests: a skip must be seen.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: published spec not found at {} (set NARAD_SPEC_DIR or place ../shared/narad-spec beside the repo)",
        dir.display()
    );
    None
}

/// One published or project trace file.
#[derive(Debug, Clone)]
pub struct Trace {
    /// File name, e.g. `workflow.jsonl`.
    pub name: String,
    /// True for `*.invalid.jsonl`, which must be rejected.
    pub invalid: bool,
    /// Non-empty lines as `(1-based line number, bytes)`.
    pub lines: Vec<(usize, Vec<u8>)>,
}

/// Loads every `*.jsonl` in `dir`, sorted by name.
pub fn load_traces(dir: &Path) -> std::io::Result<Vec<Trace>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if !name.ends_with(".jsonl") {
            continue;
        }
        let text = std::fs::read(&path)?;
        let lines = text
            .split(|b| *b == b'\n')
            .enumerate()
            .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
            .map(|(i, l)| (i + 1, l.to_vec()))
            .collect();
        out.push(Trace {
            invalid: name.ends_with(".invalid.jsonl"),
            name,
            lines,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Loads the four published schemas from `spec/schema/`.
pub fn load_schemas(spec: &Path) -> std::io::Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for name in [
        "narad-core-event.schema.json",
        "narad-profile-event.schema.json",
        "narad-hydrate.schema.json",
        "narad-control.schema.json",
    ] {
        let text = std::fs::read(spec.join("schema").join(name))?;
        let value = serde_json::from_slice(&text).map_err(std::io::Error::other)?;
        out.push((name.to_owned(), value));
    }
    Ok(out)
}
