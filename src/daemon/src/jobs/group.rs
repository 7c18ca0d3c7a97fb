// SPDX-License-Identifier: GPL-3.0-or-later
//! A distributed training coordinated from this machine (the submitter's): its parts are
//! ordinary jobs, one per machine, each running torchrun in its sandbox with the network
//! limited to the training's machines. The group job merges their output with
//! `[machine/rank]` prefixes, follows their states, stops them all when one fails or on
//! request, and brings back rank 0's artifacts.

pub mod elastic;
pub mod plan;

use std::collections::BTreeMap;
use std::fs;
use std::sync::Arc;
use std::time::Duration;

use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::job::record::{JobPart, JobRecord, JobRole};
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::JobState;
use rand_core::{OsRng, RngCore};

use super::manager::{now_ms, JobEntry, JobError, JobManager, Origin, Stop, MAX_OPEN_PER_SUBMITTER};
use super::remote::{self, Target};
use super::runner::end;
use super::spool::{append_log, read_log};
use super::store::files;
use crate::peer::PeerContext;
use plan::{Candidate, Part};

/// How often the parts are looked at.
const TICK: Duration = Duration::from_millis(100);

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
    mut template: JobSpec,
    workspace: Vec<u8>,
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
        let submitted = if part.machine.local {
            jobs.accept(part.spec.clone(), workspace.clone(), &Origin::Local { uid })
        } else {
            let target = Target {
                node_id: part.machine.node_id.clone(),
                name: part.machine.name.clone(),
                address: std::net::SocketAddr::new(part.machine.address.into(), peer.fleet.port()),
            };
            remote::submit(
                jobs,
                Arc::clone(&peer),
                part.spec.clone(),
                workspace.clone(),
                target,
                uid,
            )
            .await
        };
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
        parts: sent
            .iter()
            .map(|(part, record)| JobPart {
                job: record.job.clone(),
                node: part.machine.node_id.clone(),
                node_name: part.machine.name.clone(),
                node_rank: part.node_rank,
                processes: part.processes,
                state: record.state,
            })
            .collect(),
    };
    shared
        .submitted
        .create(&template, &record)
        .map_err(|e| JobError::Storage(e.to_string()))?;
    let entry = Arc::new(JobEntry::new(record.clone()));
    shared.insert(Arc::clone(&entry));
    tokio::spawn(coordinate(jobs.clone(), peer, entry));
    Ok(record)
}

/// Where each part's output has been copied up to, beside the group's log (not synced: after
/// a restart of this service at worst a few lines repeat).
const OFFSETS: &str = "parts.offsets";

/// Follows the parts until the group ends (also after a restart of this service).
pub async fn coordinate(jobs: JobManager, peer: Arc<PeerContext>, group: Arc<JobEntry>) {
    let shared = Arc::clone(&jobs.shared);
    let dir = shared.submitted.dir(group.handle());
    let mut offsets: BTreeMap<String, u64> = fs::read(dir.join(OFFSETS))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut partial: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut failure: Option<String> = None;
    let mut stop_sent = false;
    let mut losses = elastic::Losses::new(shared.submitted.spec(group.handle()).and_then(|s| s.min_nodes));
    loop {
        let record = group.record();
        let stop = group.stop.borrow().clone();
        let mut states = Vec::new();
        for part in &record.parts {
            let Ok(entry) = shared.find(&part.job) else {
                states.push((
                    part.clone(),
                    JobState::Lost,
                    Some("its record is gone".to_owned()),
                ));
                continue;
            };
            if copy_output(&jobs, &entry, part, &dir, &mut offsets, &mut partial) {
                shared.note_output(&group, fs::metadata(dir.join(files::LOG)).map_or(0, |m| m.len()));
            }
            let now = entry.record();
            states.push((part.clone(), now.state, now.reason.clone()));
        }
        let _ = fs::write(
            dir.join(OFFSETS),
            serde_json::to_vec(&offsets).unwrap_or_default(),
        );
        if failure.is_none() {
            let mut departed: Vec<(JobPart, elastic::Departure)> =
                vanished(&peer, &shared.node_id, &states, &losses)
                    .into_iter()
                    .map(|part| (part, elastic::Departure::Vanished))
                    .collect();
            if losses.elastic() {
                // Without elasticity a preempted part is a failure like any other (below).
                departed.extend(
                    states
                        .iter()
                        .filter(|(p, s, _)| *s == JobState::Preempted && !losses.is_lost(&p.job))
                        .map(|(p, _, _)| (p.clone(), elastic::Departure::Preempted)),
                );
            }
            failure = leave_behind(&mut losses, departed, &states, &dir, group.handle());
            failure = failure.or_else(|| first_failure(&shared, &states, &losses));
        }
        if (failure.is_some() || stop.is_some()) && !stop_sent {
            stop_sent = true;
            let by = match &stop {
                Some(Stop::Cancelled(by)) => by.clone(),
                _ => "the training, because a part ended".to_owned(),
            };
            for (part, state, _) in &states {
                if let (false, Ok(entry)) = (state.is_terminal(), shared.find(&part.job)) {
                    jobs.cancel(&entry, &by);
                }
            }
        }
        if states.iter().any(|(p, s, _)| p.state != *s) {
            shared.commit(&group, |r| {
                for (part, (_, state, _)) in r.parts.iter_mut().zip(&states) {
                    part.state = *state;
                }
            });
        }
        // A part on a machine that went offline cannot report its end any more; once the
        // others have stopped, the training ends without waiting for its follower to give up.
        let offline: Vec<&str> = if failure.is_some() {
            offline_nodes(&peer, &shared.node_id, &states)
        } else {
            Vec::new()
        };
        if states
            .iter()
            .all(|(p, s, _)| s.is_terminal() || offline.contains(&p.node.as_str()) || losses.is_lost(&p.job))
        {
            let mut states = states;
            losses.mark(&mut states);
            for (job, rest) in std::mem::take(&mut partial)
                .into_iter()
                .filter(|(_, rest)| !rest.is_empty())
            {
                if let Some(part) = record.parts.iter().find(|p| p.job == job) {
                    let _ = append_log(&dir, &prefixed(part, &rest));
                }
            }
            finish(&jobs, &group, &states, stop, failure);
            return;
        }
        tokio::time::sleep(TICK).await;
    }
}

/// Parts whose machine left the room's links while they ran (and not given up on yet): unless
/// the training is elastic it cannot go on, and the others' errors (a broken collective) would
/// hide which machine it was.
fn vanished(
    peer: &PeerContext,
    own: &str,
    states: &[(JobPart, JobState, Option<String>)],
    losses: &elastic::Losses,
) -> Vec<JobPart> {
    let members = peer.fleet.members();
    states
        .iter()
        .filter(|(part, state, _)| {
            let online = part.node == own || members.iter().any(|m| m.node_id == part.node && m.online);
            !online && !state.is_terminal() && !losses.is_lost(&part.job)
        })
        .map(|(part, _, _)| part.clone())
        .collect()
}

/// Parts that left: an elastic training goes on without them while it can (said in its log);
/// otherwise the reason it must end.
fn leave_behind(
    losses: &mut elastic::Losses,
    departed: Vec<(JobPart, elastic::Departure)>,
    states: &[(JobPart, JobState, Option<String>)],
    dir: &std::path::Path,
    handle: &str,
) -> Option<String> {
    for (part, how) in departed {
        match losses.left(&part, states, how) {
            elastic::Verdict::GoesOn(line) => {
                tracing::warn!(group = handle, part = part.job, "{}", line.trim_end());
                let _ = append_log(dir, line.as_bytes());
            }
            elastic::Verdict::Ends(why) => return Some(why),
        }
    }
    None
}

/// Nodes of unfinished parts that are offline now.
fn offline_nodes<'a>(
    peer: &PeerContext,
    own: &str,
    states: &'a [(JobPart, JobState, Option<String>)],
) -> Vec<&'a str> {
    let members = peer.fleet.members();
    states
        .iter()
        .filter(|(p, s, _)| {
            !s.is_terminal() && p.node != own && !members.iter().any(|m| m.node_id == p.node && m.online)
        })
        .map(|(p, _, _)| p.node.as_str())
        .collect()
}

/// The part that failed first (the others usually fail because of it).
fn first_failure(
    shared: &super::manager::Shared,
    states: &[(JobPart, JobState, Option<String>)],
    losses: &elastic::Losses,
) -> Option<String> {
    states
        .iter()
        .filter(|(p, s, _)| s.is_terminal() && *s != JobState::Succeeded && !losses.is_lost(&p.job))
        .min_by_key(|(part, _, _)| {
            shared
                .find(&part.job)
                .ok()
                .and_then(|e| e.record().ended_ms)
                .unwrap_or(u64::MAX)
        })
        .map(|(p, s, why)| {
            format!(
                "{} (node {}) {}: {}",
                p.node_name,
                p.node_rank,
                s.as_str(),
                why.clone().unwrap_or_default()
            )
        })
}

fn prefixed(part: &JobPart, line: &[u8]) -> Vec<u8> {
    let mut out = format!("[{}/{}] ", part.node_name, part.node_rank).into_bytes();
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// Moves the complete lines a part wrote since last time into the group's log; true when
/// something was added.
fn copy_output(
    jobs: &JobManager,
    entry: &JobEntry,
    part: &JobPart,
    dir: &std::path::Path,
    offsets: &mut BTreeMap<String, u64>,
    partial: &mut BTreeMap<String, Vec<u8>>,
) -> bool {
    let record = entry.record();
    let part_dir = jobs.shared.store_of(&record).dir(&record.job);
    let offset = offsets.entry(part.job.clone()).or_insert(0);
    let Ok((data, next)) = read_log(&part_dir, *offset, 1 << 20) else {
        return false;
    };
    *offset = next;
    let pending = partial.entry(part.job.clone()).or_default();
    pending.extend_from_slice(&data);
    let mut out = Vec::new();
    while let Some(end) = pending.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = pending.drain(..=end).collect();
        out.extend(prefixed(part, &line));
    }
    !out.is_empty() && append_log(dir, &out).is_ok()
}

/// The name a part's artifact gets in its training: rank 0's keep theirs (`model.pt`), the
/// other ranks' go under `rank-N/` (only when every rank's were asked for).
fn artifact_in_group(node_rank: u32, name: &str) -> String {
    if node_rank == 0 {
        name.to_owned()
    } else {
        format!("rank-{node_rank}/{name}")
    }
}

/// The group's one terminal state, with rank 0's artifacts when it succeeded (every rank's
/// when the spec asked).
fn finish(
    jobs: &JobManager,
    group: &JobEntry,
    states: &[(JobPart, JobState, Option<String>)],
    stop: Option<Stop>,
    failure: Option<String>,
) {
    let shared = &jobs.shared;
    let dir = shared.submitted.dir(group.handle());
    let log_len = fs::metadata(dir.join(files::LOG)).map_or(0, |m| m.len());
    let mut artifacts = Vec::new();
    let (state, reason) = match (&stop, failure) {
        (Some(Stop::Cancelled(by)), _) => (JobState::Cancelled, Some(format!("cancelled by {by}"))),
        (_, Some(why)) => (JobState::Failed, Some(why)),
        _ => {
            // Parts other than rank 0 only collected artifacts if every rank's were asked.
            for (part, _, _) in states {
                let Ok(entry) = shared.find(&part.job) else {
                    continue;
                };
                let record = entry.record();
                let from = shared.store_of(&record).dir(&record.job).join(files::ARTIFACTS);
                for info in &record.artifacts {
                    let name = artifact_in_group(part.node_rank, &info.name);
                    let to = dir.join(files::ARTIFACTS).join(&name);
                    let copied = to
                        .parent()
                        .map_or(Ok(()), fs::create_dir_all)
                        .and_then(|()| fs::copy(from.join(&info.name), &to));
                    if copied.is_ok() {
                        let mut info = info.clone();
                        info.name = name;
                        artifacts.push(info);
                    }
                }
            }
            (JobState::Succeeded, None)
        }
    };
    shared.commit(group, |r| {
        end(r, state, reason, None);
        r.artifacts = artifacts;
        r.log_bytes = log_len;
        for (part, (_, s, _)) in r.parts.iter_mut().zip(states) {
            part.state = *s;
        }
    });
}
