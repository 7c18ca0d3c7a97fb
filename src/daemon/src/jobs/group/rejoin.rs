// SPDX-License-Identifier: GPL-3.0-or-later
//! A machine an elastic training went on without can come back: once its owner resumes
//! sharing (or it is back online and told the old part's end), the coordinator sends it a
//! new attempt of its part. That torchrun joins the c10d rendezvous as a waiting node; the
//! running agents see it, restart their workers in a new round that includes it (a change of
//! membership costs none of `--max-restarts`), and every worker resumes from the newest
//! checkpoint (`partagpu.checkpoint.load`).
//!
//! It is not sent back at once. The rendezvous names a node by address, process id and a
//! counter, and every torchrun runs as the same process id in its sandbox's PID namespace,
//! so the returning torchrun has the very name of the one that left. While the rendezvous
//! still lists the departed node (until its heartbeats are [`RENDEZVOUS_FORGETS`] old), the
//! newcomer is taken for it and the round falls apart; after that it is a new node.
//!
//! The workspace of an elastic training is kept beside the group's record for that, and
//! removed when the training ends.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use partagpu_core::job::record::JobPart;
use partagpu_core::job::state::JobState;
use partagpu_core::policy::SharingState;

use super::super::manager::{JobEntry, JobError, JobManager};
use super::super::spool::append_log;
use super::elastic::Losses;
use super::plan::ELASTIC_RESTARTS;
use super::{candidates, submit_part};
use crate::peer::PeerContext;

/// The elastic training's workspace, in the group's directory.
pub const WORKSPACE: &str = "workspace.rejoin";
/// The checkpoint the current launch started from (its parts' `resume_checkpoint`), in the
/// group's directory.
pub const CHECKPOINT: &str = "checkpoint.rejoin";
/// How long after a failed try the same machine is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long torch's c10d rendezvous keeps a node that stopped its heartbeats: 3 missed
/// keep-alives of 5 s (its defaults, which the plan does not change).
const RENDEZVOUS_FORGETS: Duration = Duration::from_secs(15);
/// How long after its part was seen departed a machine may be sent it again: the time the
/// rendezvous takes to forget it, with room for a heartbeat or two.
const SETTLE: Duration = Duration::from_secs(RENDEZVOUS_FORGETS.as_secs() * 2);

/// The returns so far, when each departed part was first seen ended, and the machines that
/// could not be sent their part lately.
#[derive(Debug, Default)]
pub struct Returns {
    made: u32,
    departed: BTreeMap<String, Instant>,
    failed: BTreeMap<String, Instant>,
}

impl Returns {
    /// Departed parts whose machine `is_back` (online and sharing, not paused): those to send
    /// again. None while node rank 0 is not running (it hosts the rendezvous), once a part
    /// has succeeded (the training is ending: node 0's agent, and its rendezvous, stop next;
    /// a part sent then waits 60 s for a store that is gone and fails the training, which a
    /// CI run saw), once [`ELASTIC_RESTARTS`] returns were made (each departure before them
    /// used a restart), for a departed part whose end is not known yet (its torchrun might
    /// still run) or was seen less than [`SETTLE`] ago, and for a machine that already runs
    /// a newer part of the training.
    pub fn due(
        &mut self,
        states: &[(JobPart, JobState, Option<String>)],
        losses: &Losses,
        is_back: impl Fn(&str) -> bool,
        now: Instant,
    ) -> Vec<JobPart> {
        let host_runs = states
            .iter()
            .any(|(p, s, _)| p.node_rank == 0 && *s == JobState::Running && !losses.is_lost(&p.job));
        let ending = states.iter().any(|(_, s, _)| *s == JobState::Succeeded);
        if !losses.elastic() || !host_runs || ending || self.made >= ELASTIC_RESTARTS {
            return Vec::new();
        }
        let mut due: Vec<JobPart> = Vec::new();
        for (part, state, _) in states {
            let departed = losses.is_lost(&part.job) && state.is_terminal();
            let settled = departed
                && now.duration_since(*self.departed.entry(part.job.clone()).or_insert(now)) >= SETTLE;
            let present = states
                .iter()
                .any(|(p, s, _)| p.node == part.node && !losses.is_lost(&p.job) && !s.is_terminal());
            let resting = self
                .failed
                .get(&part.node)
                .is_some_and(|at| now.duration_since(*at) < RETRY_AFTER);
            let chosen = due.iter().any(|p| p.node == part.node);
            if settled && !present && !resting && !chosen && is_back(&part.node) {
                due.push(part.clone());
            }
        }
        due.truncate((ELASTIC_RESTARTS - self.made) as usize);
        due
    }

    /// A part was sent to its machine again.
    pub fn made(&mut self, node: &str) {
        self.made += 1;
        self.failed.remove(node);
    }

    /// Sending it failed; the machine rests before the next try.
    pub fn failed(&mut self, node: &str, now: Instant) {
        self.failed.insert(node.to_owned(), now);
    }
}

/// Sends the due parts again (see [`Returns::due`]), each as a new attempt of the last part
/// its machine ran, and says so in the training's log.
pub async fn bring_back(
    jobs: &JobManager,
    peer: &Arc<PeerContext>,
    group: &JobEntry,
    dir: &Path,
    states: &[(JobPart, JobState, Option<String>)],
    losses: &Losses,
    returns: &mut Returns,
) {
    let (present, _) = candidates(jobs, peer);
    let is_back = |node: &str| {
        present
            .iter()
            .any(|c| c.node_id == node && c.state.sharing == SharingState::Sharing)
    };
    for old in returns.due(states, losses, is_back, Instant::now()) {
        let Some(machine) = present.iter().find(|c| c.node_id == old.node) else {
            continue;
        };
        let line = match send_again(jobs, peer, group, dir, &old, machine).await {
            Ok(part) => {
                returns.made(&old.node);
                jobs.shared.commit(group, |r| r.parts.push(part));
                format!(
                    "[partagpu] {} (node {}) is back: it rejoins the training at its next restart\n",
                    old.node_name, old.node_rank
                )
            }
            Err(error) => {
                returns.failed(&old.node, Instant::now());
                format!(
                    "[partagpu] {} (node {}) is back but could not rejoin: {error}; trying again in {} s\n",
                    old.node_name,
                    old.node_rank,
                    RETRY_AFTER.as_secs()
                )
            }
        };
        tracing::info!(group = group.handle(), "{}", line.trim_end());
        let _ = append_log(dir, line.as_bytes());
    }
}

/// A new attempt of the newest part `old`'s machine ran in this training, sent to it.
async fn send_again(
    jobs: &JobManager,
    peer: &Arc<PeerContext>,
    group: &JobEntry,
    dir: &Path,
    old: &JobPart,
    machine: &super::plan::Candidate,
) -> Result<JobPart, JobError> {
    let shared = &jobs.shared;
    let group_record = group.record();
    let newest = group_record
        .parts
        .iter()
        .filter(|p| p.node == old.node)
        .filter_map(|p| shared.find(&p.job).ok().map(|e| e.record()))
        .max_by_key(|r| r.attempt)
        .ok_or_else(|| JobError::Storage("the part's record is gone".into()))?;
    let mut spec = shared
        .store_of(&newest)
        .spec(&newest.job)
        .ok_or_else(|| JobError::Storage("the part's spec is gone".into()))?;
    spec.attempt = newest.attempt + 1;
    let workspace = fs::read(dir.join(WORKSPACE))
        .map_err(|e| JobError::Storage(format!("the training's workspace was not kept ({e})")))?;
    let uid = group_record.uid.unwrap_or(0);
    let checkpoint = dir.join(CHECKPOINT);
    let upload = (
        workspace,
        spec.resume_checkpoint.as_ref().map(|_| checkpoint.as_path()),
    );
    let record = submit_part(jobs, peer, spec, upload, machine, uid).await?;
    Ok(JobPart {
        job: record.job,
        node: old.node.clone(),
        node_name: machine.name.clone(),
        node_rank: old.node_rank,
        processes: old.processes,
        state: record.state,
    })
}

#[cfg(test)]
mod tests;
