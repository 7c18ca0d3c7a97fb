// SPDX-License-Identifier: GPL-3.0-or-later
use super::super::elastic::{test_part as part, Departure, Verdict};
use super::*;

/// A 3-machine training of at least 2 whose node 1 was preempted.
fn preempted() -> (Vec<(JobPart, JobState, Option<String>)>, Losses) {
    let states = vec![
        part(0, JobState::Running),
        part(1, JobState::Preempted),
        part(2, JobState::Running),
    ];
    let mut losses = Losses::new(Some(2));
    assert!(matches!(
        losses.left(&states[1].0, &states, Departure::Preempted),
        Verdict::GoesOn(_)
    ));
    (states, losses)
}

/// Returns that saw the departures of `states` at `now`; and when they are settled.
fn seen(states: &[(JobPart, JobState, Option<String>)], losses: &Losses, now: Instant) -> (Returns, Instant) {
    let mut returns = Returns::default();
    assert!(
        returns.due(states, losses, |_| true, now).is_empty(),
        "not settled yet"
    );
    (returns, now + SETTLE)
}

#[test]
fn a_preempted_machine_is_sent_its_part_again_once_it_shares_again() {
    let (states, losses) = preempted();
    let now = Instant::now();
    let mut returns = Returns::default();
    assert!(
        returns.due(&states, &losses, |_| false, now).is_empty(),
        "still paused"
    );
    let soon = now + SETTLE - Duration::from_secs(1);
    assert!(
        returns.due(&states, &losses, |_| true, soon).is_empty(),
        "the rendezvous may still list it"
    );
    let due = returns.due(&states, &losses, |node| node == "node-1", now + SETTLE);
    assert_eq!(due.iter().map(|p| p.job.as_str()).collect::<Vec<_>>(), ["part-1"]);
}

#[test]
fn a_machine_with_a_newer_part_or_resting_after_a_failure_is_not_sent_another() {
    let (mut states, losses) = preempted();
    let now = Instant::now();
    let mut back = part(1, JobState::Running);
    back.0.job = "part-1-again".into();
    states.push(back);
    let (mut returns, settled) = seen(&states, &losses, now);
    assert!(returns.due(&states, &losses, |_| true, settled).is_empty());

    let (states, losses) = preempted();
    let (mut returns, settled) = seen(&states, &losses, now);
    returns.failed("node-1", settled);
    assert!(returns.due(&states, &losses, |_| true, settled).is_empty());
    let later = settled + RETRY_AFTER + Duration::from_secs(1);
    assert_eq!(returns.due(&states, &losses, |_| true, later).len(), 1);
}

#[test]
fn nothing_returns_without_elasticity_a_running_host_or_restarts_left() {
    let (states, losses) = preempted();
    let now = Instant::now();
    let (mut returns, settled) = seen(&states, &losses, now);
    assert!(returns
        .due(&states, &Losses::new(None), |_| true, settled)
        .is_empty());
    assert_eq!(
        returns.due(&states, &losses, |_| true, settled).len(),
        1,
        "elastic, it returns"
    );

    let (mut ended, losses) = preempted();
    ended[0].1 = JobState::Succeeded;
    let (mut returns, settled) = seen(&states, &losses, now);
    assert!(
        returns.due(&ended, &losses, |_| true, settled).is_empty(),
        "the training ended"
    );

    // Node 0 still runs, but another part (here the returned one) has succeeded: the
    // training is ending, and a part sent now would find no rendezvous.
    let (mut ending, losses) = preempted();
    let mut back = part(1, JobState::Succeeded);
    back.0.job = "part-1-again".into();
    ending.push(back);
    let (mut returns, settled) = seen(&states, &losses, now);
    assert!(
        returns.due(&ending, &losses, |_| true, settled).is_empty(),
        "the training is ending"
    );
    ending.pop();
    ending[2].1 = JobState::Succeeded;
    assert!(
        returns.due(&ending, &losses, |_| true, settled).is_empty(),
        "another machine's part succeeded"
    );

    let (mut returns, settled) = seen(&states, &losses, now);
    for _ in 0..ELASTIC_RESTARTS {
        returns.made("node-1");
    }
    assert!(returns.due(&states, &losses, |_| true, settled).is_empty());
}

#[test]
fn a_vanished_part_whose_end_is_unknown_is_not_sent_again() {
    let mut states = vec![
        part(0, JobState::Running),
        part(1, JobState::Running),
        part(2, JobState::Running),
    ];
    let mut losses = Losses::new(Some(2));
    assert!(matches!(
        losses.left(&states[2].0, &states, Departure::Vanished),
        Verdict::GoesOn(_)
    ));
    let now = Instant::now();
    let mut returns = Returns::default();
    let later = now + SETTLE;
    assert!(returns.due(&states, &losses, |_| true, now).is_empty());
    assert!(
        returns.due(&states, &losses, |_| true, later).is_empty(),
        "it might still run"
    );
    states[2].1 = JobState::Lost;
    assert!(
        returns.due(&states, &losses, |_| true, later).is_empty(),
        "its end was just seen"
    );
    assert_eq!(returns.due(&states, &losses, |_| true, later + SETTLE).len(), 1);
}

/// A training of at least 1 that started again on lab-2 after losing node 0 (lab-1): the
/// parts of the first launch (lab-1's lost, lab-2's cancelled), then lab-2's new node 0.
fn started_again(first_node_0: JobState) -> (Vec<(JobPart, JobState, Option<String>)>, Losses) {
    let mut new_node_0 = part(0, JobState::Running);
    new_node_0.0.job = "part-again".into();
    new_node_0.0.node = "node-1".into();
    new_node_0.0.node_name = "lab-2".into();
    let all = vec![part(0, first_node_0), part(1, JobState::Cancelled), new_node_0];
    (all, Losses::new(Some(1)))
}

#[test]
fn the_lost_node_0_of_an_earlier_launch_joins_the_current_one_once_its_end_is_known() {
    let (all, losses) = started_again(JobState::Running);
    let current = all[2..].to_vec();
    assert!(absent(&all, &current).is_empty(), "its torchrun might still run");

    let (all, losses_after) = started_again(JobState::Lost);
    let current = all[2..].to_vec();
    let absent_now = absent(&all, &current);
    assert_eq!(
        absent_now.iter().map(|p| p.job.as_str()).collect::<Vec<_>>(),
        ["part-0"],
        "lab-2 is in the current launch"
    );
    let now = Instant::now();
    let mut returns = Returns::default();
    assert!(returns
        .absent_due(&all, &current, &losses_after, |_| false, now)
        .is_empty());
    let due = returns.absent_due(&all, &current, &losses_after, |n| n == "node-0", now);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].node_name, "lab-1");

    // Not without elasticity, while the new node 0 does not run, once the training ends, or
    // while the machine rests after a failed try.
    assert!(returns
        .absent_due(&all, &current, &Losses::new(None), |_| true, now)
        .is_empty());
    let mut stopped = current.clone();
    stopped[0].1 = JobState::Succeeded;
    assert!(returns
        .absent_due(&all, &stopped, &losses, |_| true, now)
        .is_empty());
    returns.failed("node-0", now);
    assert!(returns
        .absent_due(&all, &current, &losses, |_| true, now)
        .is_empty());
    let later = now + RETRY_AFTER;
    assert_eq!(
        returns.absent_due(&all, &current, &losses, |_| true, later).len(),
        1
    );

    // Once it joined, it has a part in the current launch: nothing is absent.
    let mut joined = part(1, JobState::Running);
    joined.0.job = "part-joined".into();
    joined.0.node = "node-0".into();
    let (mut all, _) = started_again(JobState::Lost);
    all.push(joined.clone());
    assert!(absent(&all, &[all[2].clone(), joined]).is_empty());
}
