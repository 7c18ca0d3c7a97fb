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
//! A machine of an earlier launch that has no part in the current one (node 0 that was lost
//! when the training started again without it, or a machine that was not sharing then) is
//! sent a part of the current launch when it is back: that launch admitted its address
//! ([`plan::layout`]) and its rendezvous takes one node more than it started with. The
//! launch is kept for that ([`Launch`]).
//!
//! The workspace of an elastic training is kept beside the group's record for that, and
//! removed when the training ends.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use partagpu_core::job::record::JobPart;
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::JobState;
use partagpu_core::policy::SharingState;
use serde::{Deserialize, Serialize};

use super::super::manager::{JobEntry, JobError, JobManager};
use super::super::spool::append_log;
use super::elastic::Losses;
use super::plan::{self, Candidate, ELASTIC_RESTARTS};
use super::{candidates, submit_part};
use crate::peer::PeerContext;

/// The elastic training's workspace, in the group's directory.
pub const WORKSPACE: &str = "workspace.rejoin";
/// The checkpoint the current launch started from (its parts' `resume_checkpoint`), in the
/// group's directory.
pub const CHECKPOINT: &str = "checkpoint.rejoin";
/// The current launch after the training started again ([`Launch`]), in the group's directory.
pub const LAUNCH: &str = "launch.rejoin";
/// How long after a failed try the same machine is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long torch's c10d rendezvous keeps a node that stopped its heartbeats: 3 missed
/// keep-alives of 5 s (its defaults, which the plan does not change).
const RENDEZVOUS_FORGETS: Duration = Duration::from_secs(15);
/// How long after its part was seen departed a machine may be sent it again: the time the
/// rendezvous takes to forget it, with room for a heartbeat or two.
const SETTLE: Duration = Duration::from_secs(RENDEZVOUS_FORGETS.as_secs() * 2);

/// Part states as the coordinator sees them.
type States = [(JobPart, JobState, Option<String>)];

/// What the parts of the current launch were made from, when it is not the first: a machine
/// that joins it is sent a part made the same way.
#[derive(Debug, Serialize, Deserialize)]
pub struct Launch {
    /// The spec its parts were made from (workspace, checkpoint, attempt).
    pub template: JobSpec,
    /// Its rendezvous and the machines it admits.
    pub layout: plan::Layout,
}

impl Launch {
    /// Keeps it beside the group's record.
    pub fn keep(&self, dir: &Path) {
        let written = serde_json::to_vec(self)
            .map_err(|e| e.to_string())
            .and_then(|bytes| fs::write(dir.join(LAUNCH), bytes).map_err(|e| e.to_string()));
        if let Err(error) = written {
            tracing::warn!("the new launch of a training could not be kept: {error}");
        }
    }

    fn load(dir: &Path) -> Result<Self, JobError> {
        let bytes = fs::read(dir.join(LAUNCH))
            .map_err(|e| JobError::Storage(format!("the training's new launch was not kept ({e})")))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| JobError::Storage(format!("the training's new launch cannot be read ({e})")))
    }
}

/// The machines of an earlier launch with no part in the current one, each by its newest
/// part, once that part's end is known (before, its torchrun might still run).
#[must_use]
pub fn absent(all: &States, current: &States) -> Vec<JobPart> {
    let mut newest: BTreeMap<&str, &(JobPart, JobState, Option<String>)> = BTreeMap::new();
    for state in all {
        newest.insert(state.0.node.as_str(), state);
    }
    newest
        .into_values()
        .filter(|(part, state, _)| {
            state.is_terminal() && !current.iter().any(|(p, _, _)| p.node == part.node)
        })
        .map(|(part, _, _)| part.clone())
        .collect()
}

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
    /// again. None unless the training is open to returns (`open`), for a departed part whose
    /// end is not known yet (its torchrun might still run) or was seen less than [`SETTLE`]
    /// ago, and for a machine that already runs a newer part of the training.
    pub fn due(
        &mut self,
        states: &[(JobPart, JobState, Option<String>)],
        losses: &Losses,
        is_back: impl Fn(&str) -> bool,
        now: Instant,
    ) -> Vec<JobPart> {
        if !self.open(states, losses) {
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
            let resting = self.resting(&part.node, now);
            let chosen = due.iter().any(|p| p.node == part.node);
            if settled && !present && !resting && !chosen && is_back(&part.node) {
                due.push(part.clone());
            }
        }
        due.truncate((ELASTIC_RESTARTS - self.made) as usize);
        due
    }

    /// Machines of an earlier launch that [`absent`] names and that `is_back`: those to send a
    /// part of the current launch (`current`), under the same conditions as [`Self::due`].
    pub fn absent_due(
        &mut self,
        all: &States,
        current: &States,
        losses: &Losses,
        is_back: impl Fn(&str) -> bool,
        now: Instant,
    ) -> Vec<JobPart> {
        if !self.open(current, losses) {
            return Vec::new();
        }
        let mut due: Vec<JobPart> = absent(all, current)
            .into_iter()
            .filter(|part| !self.resting(&part.node, now) && is_back(&part.node))
            .collect();
        due.truncate((ELASTIC_RESTARTS - self.made) as usize);
        due
    }

    /// Whether a machine may join the training now: it is elastic, node rank 0 (which hosts
    /// the rendezvous) runs, no part has succeeded (the training is ending: node 0's agent,
    /// and its rendezvous, stop next; a part sent then waits 60 s for a store that is gone
    /// and fails the training, which a CI run saw), and fewer than [`ELASTIC_RESTARTS`]
    /// returns were made (each departure before them used a restart).
    fn open(&self, states: &States, losses: &Losses) -> bool {
        let host_runs = states
            .iter()
            .any(|(p, s, _)| p.node_rank == 0 && *s == JobState::Running && !losses.is_lost(&p.job));
        let ending = states.iter().any(|(_, s, _)| *s == JobState::Succeeded);
        losses.elastic() && host_runs && !ending && self.made < ELASTIC_RESTARTS
    }

    /// Whether sending a part to the machine failed less than [`RETRY_AFTER`] ago.
    fn resting(&self, node: &str, now: Instant) -> bool {
        self.failed
            .get(node)
            .is_some_and(|at| now.duration_since(*at) < RETRY_AFTER)
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
/// its machine ran, and a part of the current launch to each machine of an earlier one that
/// is back ([`Returns::absent_due`]), and says so in the training's log. `all` are every
/// part's states, `current` the current launch's.
pub async fn bring_back(
    jobs: &JobManager,
    peer: &Arc<PeerContext>,
    group: &JobEntry,
    dir: &Path,
    (all, current): (&States, &States),
    losses: &Losses,
    returns: &mut Returns,
) {
    let (present, _) = candidates(jobs, peer);
    let is_back = |node: &str| {
        present
            .iter()
            .any(|c| c.node_id == node && c.state.sharing == SharingState::Sharing)
    };
    // Only a launch that admitted its address can take a machine of an earlier one (one that
    // came back at another address would be kept out by the parts' firewalls). It is read
    // once such a machine is back, not at every look while it is away.
    let launch: OnceCell<Option<Launch>> = OnceCell::new();
    let admitted = |node: &str| {
        is_back(node)
            && launch
                .get_or_init(|| Launch::load(dir).ok())
                .as_ref()
                .is_some_and(|launch| {
                    present
                        .iter()
                        .any(|c| c.node_id == node && plan::admits(&launch.layout, c.address))
                })
    };
    let now = Instant::now();
    let mut due: Vec<(JobPart, Option<&Launch>)> = returns
        .due(current, losses, is_back, now)
        .into_iter()
        .map(|part| (part, None))
        .collect();
    let absent = returns.absent_due(all, current, losses, admitted, now);
    // Those were admitted, so the launch was read.
    let joined = launch.get().and_then(Option::as_ref);
    due.extend(absent.into_iter().filter_map(|part| Some((part, Some(joined?)))));
    due.truncate(ELASTIC_RESTARTS.saturating_sub(returns.made) as usize);
    for (old, joins) in due {
        let Some(machine) = present.iter().find(|c| c.node_id == old.node) else {
            continue;
        };
        let part = match joins {
            Some(launch) => Ok(joining(launch, current, machine)),
            None => again(jobs, group, &old, machine),
        };
        let sent = match part {
            Ok(part) => send(jobs, peer, group, dir, &part).await,
            Err(error) => Err(error),
        };
        let line = match sent {
            Ok(part) => {
                returns.made(&old.node);
                let line = format!(
                    "[partagpu] {} (node {}) is back: it rejoins the training at its next restart\n",
                    part.node_name, part.node_rank
                );
                jobs.shared.commit(group, |r| r.parts.push(part));
                line
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

/// A new attempt of the newest part `old`'s machine ran in this training.
fn again(
    jobs: &JobManager,
    group: &JobEntry,
    old: &JobPart,
    machine: &Candidate,
) -> Result<plan::Part, JobError> {
    let shared = &jobs.shared;
    let newest = group
        .record()
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
    Ok(plan::Part {
        machine: machine.clone(),
        node_rank: old.node_rank,
        processes: old.processes,
        spec,
    })
}

/// A part of the current `launch` for a machine that has none in it, as the node rank after
/// the current parts' (its agent joins the rendezvous as a waiting node all the same).
fn joining(launch: &Launch, current: &States, machine: &Candidate) -> plan::Part {
    let rank = current.iter().map(|(p, _, _)| p.node_rank + 1).max().unwrap_or(0);
    plan::part(&launch.template, &launch.layout, machine, rank)
}

/// Sends `part` with the training's kept workspace (and the checkpoint its launch started
/// from, when its spec names one).
async fn send(
    jobs: &JobManager,
    peer: &Arc<PeerContext>,
    group: &JobEntry,
    dir: &Path,
    part: &plan::Part,
) -> Result<JobPart, JobError> {
    let workspace = fs::read(dir.join(WORKSPACE))
        .map_err(|e| JobError::Storage(format!("the training's workspace was not kept ({e})")))?;
    let uid = group.record().uid.unwrap_or(0);
    let checkpoint = dir.join(CHECKPOINT);
    let upload = (
        workspace,
        part.spec.resume_checkpoint.as_ref().map(|_| checkpoint.as_path()),
    );
    let record = submit_part(jobs, peer, part.spec.clone(), upload, &part.machine, uid).await?;
    Ok(part.sent_as(&record))
}

#[cfg(test)]
mod tests;
