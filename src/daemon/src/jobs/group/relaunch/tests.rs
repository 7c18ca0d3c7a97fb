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

#[test]
fn a_new_launch_names_the_held_checkpoint_in_its_workspace_and_sends_it_after() {
    use partagpu_core::job::checkpoint::{parse_index, ShippedCheckpoint};
    use partagpu_core::job::workspace::{plan_workspace, EntryKind, TarWriter};
    let dir = tempfile::tempdir().unwrap();
    let mut tar = TarWriter::new();
    tar.add_file("train.py", b"print('hi')\n", false).unwrap();
    fs::write(dir.path().join(rejoin::WORKSPACE), tar.finish()).unwrap();
    let (workspace, checkpoint, from) = workspace_with_checkpoint(dir.path(), None).unwrap();
    assert_eq!(checkpoint, None);
    assert_eq!(from, "from the beginning (no checkpoint was kept)");
    assert_eq!(workspace, fs::read(dir.path().join(rejoin::WORKSPACE)).unwrap());
    // Started from a checkpoint passed by its submitter, before any of its own.
    let passed = ArtifactInfo {
        name: "mine.pt".into(),
        size: 3 << 20,
        sha256: "ab".repeat(32),
    };
    fs::write(dir.path().join(rejoin::CHECKPOINT), b"passed").unwrap();
    let (again, checkpoint, from) = workspace_with_checkpoint(dir.path(), Some(passed.clone())).unwrap();
    assert_eq!((again, checkpoint), (workspace, Some(passed)));
    assert_eq!(from, "from the checkpoint it was started from (3 MiB)");

    // Larger than a whole workspace may be (16 MiB).
    let data = vec![7u8; 17 << 20];
    let shipped = ShippedCheckpoint {
        step: 4,
        artifact: ArtifactInfo {
            name: "partagpu-checkpoint.pt".into(),
            size: data.len() as u64,
            sha256: hex::encode(Sha256::digest(&data)),
        },
    };
    fs::write(shipping::place_of(dir.path(), &shipped).unwrap(), &data).unwrap();
    shipping::keep(dir.path(), &shipped).unwrap();
    let (workspace, checkpoint, from) = workspace_with_checkpoint(dir.path(), None).unwrap();
    assert_eq!(checkpoint.as_ref(), Some(&shipped.artifact));
    assert_eq!(from, "from its last checkpoint (step 4, 17 MiB)");
    assert_eq!(fs::read(dir.path().join(rejoin::CHECKPOINT)).unwrap(), data);
    let plan = plan_workspace(&workspace).unwrap();
    let files: Vec<&str> = plan.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(files, ["train.py", INDEX_FILE]);
    let EntryKind::File { data: range, .. } = &plan[1].kind else {
        panic!("{plan:?}")
    };
    let index = parse_index(&workspace[range.clone()]).unwrap();
    assert_eq!((index.step, index.file.as_str()), (4, "partagpu-checkpoint.pt"));
    // The link is the launch's own: a newer held copy does not change it.
    let newer = ShippedCheckpoint {
        step: 5,
        ..shipped.clone()
    };
    fs::write(shipping::place_of(dir.path(), &newer).unwrap(), b"newer").unwrap();
    shipping::keep(dir.path(), &newer).unwrap();
    assert_eq!(
        fs::read(dir.path().join(rejoin::CHECKPOINT)).unwrap().len(),
        data.len()
    );
}
