// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of where artifacts go and when they are kept.

use super::*;

fn artifact(name: &str, data: &[u8]) -> ArtifactInfo {
    ArtifactInfo {
        name: name.into(),
        size: data.len() as u64,
        sha256: sha256_hex(data),
    }
}

fn source(dir: &Path, data: &[u8]) -> File {
    let path = dir.join("source");
    std::fs::write(&path, data).unwrap();
    File::open(path).unwrap()
}

#[test]
fn names_that_leave_the_output_are_refused() {
    let out = Path::new("out");
    assert_eq!(artifact_destination(out, "a/b.txt").unwrap(), out.join("a/b.txt"));
    for bad in [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "",
        "a//b",
        "./a",
        "a/",
        "a\nb",
    ] {
        assert!(
            matches!(artifact_destination(out, bad), Err(ClientError::Artifact { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn a_matching_artifact_is_saved_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    std::fs::create_dir(&output).unwrap();
    let info = artifact("sub/out.txt", b"hello");
    let dest = artifact_destination(&output, &info.name).unwrap();
    write_verified(source(dir.path(), b"hello"), &info, &output, &dest).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"hello");
    assert_eq!(
        std::fs::read_dir(output.join("sub")).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn a_mismatch_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    std::fs::create_dir(&output).unwrap();
    let dest = output.join("out.txt");
    let mut wrong_hash = artifact("out.txt", b"hello");
    wrong_hash.sha256 = sha256_hex(b"other");
    let longer = artifact("out.txt", b"hell");
    for info in [wrong_hash, longer] {
        let error = write_verified(source(dir.path(), b"hello"), &info, &output, &dest).unwrap_err();
        assert!(error.contains("the record says"), "{error}");
        assert_eq!(std::fs::read_dir(&output).unwrap().count(), 0);
    }
}

#[test]
fn a_symbolic_link_in_the_output_does_not_lead_outside() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&output).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, output.join("sub")).unwrap();
    let info = artifact("sub/out.txt", b"hello");
    let dest = artifact_destination(&output, &info.name).unwrap();
    let error = write_verified(source(dir.path(), b"hello"), &info, &output, &dest).unwrap_err();
    assert!(error.contains("leads outside"), "{error}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
