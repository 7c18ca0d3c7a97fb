// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of artifact patterns, matching and names.

use super::*;

#[test]
fn good_patterns_are_accepted() {
    for p in [
        "model.pt",
        "out/*.pt",
        "checkpoints/epoch-??/weights.bin",
        "logs/*",
        "*",
        "a b/c",
    ] {
        assert_eq!(validate_pattern(p), Ok(()), "{p}");
    }
}

#[test]
fn bad_patterns_are_refused_with_the_right_reason() {
    assert_eq!(validate_pattern(""), Err(ArtifactError::EmptyPattern));
    assert!(matches!(
        validate_pattern("/etc/passwd"),
        Err(ArtifactError::AbsolutePattern(_))
    ));
    for p in ["../x", "a/../b", "./a", "a//b", "a/", "a/."] {
        assert!(
            matches!(validate_pattern(p), Err(ArtifactError::BadComponent(_))),
            "{p}"
        );
    }
    assert!(matches!(
        validate_pattern("**/x.pt"),
        Err(ArtifactError::DoubleStar(_))
    ));
    assert!(matches!(
        validate_pattern("a**"),
        Err(ArtifactError::DoubleStar(_))
    ));
    assert!(matches!(
        validate_pattern("a\nb"),
        Err(ArtifactError::ControlInPattern(_))
    ));
    let long = "a".repeat(MAX_PATTERN_BYTES + 1);
    let err = validate_pattern(&long).unwrap_err();
    assert!(matches!(err, ArtifactError::PatternTooLong { bytes: 257, .. }));
    assert!(
        err.to_string().len() < 200,
        "the message does not echo the whole input"
    );
    assert!(err.to_string().contains("at most 256"));
}

#[test]
fn globs_match_within_one_component() {
    assert!(matches("out/*.pt", "out/model.pt"));
    assert!(matches("out/*.pt", "out/.pt"));
    assert!(!matches("out/*.pt", "out/sub/model.pt"));
    assert!(!matches("*", "a/b"));
    assert!(matches("*", "a"));
    assert!(matches("epoch-??/w", "epoch-07/w"));
    assert!(!matches("epoch-??/w", "epoch-7/w"));
    assert!(matches("a*b*c", "aXXbYYbZc"));
    assert!(!matches("a*b*c", "aXXbYYbZ"));
    assert!(matches("*é*", "café"), "characters, not bytes");
    assert!(matches("caf?", "café"));
    assert!(!matches("out", "out/x"));
    assert!(!matches("out/x", "out"));
    assert!(matches("exact.txt", "exact.txt"));
}

#[test]
fn many_stars_do_not_blow_up() {
    let pattern = "*a".repeat(30) + "b";
    let text = "a".repeat(200);
    assert!(!matches(&pattern, &text));
}

#[test]
fn artifact_names_follow_the_workspace_path_rules() {
    assert_eq!(validate_artifact_name("out/model.pt"), Ok(()));
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a//b",
        "a\u{1b}[2J",
        "a\0b",
    ] {
        assert!(
            matches!(validate_artifact_name(bad), Err(ArtifactError::Name(_))),
            "{bad:?}"
        );
    }
    assert!(matches!(
        validate_artifact_name("./a"),
        Err(ArtifactError::NotNormal(_))
    ));
    assert!(matches!(
        validate_artifact_name("a/"),
        Err(ArtifactError::NotNormal(_))
    ));
    let deep = vec!["d"; 40].join("/");
    assert!(matches!(
        validate_artifact_name(&deep),
        Err(ArtifactError::Name(PathError::TooDeep { .. }))
    ));
}
