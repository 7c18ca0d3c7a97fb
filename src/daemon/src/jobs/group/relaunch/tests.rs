// SPDX-License-Identifier: GPL-3.0-or-later
use super::super::elastic::test_part as part;
use super::*;

#[test]
fn losing_node_0_retires_the_launch_and_stops_the_parts_still_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut launches = Launches::load(dir.path());
    let states = vec![
        part(0, JobState::Running),
        part(1, JobState::Running),
        part(2, JobState::Failed),
        part(3, JobState::Running),
    ];
    assert!(!launches.pending() && launches.current(&states).len() == 4);
    let running = launches
        .begin("lab-1 (node 0) vanished", &states, dir.path())
        .unwrap();
    assert_eq!(running, ["part-0", "part-1", "part-3"]);
    assert!(launches.pending() && launches.current(&states).is_empty());
    assert_eq!(
        launches.interrupted(&states),
        None,
        "the next launch is being prepared"
    );
    let survivors: Vec<u32> = launches
        .pending
        .as_ref()
        .unwrap()
        .survivors
        .iter()
        .map(|p| p.node_rank)
        .collect();
    assert_eq!(
        survivors,
        [1, 3],
        "the part that had ended does not take the training again"
    );

    let now = Instant::now();
    assert!(
        !launches.ready(&states, now),
        "the stopped parts have not ended yet"
    );
    let mut stopped = states.clone();
    stopped[1].1 = JobState::Cancelled;
    assert!(!launches.ready(&stopped, now));
    stopped[3].1 = JobState::Cancelled;
    assert!(launches.ready(&stopped, now));
    assert!(
        launches.ready(&states, now + STOP_WAIT),
        "a part that does not stop is not waited for"
    );
}

#[test]
fn retired_parts_are_remembered_across_a_restart_and_relaunches_are_few() {
    let dir = tempfile::tempdir().unwrap();
    let mut launches = Launches::load(dir.path());
    launches
        .begin(
            "lab-1 (node 0) vanished",
            &[part(0, JobState::Running)],
            dir.path(),
        )
        .unwrap();
    launches.made = MAX_RELAUNCHES;
    launches.save(dir.path());
    let mut again = Launches::load(dir.path());
    assert!(again.is_retired("part-0") && !again.is_retired("part-1"));
    assert!(!again.pending(), "a launch being prepared is not written");
    let why = again.interrupted(&[part(0, JobState::Running)]).unwrap();
    assert!(
        why.contains("restarted while the training was starting again"),
        "{why}"
    );
    assert_eq!(
        again.interrupted(&[part(0, JobState::Lost), part(1, JobState::Running)]),
        None
    );
    let why = again
        .begin(
            "lab-2 (node 0) vanished",
            &[part(1, JobState::Running)],
            dir.path(),
        )
        .unwrap_err();
    assert_eq!(
        why,
        "lab-2 (node 0) vanished; the training already started again 3 times"
    );
}
