//! Embeds every trace as a seed journal: the project's golden traces and,
//! when `../shared/narad-spec` sits beside the repository, the published
//! ones. Nothing of `../shared` is copied into the repository; it is read at
//! build time only. `seed-corpus.sh` lists the files in the same order.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn traces(dir: &Path) -> Vec<PathBuf> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = traces(&root.join("../conformance/traces"));
    files.extend(traces(&root.join("../../shared/narad-spec/conformance")));
    let mut out = String::from("/// Every trace found at build time: (file name, contents).\npub static JOURNALS: &[(&str, &str)] = &[\n");
    for f in &files {
        let abs = f.canonicalize().unwrap_or_else(|_| f.clone());
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            abs.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("journals.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        println!("cargo:warning=cannot write {}: {e}", dest.display());
    }
}
