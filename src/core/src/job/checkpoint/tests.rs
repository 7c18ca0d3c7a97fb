// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

#[test]
fn the_index_save_writes_is_read() {
    let index = parse_index(br#"{"step": 4, "file": "partagpu-checkpoint.pt"}"#).unwrap();
    assert_eq!(
        index,
        CheckpointIndex {
            step: 4,
            file: "partagpu-checkpoint.pt".into()
        }
    );
    // A custom name given to save().
    assert_eq!(
        parse_index(br#"{"step": -1, "file": "unet state.pt"}"#)
            .unwrap()
            .file,
        "unet state.pt"
    );
}

#[test]
fn an_index_that_save_would_not_write_is_refused() {
    for bad in [
        &b""[..],
        b"{}",
        b"[1]",
        br#"{"step": "4", "file": "a.pt"}"#,
        br#"{"step": 1.5, "file": "a.pt"}"#,
    ] {
        assert!(matches!(parse_index(bad), Err(IndexError::Invalid(_))), "{bad:?}");
    }
    let huge = format!(r#"{{"step": 1, "file": "a.pt", "pad": "{}"}}"#, "x".repeat(5000));
    assert!(matches!(
        parse_index(huge.as_bytes()),
        Err(IndexError::Invalid(_))
    ));
}

#[test]
fn only_a_plain_name_in_the_job_directory_is_a_checkpoint() {
    for bad in [
        "",
        "../etc/shadow",
        "/etc/shadow",
        "sub/ckpt.pt",
        "..",
        ".",
        ".hidden.pt",
        "*.pt",
        "ckpt?.pt",
        "[a].pt",
        "line\nbreak.pt",
        "back\\slash",
        INDEX_FILE,
    ] {
        let index = format!(
            r#"{{"step": 1, "file": {}}}"#,
            serde_json::to_string(bad).unwrap()
        );
        assert!(
            matches!(parse_index(index.as_bytes()), Err(IndexError::BadName(_))),
            "{bad:?}"
        );
    }
    assert!(check_name(&"a".repeat(201)).is_err());
    assert!(check_name("epoch-12.pt").is_ok());
}

#[test]
fn a_coordinator_asks_for_a_step_above_the_one_it_holds() {
    let held = ShippedCheckpoint {
        step: 3,
        artifact: ArtifactInfo {
            name: "partagpu-checkpoint.pt".into(),
            size: 10,
            sha256: "0".repeat(64),
        },
    };
    assert_eq!(after_step(Some(&held)), 3);
    // With none held, any step is newer, even a negative one.
    assert_eq!(after_step(None), i64::MIN);
}
