// SPDX-License-Identifier: GPL-3.0-or-later
//! An elastic training whose node rank 0 is lost starts again on the machines that remain.
//!
//! Node 0 hosts the c10d rendezvous store, so no agent can go on without it: the others'
//! agents would only time out. The coordinator stops their parts, waits for them to end, and
//! sends each of those machines a new part: a new launch of the training on them (the first
//! of them by node rank is node 0 now, on a new rendezvous port), with the workspace it was
//! given and, at its top, the newest checkpoint the coordinator holds (shipping.rs), so
//! `partagpu.checkpoint.load()` gives every rank that state.
//!
//! The parts of the launches before are *retired*: kept in the record (their ends are the
//! training's history) and left out of every decision. Which ones they are is written beside
//! the group's record, so a restart of this service does not take them for failures.

use std::collections::BTreeSet;
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use partagpu_core::job::checkpoint::{CheckpointIndex, INDEX_FILE};
use partagpu_core::job::record::JobPart;
use partagpu_core::job::spec::NetworkMode;
use partagpu_core::job::state::ArtifactInfo;
use partagpu_core::job::state::JobState;
use partagpu_core::job::workspace::with_files;
use partagpu_core::policy::SharingState;
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::super::inbox;
use super::super::manager::{JobEntry, JobManager, Shared};
use super::super::spool::append_log;
use super::{candidates, plan, rejoin, shipping, submit_part};
use crate::peer::PeerContext;

/// How many times a training starts again (each loses the work since its last checkpoint).
pub const MAX_RELAUNCHES: u32 = 3;
/// The retired parts, in the group's directory.
const RETIRED: &str = "parts.retired";
/// How long the stopped parts may take to end before the new launch goes without them.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// Part states as the coordinator sees them.
type States = [(JobPart, JobState, Option<String>)];

/// The launches of a training so far, and the one being prepared.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Launches {
    /// Parts of earlier launches (job handles).
    retired: BTreeSet<String>,
    /// How many times the training started again.
    made: u32,
    #[serde(skip)]
    pending: Option<Pending>,
}

/// A new launch waiting for the stopped parts to end.
#[derive(Debug)]
struct Pending {
    /// The parts that remained, whose machines take the training again.
    survivors: Vec<JobPart>,
    since: Instant,
    /// What happened to node 0, for the log and for an error.
    what: String,
}

impl Launches {
    /// The launches recorded in `dir` (none yet when nothing is written).
    #[must_use]
    pub fn load(dir: &Path) -> Self {
        fs::read(dir.join(RETIRED))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Whether the part belongs to an earlier launch.
    #[must_use]
    pub fn is_retired(&self, job: &str) -> bool {
        self.retired.contains(job)
    }

    /// Whether a new launch is being prepared (the training must not end meanwhile).
    #[must_use]
    pub fn pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The states of the current launch's parts.
    #[must_use]
    pub fn current(&self, states: &States) -> Vec<(JobPart, JobState, Option<String>)> {
        states
            .iter()
            .filter(|(p, _, _)| !self.is_retired(&p.job))
            .cloned()
            .collect()
    }

    /// Why the training must end when every part is retired and no launch is being prepared:
    /// this service restarted between stopping a launch and sending the next (the launch
    /// being prepared is not written), so nothing would run again.
    #[must_use]
    pub fn interrupted(&self, states: &States) -> Option<String> {
        let all_retired = !states.is_empty() && states.iter().all(|(p, _, _)| self.is_retired(&p.job));
        (all_retired && !self.pending()).then(|| {
            "this machine's service restarted while the training was starting again without its node 0"
                .to_owned()
        })
    }

    /// Node 0 left (`what`, its part already given up on): retires the current parts and
    /// gives those still running, to be stopped; the new launch follows once they ended
    /// ([`Self::go_on`]).
    ///
    /// # Errors
    /// The reason to end instead, once the training started again [`MAX_RELAUNCHES`] times.
    pub fn begin(&mut self, what: &str, current: &States, dir: &Path) -> Result<Vec<String>, String> {
        if self.made >= MAX_RELAUNCHES {
            return Err(format!(
                "{what}; the training already started again {} times",
                self.made
            ));
        }
        let mut survivors: Vec<JobPart> = current
            .iter()
            .filter(|(p, s, _)| p.node_rank != 0 && !s.is_terminal())
            .map(|(p, _, _)| p.clone())
            .collect();
        survivors.sort_by_key(|p| p.node_rank);
        self.retired.extend(current.iter().map(|(p, _, _)| p.job.clone()));
        self.save(dir);
        let running = current
            .iter()
            .filter(|(_, s, _)| !s.is_terminal())
            .map(|(p, _, _)| p.job.clone())
            .collect();
        self.pending = Some(Pending {
            survivors,
            since: Instant::now(),
            what: what.to_owned(),
        });
        Ok(running)
    }

    /// Whether the new launch may go: the stopped parts ended, or [`STOP_WAIT`] passed.
    fn ready(&self, states: &States, now: Instant) -> bool {
        self.pending.as_ref().is_some_and(|pending| {
            now.duration_since(pending.since) >= STOP_WAIT
                || pending.survivors.iter().all(|s| {
                    states
                        .iter()
                        .any(|(p, state, _)| p.job == s.job && state.is_terminal())
                })
        })
    }

    /// Once the stopped parts ended (or [`STOP_WAIT`] passed), launches the training again on
    /// their machines and says so in its log. `Ok(false)` while it waits.
    ///
    /// # Errors
    /// The reason the training ends: too few machines left, a checkpoint too large for a
    /// workspace, or a part that could not be sent (those sent are cancelled).
    pub async fn go_on(
        &mut self,
        jobs: &JobManager,
        peer: &Arc<PeerContext>,
        group: &JobEntry,
        dir: &Path,
        states: &States,
    ) -> Result<bool, String> {
        if !self.ready(states, Instant::now()) {
            return Ok(false);
        }
        let Some(pending) = self.pending.take() else {
            return Ok(false);
        };
        let line = launch(jobs, peer, group, dir, &pending)
            .await
            .map_err(|why| format!("{}; it could not start again: {why}", pending.what))?;
        self.made += 1;
        self.save(dir);
        tracing::warn!(group = group.handle(), "{}", line.trim_end());
        let _ = append_log(dir, line.as_bytes());
        Ok(true)
    }

    fn save(&self, dir: &Path) {
        if let Err(error) = fs::write(dir.join(RETIRED), serde_json::to_vec(self).unwrap_or_default()) {
            tracing::warn!("the retired parts of a training could not be written: {error}");
        }
    }
}

/// Sends the new launch's parts to the survivors' machines that are still sharing, and the
/// line that says so.
async fn launch(
    jobs: &JobManager,
    peer: &Arc<PeerContext>,
    group: &JobEntry,
    dir: &Path,
    pending: &Pending,
) -> Result<String, String> {
    let shared = &jobs.shared;
    let mut template = shared
        .submitted
        .spec(group.handle())
        .ok_or("the training's spec is gone")?;
    let (present, _) = candidates(jobs, peer);
    let machines: Vec<plan::Candidate> = pending
        .survivors
        .iter()
        .filter_map(|p| {
            present
                .iter()
                .find(|c| c.node_id == p.node && c.state.sharing == SharingState::Sharing)
                .cloned()
        })
        .collect();
    let needed = template.min_nodes.unwrap_or(1).max(1) as usize;
    if machines.len() < needed {
        return Err(format!(
            "{} machine(s) can take it, and it needs {needed}",
            machines.len()
        ));
    }
    let started_from = template.resume_checkpoint.take();
    let (workspace, checkpoint, from) = workspace_with_checkpoint(dir, started_from)?;
    // The parts' specs name the workspace they come with (it now holds the index) and the
    // checkpoint that follows it.
    template.workspace_bytes = workspace.len() as u64;
    template.workspace_sha256 = hex::encode(Sha256::digest(&workspace));
    template.resume_checkpoint = checkpoint;
    let linked = dir.join(rejoin::CHECKPOINT);
    let checkpoint_file = template.resume_checkpoint.as_ref().map(|_| linked.as_path());
    let group_record = group.record();
    // A new attempt number for every part, so no part's name is taken already.
    template.attempt = 1 + group_record
        .parts
        .iter()
        .filter_map(|p| shared.find(&p.job).ok().map(|e| e.record().attempt))
        .max()
        .unwrap_or(template.attempt);
    let open: Vec<Vec<String>> = shared
        .all()
        .iter()
        .map(|e| e.record())
        .filter(|r| !r.state.is_terminal())
        .map(|r| r.argv)
        .collect();
    let port = plan::rendezvous_port(open.iter().map(Vec::as_slice), OsRng.next_u32());
    // The machines of the earlier launches that are not in this one (node 0 that was lost,
    // one not sharing now) may join it when they are back (rejoin.rs).
    let layout = plan::layout(&machines, port, &earlier_machines(shared, &group_record.parts));
    let uid = group_record.uid.unwrap_or(0);
    let mut sent: Vec<JobPart> = Vec::new();
    for (machine, rank) in machines.iter().zip(0..) {
        let part = plan::part(&template, &layout, machine, rank);
        let upload = (workspace.clone(), checkpoint_file);
        match submit_part(jobs, peer, part.spec.clone(), upload, &part.machine, uid).await {
            Ok(record) => sent.push(part.sent_as(&record)),
            Err(error) => {
                for job in &sent {
                    if let Ok(entry) = shared.find(&job.job) {
                        jobs.cancel(&entry, "the training, because another part could not start");
                    }
                }
                return Err(format!(
                    "{} (node {}): {error}",
                    part.machine.name, part.node_rank
                ));
            }
        }
    }
    // A machine of this launch that leaves and returns is sent this workspace, and one of an
    // earlier launch a part made as these were (rejoin.rs).
    let _ = fs::write(dir.join(rejoin::WORKSPACE), &workspace);
    rejoin::Launch { template, layout }.keep(dir);
    let names: Vec<String> = sent.iter().map(|p| p.node_name.clone()).collect();
    shared.commit(group, |r| r.parts.extend(sent));
    Ok(format!(
        "[partagpu] {}: the training starts again on {} {from}\n",
        pending.what,
        names.join(", ")
    ))
}

/// The addresses of the machines the parts of the training had so far (every part of a
/// launch names them all as its peers).
fn earlier_machines(shared: &Shared, parts: &[JobPart]) -> Vec<Ipv4Addr> {
    let mut addresses = Vec::new();
    for part in parts {
        let Ok(entry) = shared.find(&part.job) else {
            continue;
        };
        let record = entry.record();
        if let Some(NetworkMode::Peers { peers }) =
            shared.store_of(&record).spec(&record.job).map(|s| s.network)
        {
            for peer in peers {
                if !addresses.contains(&peer.address) {
                    addresses.push(peer.address);
                }
            }
        }
    }
    addresses
}

/// The training's kept workspace with the index of the newest checkpoint held here at its
/// top, that checkpoint (linked beside the group's record, where a machine that rejoins this
/// launch is sent it from: rejoin.rs), and the words for where the new launch starts. The
/// checkpoint travels after the workspace, as the parts' `resume_checkpoint`: it may be far
/// larger than a workspace may be. Before its first checkpoint, a training that was started
/// from one (`started_from`, linked there too) starts again from that one.
fn workspace_with_checkpoint(
    dir: &Path,
    started_from: Option<ArtifactInfo>,
) -> Result<(Vec<u8>, Option<ArtifactInfo>, String), String> {
    let kept =
        fs::read(dir.join(rejoin::WORKSPACE)).map_err(|e| format!("its workspace was not kept ({e})"))?;
    let linked = dir.join(rejoin::CHECKPOINT);
    let Some((shipped, path)) = shipping::held(dir) else {
        if let Some(started) = started_from.filter(|_| linked.is_file()) {
            let from = format!(
                "from the checkpoint it was started from ({})",
                shown_size(started.size)
            );
            return Ok((kept, Some(started), from));
        }
        return Ok((
            kept,
            None,
            "from the beginning (no checkpoint was kept)".to_owned(),
        ));
    };
    let _ = fs::remove_file(&linked);
    // Its own name for the launch: a newer checkpoint may replace the held one meanwhile.
    inbox::link_or_copy(&path, &linked).map_err(|e| format!("its last checkpoint cannot be read ({e})"))?;
    let index = serde_json::to_vec(&CheckpointIndex {
        step: shipped.step,
        file: shipped.artifact.name.clone(),
    })
    .unwrap_or_default();
    let workspace = with_files(&kept, &[(INDEX_FILE, &index)])
        .map_err(|e| format!("its last checkpoint cannot be named in its workspace: {e}"))?;
    let from = format!(
        "from its last checkpoint (step {}, {})",
        shipped.step,
        shown_size(shipped.artifact.size)
    );
    Ok((workspace, Some(shipped.artifact), from))
}

/// A size as the log says it: MiB from 1 MiB up, else KiB.
fn shown_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes.div_ceil(1 << 10))
    }
}

#[cfg(test)]
mod tests;
