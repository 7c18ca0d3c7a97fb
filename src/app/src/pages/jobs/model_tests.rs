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
fn a_training_is_one_job_not_one_per_part() {
    use partagpu_core::job::record::JobPart;
    let mut group = record("g", JobRole::Group, JobState::Running);
    group.parts = ["p0", "p1"]
        .iter()
        .enumerate()
        .map(|(rank, handle)| JobPart {
            job: (*handle).to_owned(),
            node: format!("node-{rank}"),
            node_name: format!("lab-{}", rank + 1),
            node_rank: u32::try_from(rank).unwrap(),
            processes: 1,
            state: JobState::Running,
        })
        .collect();
    let mut model = JobsModel::default();
    model.set_jobs(vec![
        group,
        record("p0", JobRole::Both, JobState::Running),
        record("p1", JobRole::Submitted, JobState::Running),
        record("alone", JobRole::Submitted, JobState::Running),
    ]);
    let handles: Vec<&str> = model.mine().iter().map(|j| j.job.as_str()).collect();
    assert_eq!(handles, ["g", "alone"]);
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

/// One report window of 10 steps: its step, seconds a step, its slowest machine with its
/// excess, and the steps each machine slowed.
type Window<'a> = (u64, f64, Option<(&'a str, u32)>, &'a [(&'a str, u32)]);

fn training(windows: &[Window<'_>]) -> JobRecord {
    use partagpu_core::job::training::{Slowest, TrainingReport, TrainingUpdate};
    let mut report = TrainingReport::default();
    report.apply(TrainingUpdate::Plan {
        text: "predicted 2.7× on 3 machines with 8-step accumulation".into(),
    });
    for &(step, step_s, slowest, slowed) in windows {
        report.apply(TrainingUpdate::Window {
            step,
            step_s,
            world_size: 3,
            strategy: "accumulate8".into(),
            slowest: slowest.map(|(machine, excess_percent)| Slowest {
                machine: machine.into(),
                excess_percent,
                compared: "forward pass".into(),
            }),
            compared_steps: 10,
            slowed_steps: slowed.iter().map(|&(m, n)| (m.to_owned(), n)).collect(),
        });
    }
    let mut job = record("g", JobRole::Group, JobState::Running);
    job.training = Some(report);
    job
}

#[test]
fn a_job_without_reports_has_no_training_rows() {
    let job = record("a", JobRole::Submitted, JobState::Running);
    assert_eq!(prediction_text(&job), None);
    assert_eq!(steps_text(&job), None);
    assert_eq!(slowest_text(&job), None);
    assert_eq!(measured_text(&job), None);
    let planned = training(&[]);
    assert_eq!(
        prediction_text(&planned).as_deref(),
        Some("predicted 2.7× on 3 machines with 8-step accumulation")
    );
    assert_eq!(steps_text(&planned), None);
    assert_eq!(slowest_text(&planned), None);
    assert_eq!(measured_text(&planned), None);
}

#[test]
fn a_training_shows_its_steps_and_its_straggler() {
    let mut job = training(&[
        (10, 0.9, Some(("lab-3", 23)), &[("lab-3", 8), ("lab-1", 1)]),
        (20, 0.84, Some(("lab-3", 31)), &[("lab-3", 9)]),
    ]);
    assert_eq!(
        steps_text(&job).as_deref(),
        Some("20 optimizer steps, 0.84 s each lately (3 processes, strategy accumulate8)")
    );
    assert_eq!(
        slowest_text(&job).as_deref(),
        Some("lab-3 lately, 31 % slower than the median (forward pass) — slowed 17 of 20 steps")
    );
    let report = job.training.as_mut().unwrap();
    report.measured = Some("measured 2.4× on 3 machines (efficiency 81 %)".into());
    report.strategy = None;
    report.world_size = Some(1);
    report.steps = 1;
    assert_eq!(
        steps_text(&job).as_deref(),
        Some("1 optimizer step, 0.84 s each lately (1 process)")
    );
    assert_eq!(
        measured_text(&job).as_deref(),
        Some("measured 2.4× on 3 machines (efficiency 81 %)")
    );
}

#[test]
fn when_every_machine_keeps_up_the_usual_straggler_is_still_named() {
    let even = training(&[(10, 0.8, None, &[])]);
    assert_eq!(
        slowest_text(&even).as_deref(),
        Some("None lately: every machine is within 10 % of the median — no machine slowed any of the 10 steps compared")
    );
    let caught_up = training(&[
        (10, 0.9, Some(("lab-3", 23)), &[("lab-3", 10)]),
        (20, 0.8, None, &[("lab-3", 1)]),
    ]);
    assert_eq!(
        slowest_text(&caught_up).as_deref(),
        Some("None lately: every machine is within 10 % of the median — lab-3 slowed 11 of 20 steps")
    );
    let noise = training(&[(10, 0.8, None, &[("lab-1", 3), ("lab-2", 4), ("lab-3", 3)])]);
    assert_eq!(
        slowest_text(&noise).as_deref(),
        Some("None lately: every machine is within 10 % of the median — no machine slowed most of the 10 steps compared")
    );
    let other = training(&[
        (10, 0.9, Some(("lab-3", 23)), &[("lab-3", 10)]),
        (20, 0.9, Some(("lab-3", 20)), &[("lab-3", 6), ("lab-2", 2)]),
        (30, 0.8, Some(("lab-2", 12)), &[("lab-2", 5), ("lab-3", 3)]),
    ]);
    assert_eq!(
        slowest_text(&other).as_deref(),
        Some("lab-2 lately, 12 % slower than the median (forward pass) — lab-3 slowed 19 of 30 steps")
    );
}

#[test]
fn a_window_from_a_helper_that_compares_no_steps_says_only_the_latest() {
    let mut job = training(&[(10, 0.9, Some(("lab-3", 23)), &[])]);
    job.training.as_mut().unwrap().compared_steps = 0;
    assert_eq!(
        slowest_text(&job).as_deref(),
        Some("lab-3 lately, 23 % slower than the median (forward pass)")
    );
    job.training.as_mut().unwrap().compared_steps = 1;
    assert!(slowest_text(&job)
        .unwrap()
        .ends_with("— no machine slowed the 1 step compared"));
}

#[test]
fn lost_and_preempted_parts_are_marked_on_the_machines() {
    let mut job = record("g", JobRole::Group, JobState::Running);
    job.parts = serde_json::from_value(serde_json::json!([
        {"job": "p0", "node": "aa", "node_name": "lab-1", "node_rank": 0, "processes": 1, "state": "running"},
        {"job": "p1", "node": "cc", "node_name": "lab-3", "node_rank": 1, "processes": 2, "state": "running"},
    ]))
    .unwrap();
    assert_eq!(machines_text(&job), None);
    job.parts[1].state = JobState::Lost;
    assert_eq!(machines_text(&job).as_deref(), Some("lab-1, lab-3 (lost)"));
    job.parts[0].state = JobState::Preempted;
    job.parts[0].node_name.clear();
    assert_eq!(
        machines_text(&job).as_deref(),
        Some("aa… (preempted), lab-3 (lost)")
    );
}
