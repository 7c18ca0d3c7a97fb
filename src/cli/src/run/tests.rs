// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of `run`: the spec sent, the summary and the exit status.

use super::*;
use crate::args::{Args, Command};
use crate::jobs::tests::record;
use clap::Parser;
use serde_json::json;

fn run_args(line: &[&str]) -> RunArgs {
    match Args::parse_from(["partagpuctl", "run"].iter().chain(line)).command {
        Command::Run(run) => run,
        other => panic!("parsed as {other:?}"),
    }
}

fn empty_workspace() -> Workspace {
    let tar = TarWriter::new().finish();
    Workspace {
        sha256: sha256_hex(&tar),
        tar,
    }
}

#[test]
fn the_spec_is_one_the_service_accepts() {
    let args = run_args(&[
        "--env",
        "OMP_NUM_THREADS=4",
        "--gpus",
        "1",
        "--ram",
        "2G",
        "--artifact",
        "out/*.pt",
        "--time-limit",
        "2h",
        "--",
        "python",
        "-c",
        "print(1)",
    ]);
    let spec = build_spec(&args, JobId([7; 16]), &empty_workspace()).unwrap();
    let json = serde_json::to_string(&spec).unwrap();
    let parsed = JobSpec::parse(json.as_bytes()).unwrap();
    assert_eq!(parsed, spec);
    assert_eq!(parsed.submitter, "0".repeat(32));
    assert_eq!(parsed.argv, ["python", "-c", "print(1)"]);
    assert_eq!(
        parsed.resources,
        JobResources {
            cpu_percent: 0,
            ram_bytes: 2 << 30,
            gpus: 1
        }
    );
    assert_eq!(parsed.time_limit_s, 7200);
    assert_eq!(parsed.workspace_bytes, 1024);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["id"], "07".repeat(16));
    assert_eq!(value["network"], json!({"mode": "none"}));
}

#[test]
fn a_spec_the_service_would_refuse_is_refused_here() {
    let workspace = empty_workspace();
    let twice = run_args(&["--env", "OMP_X=1", "--env", "OMP_X=2", "--", "true"]);
    assert!(build_spec(&twice, JobId([1; 16]), &workspace).is_err());
    let reserved = run_args(&["--env", "PATH=/tmp", "--", "true"]);
    assert!(build_spec(&reserved, JobId([1; 16]), &workspace).is_err());
}

#[test]
fn random_ids_differ() {
    assert_ne!(random_id().unwrap(), random_id().unwrap());
}

#[test]
fn the_summary_names_the_machine_the_time_and_the_artifacts() {
    let done = record(json!({"state": "succeeded", "started_ms": 1_000, "ended_ms": 5_200}));
    let artifact = ArtifactInfo {
        name: "out.txt".into(),
        size: 12,
        sha256: "9f86d081aa".into(),
    };
    let saved = [(artifact, PathBuf::from("./out.txt"))];
    assert_eq!(
        outcome(&done, &saved, 0),
        (
            0,
            "Job 3f2a9c1b succeeded on lab-2 in 4.2 s; out.txt (12 B, sha256 9f86d081…) saved to ./out.txt"
                .into()
        )
    );
    let here = record(json!({"state": "succeeded", "role": "both"}));
    assert_eq!(
        outcome(&here, &[], 0),
        (0, "Job 3f2a9c1b succeeded on this machine".into())
    );
}

#[test]
fn the_exit_status_follows_the_job() {
    let oom = record(json!({"state": "failed", "reason": "out of memory (limit 2.0 GiB)"}));
    assert_eq!(
        outcome(&oom, &[], 0),
        (
            1,
            "partagpuctl: job 3f2a9c1b failed: out of memory (limit 2.0 GiB)".into()
        )
    );
    let exited = record(json!({"state": "failed", "exit_code": 3}));
    assert_eq!(
        outcome(&exited, &[], 0),
        (3, "partagpuctl: job 3f2a9c1b failed: exited with status 3".into())
    );
    assert_eq!(
        outcome(&record(json!({"state": "failed", "exit_code": 300})), &[], 0).0,
        1
    );
    assert_eq!(outcome(&record(json!({"state": "cancelled"})), &[], 0).0, 130);
    let lost = record(json!({"state": "lost", "reason": "lab-2 restarted"}));
    assert_eq!(
        outcome(&lost, &[], 0),
        (1, "partagpuctl: job 3f2a9c1b lost: lab-2 restarted".into())
    );
    assert_eq!(outcome(&record(json!({"state": "preempted"})), &[], 0).0, 1);
}
