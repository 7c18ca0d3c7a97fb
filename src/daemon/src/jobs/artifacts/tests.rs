// SPDX-License-Identifier: GPL-3.0-or-later
//! Collection from small fixture workspaces; `tests/artifacts_real.rs` adds FIFOs and caps.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn pats(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

#[test]
fn copies_matching_regular_files_with_hashes() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("out/sub")).unwrap();
    std::fs::write(ws.path().join("out/a.pt"), b"alpha").unwrap();
    std::fs::write(ws.path().join("out/b.log"), b"not wanted").unwrap();
    std::fs::write(ws.path().join("out/sub/c.pt"), b"gamma!").unwrap();
    std::fs::write(ws.path().join("model.bin"), b"").unwrap();
    let dest_parent = tempfile::tempdir().unwrap();
    let dest = dest_parent.path().join("store");

    let c = collect(
        ws.path(),
        &pats(&["out/*.pt", "out/*/*.pt", "model.bin"]),
        &dest,
        1 << 20,
        10,
    )
    .unwrap();
    let names: Vec<&str> = c.artifacts.iter().map(|a| a.info.name.as_str()).collect();
    assert_eq!(names, ["model.bin", "out/a.pt", "out/sub/c.pt"]);
    assert_eq!(c.total_bytes, 11);
    assert!(c.refused.is_empty(), "{:?}", c.refused);
    let a = &c.artifacts[1];
    assert_eq!(a.info.sha256, sha(b"alpha"));
    assert_eq!(a.stored, dest.join("out/a.pt"));
    assert_eq!(std::fs::read(&a.stored).unwrap(), b"alpha");
    assert_eq!(
        std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&a.stored).unwrap().permissions().mode() & 0o777,
        0o600
    );
    for art in &c.artifacts {
        verify(&art.stored, &art.info).unwrap();
    }
}

#[test]
fn refusals_name_the_reason() {
    let ws = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.path().join("link.pt")).unwrap();
    std::fs::write(ws.path().join("one.pt"), b"1").unwrap();
    std::fs::hard_link(ws.path().join("one.pt"), ws.path().join("two.pt")).unwrap();
    std::fs::create_dir(ws.path().join("dir.pt")).unwrap();
    std::fs::write(ws.path().join("bad\nname.pt"), b"x").unwrap();
    let dest = tempfile::tempdir().unwrap();
    let c = collect(ws.path(), &pats(&["*.pt"]), &dest.path().join("d"), 1 << 20, 10).unwrap();
    assert!(c.artifacts.is_empty());
    let refused: Vec<(&str, &str)> = c.refused.iter().map(|(p, w)| (p.as_str(), w.as_str())).collect();
    assert_eq!(
        refused,
        [
            (
                "bad\\nname.pt",
                "has a name that is not UTF-8 or has control characters"
            ),
            ("dir.pt", "is a directory (name the files in it, e.g. 'dir/*')"),
            ("link.pt", "is a symbolic link"),
            ("one.pt", "has other hard links"),
            ("two.pt", "has other hard links"),
        ]
    );
}

#[test]
fn file_count_cap_removes_everything_copied() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("o")).unwrap();
    for i in 0..3 {
        std::fs::write(ws.path().join(format!("o/{i}.txt")), b"data").unwrap();
    }
    let dest = tempfile::tempdir().unwrap();
    let store = dest.path().join("store");
    let e = collect(ws.path(), &pats(&["o/*"]), &store, 1 << 20, 2).unwrap_err();
    assert!(matches!(e, ArtifactIoError::TooMany { limit: 2, .. }), "{e}");
    assert!(e.to_string().contains("more than 2 artifact files"));
    assert!(!store.exists(), "a partial collection was left behind");
}

#[test]
fn walk_skips_directories_no_pattern_can_reach() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("secret")).unwrap();
    std::fs::set_permissions(ws.path().join("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::write(ws.path().join("r.txt"), b"r").unwrap();
    let dest = tempfile::tempdir().unwrap();
    // As root the unreadable directory would be readable anyway; pruning is what keeps the walk
    // away from it, and unmatched patterns are no error.
    let c = collect(
        ws.path(),
        &pats(&["r.txt", "nothing/*"]),
        &dest.path().join("s"),
        100,
        10,
    )
    .unwrap();
    assert_eq!(c.artifacts.len(), 1);
    std::fs::set_permissions(ws.path().join("secret"), std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn verify_detects_size_and_hash_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"hello").unwrap();
    let good = ArtifactInfo {
        name: "f".into(),
        size: 5,
        sha256: sha(b"hello"),
    };
    verify(&path, &good).unwrap();
    let short = ArtifactInfo {
        size: 4,
        ..good.clone()
    };
    assert!(matches!(
        verify(&path, &short),
        Err(ArtifactIoError::SizeMismatch { .. })
    ));
    let other = ArtifactInfo {
        sha256: sha(b"hellO"),
        ..good
    };
    let e = verify(&path, &other).unwrap_err();
    assert!(matches!(e, ArtifactIoError::HashMismatch { .. }));
    assert!(e.to_string().ends_with('.'));
}
