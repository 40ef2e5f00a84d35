//! A store this process may not write (a read-only mount, another user's
//! file, a backup) is still listed, shown, exported, verified and migrated
//! from by the real binary, and a command that writes is refused with the
//! file untouched.
//!
//! The store files and their directory are made unwritable with
//! `chmod`; for root, which `chmod` does not stop, with `chattr +i` too
//! (undone when the test ends). Where neither makes them unwritable, the
//! test says it skipped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{narad, trace};

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

/// Makes `paths` unwritable; gives them back on drop.
struct Unwritable(Vec<PathBuf>, bool);

impl Unwritable {
    fn new(paths: Vec<PathBuf>) -> Self {
        for p in &paths {
            let mode = if p.is_dir() { 0o555 } else { 0o444 };
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let mut guard = Self(paths, false);
        if guard.writable() {
            // Root: only the immutable attribute stops it.
            guard.1 = true;
            for p in &guard.0 {
                let _ = Command::new("chattr").arg("+i").arg(p).status();
            }
        }
        guard
    }

    fn writable(&self) -> bool {
        self.0
            .iter()
            .any(|p| p.is_file() && std::fs::OpenOptions::new().write(true).open(p).is_ok())
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        for p in &self.0 {
            if self.1 {
                let _ = Command::new("chattr").arg("-i").arg(p).status();
            }
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[test]
fn an_unwritable_store_is_read_and_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let stores = dir.path().join("stores");
    std::fs::create_dir(&stores).unwrap();
    let good = trace("tool-after-stop.jsonl");
    let urls = [
        ("redb", stores.join("a.redb")),
        ("sqlite", stores.join("a.sqlite")),
    ];
    for (scheme, path) in &urls {
        let url = format!("{scheme}:{}", path.display());
        assert_eq!(narad(&["import", "--store", &url, &good]).0, 0);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&stores)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.push(stores.clone());
    let before: Vec<Vec<u8>> = urls
        .iter()
        .map(|(_, p)| std::fs::read(p).unwrap())
        .collect();
    let guard = Unwritable::new(files);
    if guard.writable() {
        eprintln!("SKIPPED an_unwritable_store_is_read_and_never_written: the files stay writable for this user");
        return;
    }
    for (scheme, path) in &urls {
        let url = format!("{scheme}:{}", path.display());
        let (code, sessions, err) = narad(&["sessions", "--store", &url]);
        assert_eq!(code, 0, "{scheme}: {err}");
        let sid = sessions.split('\t').next().unwrap().to_owned();
        let (code, shown, err) = narad(&["show", "--store", &url, "--session", &sid]);
        assert_eq!(code, 0, "{scheme}: {err}");
        assert!(shown.contains("run "), "{shown}");
        let (code, exported, _) = narad(&["export", "--store", &url, "--session", &sid]);
        assert_eq!(code, 0);
        let original = std::fs::read_to_string(&good).unwrap();
        assert_eq!(exported.trim_end(), original.trim_end());
        let (code, verified, err) = narad(&["verify", "--store", &url]);
        assert_eq!(code, 0, "{scheme}: {verified}{err}");
        assert!(verified.contains("1 session: 1 valid"), "{verified}");
        let (code, _, err) = narad(&["interrupts", "--store", &url]);
        assert_eq!(code, 0, "{scheme}: {err}");
        // Migrate from it, to a store that can be written.
        let to = format!(
            "sqlite:{}",
            dir.path().join(format!("copy-{scheme}.db")).display()
        );
        let (code, out, err) = narad(&["migrate", "--from", &url, "--to", &to]);
        assert_eq!(code, 0, "{scheme}: {out}{err}");
        assert!(out.contains("1 sessions verified"), "{out}");
        // A command that writes is refused, naming the file.
        let (code, _, err) = narad(&["import", "--store", &url, &good]);
        assert_eq!(code, 1);
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
    drop(guard);
    let after: Vec<Vec<u8>> = urls
        .iter()
        .map(|(_, p)| std::fs::read(p).unwrap())
        .collect();
    assert!(before == after, "a store file changed");
}
