// SPDX-License-Identifier: GPL-3.0-or-later
//! A distributed training coordinated from this machine (the submitter's): its parts are
//! ordinary jobs, one per machine, each running torchrun in its sandbox with the network
//! limited to the training's machines. The group job merges their output with
//! `[machine/rank]` prefixes, follows their states, stops them all when one fails or on
//! request, and brings back rank 0's artifacts.

mod coordinator;
pub mod elastic;
mod ending;
pub mod plan;
mod rejoin;
mod relaunch;
mod shipping;

pub use coordinator::coordinate;

use std::fs;
use std::sync::Arc;
use std::time::Duration;

use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::JobState;
use rand_core::{OsRng, RngCore};
use sha2::Digest;

use super::inbox;
use super::manager::{now_ms, JobEntry, JobError, JobManager, Origin, MAX_OPEN_PER_SUBMITTER};
use super::remote::{self, Target};
use crate::peer::PeerContext;
use plan::{Candidate, Part};

/// How often the parts are looked at.
pub(super) const TICK: Duration = Duration::from_millis(100);

/// This machine and the members, as candidates for a training; and a sentence for each
/// member that cannot be one now (offline, or not heard from yet), so a refusal can say why.
fn candidates(jobs: &JobManager, peer: &PeerContext) -> (Vec<Candidate>, Vec<String>) {
    let mut found = Vec::new();
    let mut absent = Vec::new();
    let local = peer.fleet.local();
    let own_address = peer
        .fleet
        .surroundings()
        .interfaces
        .first()
        .and_then(|(_, cidr)| cidr.split('/').next().and_then(|a| a.parse().ok()));
    if let (Some(address), None) = (own_address, jobs.shared.exec.unavailable()) {
        found.push(Candidate {
            node_id: jobs.shared.node_id.clone(),
            name: local.name.clone(),
            address,
            local: true,
            state: (*local).clone(),
        });
    }
    for member in peer.fleet.members() {
        let name = member
            .state
            .as_ref()
            .map_or_else(|| member.node_id[..8].to_owned(), |s| s.name.clone());
        let (Some(state), Some(std::net::SocketAddr::V4(address)), true) =
            (member.state, member.address, member.online)
        else {
            absent.push(if member.online {
                format!("{name} has not told its state yet")
            } else {
                format!("{name} is offline")
            });
            continue;
        };
        found.push(Candidate {
            node_id: member.node_id,
            name: state.name.clone(),
            address: *address.ip(),
            local: false,
            state,
        });
    }
    (found, absent)
}

/// Who a training is coordinated for.
struct GroupOwner {
    /// The group's submitter: this machine, or the member that asked.
    submitter: String,
    submitter_name: String,
    /// The local user who may read the group over the bus (none for a member's).
    record_uid: Option<u32>,
    /// The uid its parts are submitted under: this machine sends them, a member's training
    /// as root.
    parts_uid: u32,
}

/// The owner of a training asked by `origin`; `open` are the jobs known here that have not
/// ended (a member coordinates at most [`MAX_OPEN_PER_SUBMITTER`] trainings here at once).
fn group_owner(
    jobs: &JobManager,
    template: &JobSpec,
    origin: &Origin,
    open: &[JobRecord],
) -> Result<GroupOwner, JobError> {
    let shared = &jobs.shared;
    match origin {
        Origin::Local { uid } => Ok(GroupOwner {
            submitter: shared.node_id.clone(),
            submitter_name: shared.sharing.policy().display_name,
            record_uid: Some(*uid),
            parts_uid: *uid,
        }),
        Origin::Peer { node_id, name } => {
            if template.submitter != *node_id {
                return Err(JobError::Invalid(
                    "the training's submitter is not the machine that sent it".into(),
                ));
            }
            let theirs = open
                .iter()
                .filter(|r| r.role == JobRole::Group && r.submitter == *node_id)
                .count();
            if theirs >= MAX_OPEN_PER_SUBMITTER {
                return Err(JobError::Refused(format!(
                    "{} already coordinates {theirs} trainings of yours; wait for one to end",
                    shared.sharing.policy().display_name
                )));
            }
            Ok(GroupOwner {
                submitter: node_id.clone(),
                submitter_name: name.clone(),
                record_uid: None,
                parts_uid: 0,
            })
        }
    }
}

/// Plans, submits every part (rank 0 first) and starts the coordinator, for a local user or
/// for a member without a service of its own. If a part cannot be submitted, the parts
/// already sent are cancelled and the machine is named.
///
/// # Errors
/// [`JobError`] with a sentence for the user.
pub async fn distribute(
    jobs: &JobManager,
    peer: Arc<PeerContext>,
    template: JobSpec,
    (workspace, checkpoint): (Vec<u8>, Option<std::path::PathBuf>),
    nodes: &str,
    origin: &Origin,
) -> Result<JobRecord, JobError> {
    let started = start(
        jobs,
        peer,
        template,
        (workspace, checkpoint.as_deref()),
        nodes,
        origin,
    )
    .await;
    if let Some(path) = checkpoint {
        // Linked beside the record by then when a returning machine may need it.
        let _ = fs::remove_file(path);
    }
    started
}

async fn start(
    jobs: &JobManager,
    peer: Arc<PeerContext>,
    mut template: JobSpec,
    (workspace, checkpoint): (Vec<u8>, Option<&std::path::Path>),
    nodes: &str,
    origin: &Origin,
) -> Result<JobRecord, JobError> {
    let shared = &jobs.shared;
    // One look at the jobs not ended: the per-member cap and the rendezvous ports in use.
    let open: Vec<JobRecord> = shared
        .all()
        .iter()
        .map(|e| e.record())
        .filter(|r| !r.state.is_terminal())
        .collect();
    let GroupOwner {
        submitter,
        submitter_name,
        record_uid,
        parts_uid: uid,
    } = group_owner(jobs, &template, origin, &open)?;
    // The group is named after its submitter (§7.6); its parts are sent by this machine.
    template.submitter.clone_from(&submitter);
    template
        .validate()
        .map_err(|e| JobError::Invalid(e.to_string()))?;
    if template.resume_checkpoint.is_some() != checkpoint.is_some() {
        return Err(JobError::Invalid(
            "the training names a checkpoint to start from that did not come with it".into(),
        ));
    }
    let handle = template.key().dir_name();
    template.submitter.clone_from(&shared.node_id);
    let (all, absent) = candidates(jobs, &peer);
    let runtime = match &template.runtime {
        Some(name) => name.clone(),
        None => shared
            .exec
            .runtimes
            .first()
            .map_or_else(|| "system".to_owned(), |r| r.name.clone()),
    };
    let torch = plan::reference(&all, &runtime).and_then(|r: &RuntimeInfo| r.torch.clone());
    let machines = plan::choose(&all, nodes, &runtime, torch.as_deref()).map_err(|why| {
        if absent.is_empty() {
            JobError::Refused(why)
        } else {
            JobError::Refused(format!("{why}; {}", absent.join("; ")))
        }
    })?;
    template.runtime = Some(runtime);
    let port = plan::rendezvous_port(open.iter().map(|r| r.argv.as_slice()), OsRng.next_u32());
    let parts = plan::parts(&template, &machines, port);
    if shared.find(&handle).is_ok() {
        return Err(JobError::Invalid(
            "this training was already submitted; a new run needs a new id".into(),
        ));
    }
    let mut sent: Vec<(Part, JobRecord)> = Vec::new();
    for part in parts {
        let submitted = submit_part(
            jobs,
            &peer,
            part.spec.clone(),
            (workspace.clone(), checkpoint),
            &part.machine,
            uid,
        )
        .await;
        match submitted {
            Ok(record) => sent.push((part, record)),
            Err(error) => {
                for (_, record) in &sent {
                    if let Ok(entry) = shared.find(&record.job) {
                        jobs.cancel(&entry, "the training, because another part could not start");
                    }
                }
                return Err(JobError::Peer(format!(
                    "{} (node {}): {error}",
                    part.machine.name, part.node_rank
                )));
            }
        }
    }
    let record = JobRecord {
        job: handle,
        id: template.id.to_hex(),
        attempt: template.attempt,
        submitter,
        submitter_name,
        node: shared.node_id.clone(),
        node_name: shared.sharing.policy().display_name,
        role: JobRole::Group,
        argv: template.argv.clone(),
        runtime: template.runtime.clone(),
        resources: template.resources,
        network: partagpu_core::job::spec::NetworkMode::None,
        state: JobState::Running,
        reason: None,
        exit_code: None,
        created_ms: now_ms(),
        started_ms: Some(now_ms()),
        ended_ms: None,
        uid: record_uid,
        artifacts: Vec::new(),
        artifact_patterns: template.artifacts.clone(),
        log_bytes: 0,
        memory_peak_bytes: None,
        cpu_usage_us: None,
        parts: sent.iter().map(|(part, record)| part.sent_as(record)).collect(),
        training: None,
    };
    shared
        .submitted
        .create(&template, &record)
        .map_err(|e| JobError::Storage(e.to_string()))?;
    if template
        .min_nodes
        .is_some_and(|min| (min as usize) < record.parts.len())
    {
        // Kept for a machine that returns (rejoin.rs); without it, it cannot.
        let kept = fs::write(
            shared.submitted.dir(&record.job).join(rejoin::WORKSPACE),
            &workspace,
        );
        // Its parts' `resume_checkpoint`, sent again with them.
        let linked = checkpoint.map_or(Ok(()), |path| {
            inbox::link_or_copy(path, &shared.submitted.dir(&record.job).join(rejoin::CHECKPOINT))
        });
        if let Err(error) = kept.and(linked) {
            tracing::warn!(group = record.job, "a returning machine cannot rejoin: {error}");
        }
    }
    let entry = Arc::new(JobEntry::new(record.clone()));
    shared.insert(Arc::clone(&entry));
    tokio::spawn(coordinate(jobs.clone(), peer, entry));
    Ok(record)
}

/// Sends one part to its machine, with the file of its spec's `resume_checkpoint` when it
/// names one: accepted here for this machine, else over PGR/1.
async fn submit_part(
    jobs: &JobManager,
    peer: &Arc<PeerContext>,
    spec: JobSpec,
    (workspace, checkpoint): (Vec<u8>, Option<&std::path::Path>),
    machine: &Candidate,
    uid: u32,
) -> Result<JobRecord, JobError> {
    if machine.local {
        let digest = sha2::Sha256::digest(&workspace).into();
        let linked = match checkpoint {
            Some(path) => Some(inbox::link_in(&jobs.shared.inbox, path).map_err(JobError::Storage)?),
            None => None,
        };
        return jobs.accept_hashed(spec, (workspace, digest), linked, &Origin::Local { uid });
    }
    let target = Target {
        node_id: machine.node_id.clone(),
        name: machine.name.clone(),
        address: std::net::SocketAddr::new(machine.address.into(), peer.fleet.port()),
    };
    remote::submit(jobs, Arc::clone(peer), spec, (workspace, checkpoint), target, uid).await
}
