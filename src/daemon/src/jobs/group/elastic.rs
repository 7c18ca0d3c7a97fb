// SPDX-License-Identifier: GPL-3.0-or-later
//! What an elastic training (`min_nodes`) does when a machine is lost: it goes on without the
//! part while at least `min_nodes` remain. For any node but rank 0, torchrun's agents on the
//! others restart their workers, which resume from their checkpoint; here the coordinator
//! only has to not end the training, say so in its log, and mark the part lost at the end.
//! Node rank 0 hosts the rendezvous store, so its loss stops every agent: the training then
//! starts again on the others (relaunch.rs).

use std::collections::BTreeSet;

use partagpu_core::job::record::JobPart;
use partagpu_core::job::state::JobState;

/// The parts given up on so far.
#[derive(Debug)]
pub struct Losses {
    min_nodes: Option<u32>,
    lost: BTreeSet<String>,
}

/// How a part left the training before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departure {
    /// Its machine went offline while it ran.
    Vanished,
    /// Its owner's pause outlasted the grace period.
    Preempted,
}

/// What became of a part that left.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The training goes on; the line to write in its log.
    GoesOn(String),
    /// Node rank 0 left: the others are enough, but only a new launch without it can go on
    /// (relaunch.rs). What happened, for the log.
    StartsAgain(String),
    /// The training ends; why.
    Ends(String),
}

impl Losses {
    /// For a training of `min_nodes` (None: not elastic).
    #[must_use]
    pub fn new(min_nodes: Option<u32>) -> Self {
        Self {
            min_nodes,
            lost: BTreeSet::new(),
        }
    }

    /// Whether the training is elastic.
    #[must_use]
    pub fn elastic(&self) -> bool {
        self.min_nodes.is_some()
    }

    /// Whether the part (by its job handle) was given up on.
    #[must_use]
    pub fn is_lost(&self, job: &str) -> bool {
        self.lost.contains(job)
    }

    /// The machine whose link the coordinator watches (fleet/watched.rs): node 0's, when the
    /// training is elastic and node 0 runs elsewhere. Only that loss waits on the coordinator
    /// to go on (a new launch without it). The others' agents go on by themselves without
    /// any other lost machine, and a training that is not elastic ends on any loss: a
    /// quicker verdict there would only make a short network outage fatal.
    #[must_use]
    pub fn watched(&self, current: &[(JobPart, JobState, Option<String>)], own: &str) -> Option<String> {
        current
            .iter()
            .find(|(part, state, _)| {
                self.elastic()
                    && part.node_rank == 0
                    && part.node != own
                    && !state.is_terminal()
                    && !self.is_lost(&part.job)
            })
            .map(|(part, _, _)| part.node.clone())
    }

    /// `part` left the training (`how`); `states` are all the parts'.
    pub fn left(
        &mut self,
        part: &JobPart,
        states: &[(JobPart, JobState, Option<String>)],
        how: Departure,
    ) -> Verdict {
        let (what, why) = match how {
            Departure::Vanished => ("vanished", "the machine went offline"),
            Departure::Preempted => ("was preempted", "its owner's pause outlasted the grace period"),
        };
        let what = format!("{} (node {}) {what}", part.node_name, part.node_rank);
        let Some(min) = self.min_nodes else {
            return Verdict::Ends(format!("{what}: {why}"));
        };
        let remaining = states
            .iter()
            .filter(|(p, s, _)| p.job != part.job && !self.is_lost(&p.job) && !s.is_terminal())
            .count();
        if remaining < min as usize {
            return Verdict::Ends(format!(
                "{what}: {why}, and {remaining} machine(s) are left of the {min} the training needs"
            ));
        }
        self.lost.insert(part.job.clone());
        if part.node_rank == 0 {
            return Verdict::StartsAgain(format!("{what}: {why}, and it held the training's rendezvous"));
        }
        Verdict::GoesOn(format!(
            "[partagpu] {what}: {why}; the training goes on with {remaining} machine(s) from its last checkpoint\n"
        ))
    }

    /// `states` with the lost parts marked lost (their machine cannot report an end).
    pub fn mark(&self, states: &mut [(JobPart, JobState, Option<String>)]) {
        for (part, state, why) in states.iter_mut() {
            if self.is_lost(&part.job) && !state.is_terminal() {
                *state = JobState::Lost;
                *why = Some("its machine went offline during the training".to_owned());
            }
        }
    }
}

/// Part `rank` of a test training, on machine `lab-{rank + 1}`, in `state`.
#[cfg(test)]
pub(super) fn test_part(rank: u32, state: JobState) -> (JobPart, JobState, Option<String>) {
    let part = JobPart {
        job: format!("part-{rank}"),
        node: format!("node-{rank}"),
        node_name: format!("lab-{}", rank + 1),
        node_rank: rank,
        processes: 1,
        state,
    };
    (part, state, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(rank: u32) -> (JobPart, JobState, Option<String>) {
        test_part(rank, JobState::Running)
    }

    #[test]
    fn a_training_that_is_not_elastic_ends_with_the_first_loss() {
        let states = vec![part(0), part(1), part(2)];
        let verdict = Losses::new(None).left(&states[2].0, &states, Departure::Vanished);
        assert_eq!(
            verdict,
            Verdict::Ends("lab-3 (node 2) vanished: the machine went offline".into())
        );
    }

    #[test]
    fn an_elastic_one_goes_on_down_to_its_minimum_then_ends() {
        let mut states = vec![part(0), part(1), part(2)];
        let mut losses = Losses::new(Some(1));
        let Verdict::GoesOn(line) = losses.left(&states[2].0, &states, Departure::Vanished) else {
            panic!("a 3-machine training of at least 1 should go on");
        };
        assert!(line.contains("lab-3 (node 2) vanished") && line.contains("goes on with 2 machine(s)"));
        assert!(losses.is_lost("part-2"));
        let Verdict::GoesOn(_) = losses.left(&states[1].0, &states, Departure::Vanished) else {
            panic!("one machine is still enough");
        };
        losses.mark(&mut states);
        assert_eq!(states[1].1, JobState::Lost);
        assert_eq!(states[0].1, JobState::Running);

        let states = vec![part(0), part(1), part(2)];
        let mut strict = Losses::new(Some(2));
        assert!(matches!(
            strict.left(&states[2].0, &states, Departure::Vanished),
            Verdict::GoesOn(_)
        ));
        let Verdict::Ends(why) = strict.left(&states[1].0, &states, Departure::Vanished) else {
            panic!("below the minimum the training ends");
        };
        assert!(why.contains("1 machine(s) are left of the 2"), "{why}");
    }

    #[test]
    fn a_preempted_part_is_left_behind_like_a_lost_one() {
        let mut states = vec![part(0), part(1), part(2)];
        states[1].1 = JobState::Preempted;
        let mut losses = Losses::new(Some(2));
        let Verdict::GoesOn(line) = losses.left(&states[1].0, &states, Departure::Preempted) else {
            panic!("two machines remain");
        };
        assert!(line.contains("lab-2 (node 1) was preempted: its owner's pause outlasted the grace period"));
        losses.mark(&mut states);
        assert_eq!(states[1].1, JobState::Preempted, "a terminal state is kept");
        let not_elastic = Losses::new(None).left(&states[1].0, &states, Departure::Preempted);
        assert!(matches!(not_elastic, Verdict::Ends(_)));
    }

    #[test]
    fn losing_rank_zero_starts_an_elastic_training_again_while_enough_remain() {
        let states = vec![part(0), part(1), part(2)];
        let mut losses = Losses::new(Some(2));
        let Verdict::StartsAgain(what) = losses.left(&states[0].0, &states, Departure::Vanished) else {
            panic!("rank 0 holds the store: only a new launch goes on");
        };
        assert_eq!(
            what,
            "lab-1 (node 0) vanished: the machine went offline, and it held the training's rendezvous"
        );
        assert!(losses.is_lost("part-0"));

        let two = vec![part(0), part(1)];
        let Verdict::Ends(why) = Losses::new(Some(2)).left(&two[0].0, &two, Departure::Vanished) else {
            panic!("one machine is left of the two needed");
        };
        assert!(why.contains("1 machine(s) are left of the 2"), "{why}");
        let not_elastic = Losses::new(None).left(&two[0].0, &two, Departure::Vanished);
        assert!(matches!(not_elastic, Verdict::Ends(_)));
    }

    #[test]
    fn only_node_0_of_an_elastic_training_running_elsewhere_is_watched() {
        let states = vec![part(0), part(1), part(2)];
        assert_eq!(Losses::new(None).watched(&states, "here"), None, "not elastic");
        let elastic = Losses::new(Some(2));
        assert_eq!(elastic.watched(&states, "here").as_deref(), Some("node-0"));
        assert_eq!(elastic.watched(&states, "node-0"), None, "node 0 runs here");
        let ended = vec![test_part(0, JobState::Succeeded), part(1)];
        assert_eq!(elastic.watched(&ended, "here"), None, "its part ended");
    }
}
