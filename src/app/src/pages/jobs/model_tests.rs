// SPDX-License-Identifier: GPL-3.0-or-later

use partagpu_core::job::state::JobState;

use super::*;

pub(crate) fn record(handle: &str, role: JobRole, state: JobState) -> JobRecord {
    serde_json::from_value(serde_json::json!({
        "job": handle, "id": "0123456789abcdef0123456789abcdef", "attempt": 0,
        "submitter": "aa", "node": "bb", "node_name": "lab-2", "role": role,
        "argv": ["python3", "job.py"], "state": state, "created_ms": 1
    }))
    .unwrap()
}

fn chunk(data: &str, next: u64, complete: bool) -> LogChunk {
    LogChunk {
        data: data.as_bytes().to_vec(),
        next,
        complete,
    }
}

#[test]
fn only_jobs_submitted_from_here_are_mine() {
    let mut model = JobsModel::default();
    model.set_jobs(vec![
        record("a", JobRole::Submitted, JobState::Running),
        record("b", JobRole::Here, JobState::Running),
        record("c", JobRole::Group, JobState::Succeeded),
        record("d", JobRole::Both, JobState::Failed),
    ]);
    let handles: Vec<&str> = model.mine().iter().map(|j| j.job.as_str()).collect();
    assert_eq!(handles, ["a", "c", "d"]);
}

#[test]
fn the_log_grows_and_a_stale_read_is_ignored() {
    let mut model = JobsModel::default();
    model.set_jobs(vec![record("a", JobRole::Submitted, JobState::Running)]);
    let old = model.select(Some("a".into()));
    assert_eq!(model.log_arrived(old, &chunk("hello\n", 6, false)), NextRead::Now);
    assert_eq!(model.read_position(), Some(("a".into(), 6, old)));
    assert_eq!(model.log_arrived(old, &chunk("", 6, false)), NextRead::Later);
    let new = model.select(Some("a".into()));
    assert_eq!(model.log_arrived(old, &chunk("late", 10, false)), NextRead::Stale);
    assert_eq!(model.log(), "");
    assert_eq!(
        model.log_arrived(new, &chunk("hello\nworld\n", 12, true)),
        NextRead::Done
    );
    assert_eq!(model.log(), "hello\nworld\n");
    assert_eq!(model.selected().unwrap().job, "a");
}

#[test]
fn a_huge_log_keeps_its_end() {
    let mut model = JobsModel::default();
    let generation = model.select(Some("a".into()));
    let big = "é".repeat(MAX_LOG_CHARS);
    model.log_arrived(generation, &chunk(&big, 1, false));
    model.log_arrived(generation, &chunk("end", 2, false));
    assert!(model.log().len() <= MAX_LOG_CHARS && model.log().ends_with("end"));
}

#[test]
fn finished_jobs_cannot_be_cancelled_and_artifacts_have_a_folder() {
    let done = record("a", JobRole::Submitted, JobState::Succeeded);
    assert!(!can_cancel(&done));
    assert!(can_cancel(&record("a", JobRole::Submitted, JobState::Paused)));
    assert_eq!(
        artifacts_dir(Path::new("/home/u/Downloads"), &done),
        Path::new("/home/u/Downloads/PartaGPU/01234567")
    );
}
