// SPDX-License-Identifier: GPL-3.0-or-later
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

/// The current user, so chown succeeds without root.
fn me() -> JobUser {
    JobUser {
        name: "me".into(),
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
    }
}

fn file(path: &str, data: std::ops::Range<usize>, executable: bool) -> WorkspaceEntry {
    WorkspaceEntry {
        path: path.into(),
        kind: EntryKind::File { data, executable },
    }
}

fn directory(path: &str) -> WorkspaceEntry {
    WorkspaceEntry {
        path: path.into(),
        kind: EntryKind::Directory,
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn writes_files_and_directories_with_fixed_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let tar = b"print('hi')\n#!/bin/sh\n";
    let plan = [
        file("src/pkg/main.py", 0..12, false),
        directory("src"),
        directory("data/empty"),
        file("run.sh", 12..22, true),
    ];
    let written = write_workspace(tmp.path(), tar, &plan, &me()).unwrap();
    assert_eq!(written, 22);
    assert_eq!(
        fs::read(tmp.path().join("src/pkg/main.py")).unwrap(),
        b"print('hi')\n"
    );
    assert_eq!(fs::read(tmp.path().join("run.sh")).unwrap(), b"#!/bin/sh\n");
    assert_eq!(mode(&tmp.path().join("src/pkg/main.py")), 0o644);
    assert_eq!(mode(&tmp.path().join("run.sh")), 0o755);
    assert_eq!(mode(&tmp.path().join("src/pkg")), 0o755);
    assert_eq!(mode(&tmp.path().join("data/empty")), 0o755);
    let meta = fs::metadata(tmp.path().join("run.sh")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (me().uid, me().gid));
}

#[test]
fn refuses_to_follow_or_replace_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("target"), tmp.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), tmp.path().join("dirlink")).unwrap();
    fs::write(tmp.path().join("exists"), b"old").unwrap();
    let tar = b"evil";
    for plan in [
        vec![file("link", 0..4, false)],
        vec![file("dirlink/x", 0..4, false)],
        vec![directory("dirlink")],
        vec![file("exists", 0..4, false)],
        vec![file("exists/x", 0..4, false)],
        vec![file("a", 0..4, false), file("a", 0..4, false)],
    ] {
        let err = write_workspace(tmp.path(), tar, &plan, &me()).unwrap_err();
        assert!(matches!(err, WorkspaceIoError::Io { .. }), "{plan:?}: {err}");
    }
    assert!(!outside.path().join("target").exists());
    assert!(!outside.path().join("x").exists());
    assert_eq!(fs::read(tmp.path().join("exists")).unwrap(), b"old");
}

#[test]
fn refuses_entries_the_checker_would_not_produce() {
    let tmp = tempfile::tempdir().unwrap();
    for plan in [
        vec![file("../escape", 0..1, false)],
        vec![file("/abs", 0..1, false)],
        vec![file("a//b", 0..1, false)],
        vec![file("a/./b", 0..1, false)],
        vec![file("big", 0..99, false)],
    ] {
        let err = write_workspace(tmp.path(), b"x", &plan, &me()).unwrap_err();
        assert!(matches!(err, WorkspaceIoError::BadEntry(_)), "{plan:?}: {err}");
    }
}

#[test]
fn release_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scratch");
    fs::create_dir_all(dir.join("a/b")).unwrap();
    fs::write(dir.join("a/b/f"), b"x").unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
    assert!(!is_mounted(&dir));
    release_scratch(&dir).unwrap();
    assert!(!dir.exists());
    release_scratch(&dir).unwrap();
    assert!(Path::new("/etc/passwd").exists());
}

#[test]
fn mountinfo_escapes_are_decoded() {
    assert_eq!(unescape(r"/a\040b\011c\134d"), PathBuf::from("/a b\tc\\d"));
    assert_eq!(unescape(r"/plain\0"), PathBuf::from(r"/plain\0"));
    assert!(is_mounted(Path::new("/proc")));
}

#[test]
fn the_checkpoint_to_start_from_replaces_a_file_and_follows_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let source = outside.path().join("held");
    fs::write(&source, b"newest state").unwrap();
    fs::write(tmp.path().join("c.pt"), b"stale state from the workspace").unwrap();
    assert_eq!(place_file(tmp.path(), "c.pt", &source, &me()).unwrap(), 12);
    assert_eq!(fs::read(tmp.path().join("c.pt")).unwrap(), b"newest state");
    assert_eq!(mode(&tmp.path().join("c.pt")), 0o644);
    // A link at the name is replaced, not written through.
    let target = outside.path().join("target");
    fs::write(&target, b"untouched").unwrap();
    std::os::unix::fs::symlink(&target, tmp.path().join("link.pt")).unwrap();
    place_file(tmp.path(), "link.pt", &source, &me()).unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"untouched");
    assert!(!fs::symlink_metadata(tmp.path().join("link.pt"))
        .unwrap()
        .is_symlink());
    // A directory at the name is not removed, and names are single components.
    fs::create_dir(tmp.path().join("dir.pt")).unwrap();
    assert!(matches!(
        place_file(tmp.path(), "dir.pt", &source, &me()),
        Err(WorkspaceIoError::Io { .. })
    ));
    for name in ["", ".", "..", "a/b", "../c.pt"] {
        assert!(
            matches!(
                place_file(tmp.path(), name, &source, &me()),
                Err(WorkspaceIoError::BadEntry(_))
            ),
            "{name:?}"
        );
    }
    assert!(!outside.path().join("c.pt").exists());
}
