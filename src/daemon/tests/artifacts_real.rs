// SPDX-License-Identifier: GPL-3.0-or-later
//! Artifact collection from a workspace laid out the way a hostile job would: links to host
//! files named like artifacts, hard links, a FIFO that would block a naive reader, a socket,
//! nested directories, and a file larger than the cap.

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use partagpu_core::job::state::ArtifactInfo;
use partagpu_daemon::jobs::artifacts::{collect, verify, ArtifactIoError, Collection};
use sha2::{Digest, Sha256};

fn pats(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

/// Runs a collection on another thread so that a read blocked on the FIFO fails the test
/// instead of hanging it.
fn collect_within(
    ws: &Path,
    patterns: Vec<String>,
    dest: &Path,
    max_total: u64,
) -> Result<Collection, ArtifactIoError> {
    let (tx, rx) = mpsc::channel();
    let (ws, dest) = (ws.to_owned(), dest.to_owned());
    std::thread::spawn(move || tx.send(collect(&ws, &patterns, &dest, max_total, 100)));
    rx.recv_timeout(Duration::from_secs(20))
        .expect("collection hung (the FIFO was opened blocking?)")
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let p = ws.path();
    std::fs::create_dir_all(p.join("out/deep/er")).unwrap();
    std::fs::write(p.join("out/model.pt"), b"weights").unwrap();
    std::fs::write(p.join("out/deep/er/metrics.json"), b"{\"loss\": 0.1}").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", p.join("out/passwd.pt")).unwrap();
    std::fs::write(p.join("shared.bin"), b"twice").unwrap();
    std::fs::hard_link(p.join("shared.bin"), p.join("out/linked.pt")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(p.join("out/pipe.pt"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let _socket = std::os::unix::net::UnixListener::bind(p.join("out/sock.pt")).unwrap();
    std::fs::write(p.join("out/zz-big.pt"), vec![7u8; 3 << 20]).unwrap();
    ws
}

#[test]
fn hostile_workspace_yields_only_regular_files() {
    let ws = workspace();
    let dest_root = tempfile::tempdir().unwrap();
    let dest = dest_root.path().join("artifacts");
    let patterns = pats(&["out/*.pt", "out/*/*/*.json", "missing/*"]);
    let c = collect_within(ws.path(), patterns, &dest, 8 << 20).unwrap();

    let names: Vec<&str> = c.artifacts.iter().map(|a| a.info.name.as_str()).collect();
    assert_eq!(
        names,
        ["out/deep/er/metrics.json", "out/model.pt", "out/zz-big.pt"]
    );
    let refused: Vec<(&str, &str)> = c.refused.iter().map(|(p, w)| (p.as_str(), w.as_str())).collect();
    assert_eq!(
        refused,
        [
            ("out/linked.pt", "has other hard links"),
            ("out/passwd.pt", "is a symbolic link"),
            ("out/pipe.pt", "is a FIFO"),
            ("out/sock.pt", "is a socket"),
        ]
    );
    assert_eq!(c.total_bytes, 13 + 7 + (3 << 20));
    let model = &c.artifacts[1];
    assert_eq!(model.info.sha256, hex::encode(Sha256::digest(b"weights")));
    assert_eq!(model.info.size, 7);
    assert_eq!(std::fs::read(&model.stored).unwrap(), b"weights");
    for a in &c.artifacts {
        verify(&a.stored, &a.info).unwrap();
        println!("{} {} {}", a.info.name, a.info.size, a.info.sha256);
    }
    // The link was not followed: no copy of /etc/passwd exists anywhere in the store.
    assert!(!dest.join("out/passwd.pt").exists());
    let tampered = ArtifactInfo {
        size: 8,
        ..model.info.clone()
    };
    assert!(verify(&model.stored, &tampered).is_err());
}

#[test]
fn byte_cap_keeps_nothing() {
    let ws = workspace();
    let dest_root = tempfile::tempdir().unwrap();
    let dest = dest_root.path().join("artifacts");
    // 1 MiB: model.pt and metrics.json fit, zz-big.pt (3 MiB, walked last) does not.
    let e = collect_within(ws.path(), pats(&["out/*.pt", "out/*/*/*.json"]), &dest, 1 << 20).unwrap_err();
    println!("{e}");
    assert!(matches!(e, ArtifactIoError::TooLarge { limit: 1048576, ref path } if path == "out/zz-big.pt"));
    assert!(e.to_string().contains("limit of 1048576 bytes"));
    assert!(!dest.exists(), "a partial artifact set was left behind");
    assert_eq!(std::fs::read_dir(dest_root.path()).unwrap().count(), 0);
}

#[test]
fn byte_cap_is_exact() {
    // A file exactly at the cap passes; one byte less of cap refuses it and keeps nothing.
    let ws = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), b"12345").unwrap();
    let c = collect_within(ws.path(), pats(&["a.txt"]), &dest.path().join("d"), 5).unwrap();
    assert_eq!(c.total_bytes, 5);
    let e = collect_within(ws.path(), pats(&["a.txt"]), &dest.path().join("e"), 4).unwrap_err();
    assert!(matches!(e, ArtifactIoError::TooLarge { .. }));
    assert!(!dest.path().join("e").exists());
}
