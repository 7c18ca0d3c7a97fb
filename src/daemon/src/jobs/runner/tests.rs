// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

const GIB: u64 = 1 << 30;

#[test]
fn each_way_of_ending_has_one_state_and_a_reason_that_names_it() {
    let case = |stop, oom, pids, code| outcome(stop, oom, pids, code, 2 * GIB, 60);
    assert_eq!(case(None, false, false, Some(0)), (JobState::Succeeded, None));
    let (state, why) = case(None, true, false, Some(137));
    assert_eq!(state, JobState::Failed);
    assert_eq!(
        why.unwrap(),
        "out of memory: the job needed more than its RAM limit of 2.0 GiB"
    );
    let (_, why) = case(None, false, true, Some(3));
    assert_eq!(
        why.unwrap(),
        "the command exited with status 3; it reached its limit of processes"
    );
    let (_, why) = case(None, false, false, Some(127));
    assert!(why.unwrap().contains("sandbox could not start"));
    assert_eq!(case(None, false, false, None).0, JobState::Failed);
    let cancelled = case(
        Some(Stop::Cancelled("its submitter".into())),
        false,
        false,
        Some(130),
    );
    assert_eq!(
        cancelled,
        (JobState::Cancelled, Some("cancelled by its submitter".into()))
    );
    assert_eq!(
        case(Some(Stop::Preempted), false, false, Some(137)).0,
        JobState::Preempted
    );
    assert_eq!(case(Some(Stop::Shutdown), false, false, None).0, JobState::Lost);
    let (state, why) = case(Some(Stop::TimeLimit), true, false, Some(143));
    assert_eq!(state, JobState::Failed, "a stop request wins over what it caused");
    assert_eq!(why.unwrap(), "it ran past its time limit of 60 s");
}
