// SPDX-License-Identifier: GPL-3.0-or-later
//! Snapshots from fixture workspaces, written as `partagpu.checkpoint.save()` and as a hostile
//! job could.

use super::*;
use partagpu_core::job::artifacts::MAX_ARTIFACT_TOTAL;

fn index(ws: &Path, step: i64, file: &str) {
    fs::write(
        ws.join(INDEX_FILE),
        format!(r#"{{"step": {step}, "file": "{file}"}}"#),
    )
    .unwrap();
}

#[test]
fn the_newest_checkpoint_is_copied_with_its_step_and_hash() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("partagpu-checkpoint.pt"), b"weights of epoch 2").unwrap();
    index(ws.path(), 2, "partagpu-checkpoint.pt");
    let dest = out.path().join("snap");
    let snap = snapshot(ws.path(), i64::MIN, &dest)
        .unwrap()
        .expect("a checkpoint");
    assert_eq!(snap.shipped.step, 2);
    assert_eq!(snap.shipped.artifact.name, "partagpu-checkpoint.pt");
    assert_eq!(snap.shipped.artifact.size, 18);
    assert_eq!(fs::read(&snap.path).unwrap(), b"weights of epoch 2");
    super::super::artifacts::verify(&snap.path, &snap.shipped.artifact).unwrap();
    // Held already: nothing is copied.
    assert_eq!(snapshot(ws.path(), 2, &dest).unwrap(), None);
    assert_eq!(snapshot(ws.path(), 5, &dest).unwrap(), None);
}

#[test]
fn no_index_or_a_missing_file_is_no_checkpoint_yet() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    assert_eq!(
        snapshot(ws.path(), i64::MIN, &out.path().join("a")).unwrap(),
        None
    );
    index(ws.path(), 1, "not-written-yet.pt");
    assert_eq!(
        snapshot(ws.path(), i64::MIN, &out.path().join("a")).unwrap(),
        None
    );
}

#[test]
fn a_hostile_index_or_file_is_refused_and_never_followed() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("snap");
    // The index names a link to a file of the machine's.
    std::os::unix::fs::symlink("/etc/passwd", ws.path().join("ckpt.pt")).unwrap();
    index(ws.path(), 1, "ckpt.pt");
    let error = snapshot(ws.path(), i64::MIN, &dest).unwrap_err();
    assert!(
        matches!(error, CheckpointIoError::Refused(ref name, _) if name == "ckpt.pt"),
        "{error}"
    );
    // A path out of the workspace.
    index(ws.path(), 1, "../../etc/passwd");
    assert!(matches!(
        snapshot(ws.path(), i64::MIN, &dest),
        Err(CheckpointIoError::Index(_))
    ));
    // The index itself a link.
    fs::remove_file(ws.path().join(INDEX_FILE)).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", ws.path().join(INDEX_FILE)).unwrap();
    assert!(matches!(
        snapshot(ws.path(), i64::MIN, &dest),
        Err(CheckpointIoError::Refused(..))
    ));
    // An index far larger than save() writes.
    fs::remove_file(ws.path().join(INDEX_FILE)).unwrap();
    fs::write(ws.path().join(INDEX_FILE), vec![b' '; 10_000]).unwrap();
    let error = snapshot(ws.path(), i64::MIN, &dest).unwrap_err();
    assert!(error.to_string().contains("more than 4096 bytes"), "{error}");
    assert!(!dest.join("index").join(INDEX_FILE).exists());
}

#[test]
fn a_custom_name_and_a_checkpoint_above_the_artifact_cap_are_shipped() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // Larger than all of a job's artifacts may be, within the checkpoint's own cap (sparse).
    let big = fs::File::create(ws.path().join("unet epoch.pt")).unwrap();
    big.set_len(MAX_ARTIFACT_TOTAL + 1).unwrap();
    index(ws.path(), 7, "unet epoch.pt");
    let snap = snapshot(ws.path(), 6, &out.path().join("snap")).unwrap().unwrap();
    assert_eq!(
        (snap.shipped.step, snap.shipped.artifact.size),
        (7, MAX_ARTIFACT_TOTAL + 1)
    );
}
