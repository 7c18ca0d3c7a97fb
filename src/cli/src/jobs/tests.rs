// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of the job table and its cells.

use super::*;

/// A record as the service would send it, with `extra` keys merged in.
pub(crate) fn record(extra: serde_json::Value) -> JobRecord {
    let mut json = serde_json::json!({
        "job": "aaaaaaaaaaaa-3f2a9c1b00000000000000000000000f-0",
        "id": "3f2a9c1b00000000000000000000000f",
        "attempt": 0,
        "submitter": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "node": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "node_name": "lab-2",
        "role": "submitted",
        "argv": ["python", "train.py"],
        "state": "running",
        "created_ms": 1_000_000,
        "a_key_from_a_newer_service": true,
    });
    for (key, value) in extra.as_object().unwrap() {
        json[key] = value.clone();
    }
    serde_json::from_value(json).unwrap()
}

#[test]
fn places_name_both_ends_of_a_job() {
    assert_eq!(place(&record(serde_json::json!({}))), "→ lab-2");
    assert_eq!(place(&record(serde_json::json!({"role": "both"}))), "here");
    let from = record(serde_json::json!({"role": "here", "submitter_name": "lab-1"}));
    assert_eq!(place(&from), "lab-1 → here");
    let unnamed = record(serde_json::json!({"role": "here"}));
    assert_eq!(place(&unnamed), "aaaaaaaa… → here");
}

#[test]
fn spans_pick_a_readable_unit() {
    assert_eq!(span(4_200), "4.2 s");
    assert_eq!(span(42_000), "42 s");
    assert_eq!(span(300_000), "5 min");
    assert_eq!(span(3 * 3_600_000), "3 h");
    assert_eq!(span(3 * 86_400_000), "3 d");
}

#[test]
fn the_table_shows_short_ids_places_and_truncated_commands() {
    let long: Vec<String> = (0..30).map(|i| format!("arg{i}")).collect();
    let records = [
        record(serde_json::json!({"started_ms": 1_002_000})),
        record(serde_json::json!({
            "id": "0123456789abcdef0123456789abcdef", "role": "both", "state": "succeeded",
            "argv": long, "started_ms": 1_000_000, "ended_ms": 1_004_200,
        })),
    ];
    let table = render_table(&records, 1_062_000);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(
        lines[0].starts_with("JOB       STATE      WHERE    COMMAND"),
        "{table}"
    );
    assert!(
        lines[1].starts_with("3f2a9c1b  running    → lab-2  python train.py"),
        "{table}"
    );
    assert!(lines[1].ends_with("1 min  1 min"), "{table}");
    assert!(
        lines[2].starts_with("01234567  succeeded  here     arg0 arg1"),
        "{table}"
    );
    assert!(lines[2].contains(" arg7…  "), "cut at 40 characters: {table}");
    assert!(lines[2].ends_with("4.2 s"), "{table}");
    assert!(render_table(&[], 0).starts_with("No jobs."));
}

#[test]
fn artifacts_are_described_with_size_and_hash_prefix() {
    let artifact = ArtifactInfo {
        name: "out.txt".into(),
        size: 12,
        sha256: "9f86d081884c7d65".into(),
    };
    assert_eq!(describe(&artifact), "out.txt (12 B, sha256 9f86d081…)");
}
