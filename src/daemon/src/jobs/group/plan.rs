// SPDX-License-Identifier: GPL-3.0-or-later
//! Choosing the machines of a distributed training and writing each one's part: who may take
//! part (verified, online, sharing, not paused, the same runtime and torch version), the node
//! ranks, the rendezvous endpoint, the network each part may use, and its torchrun command.

use std::net::Ipv4Addr;

use partagpu_core::fleet::{NodeState, RuntimeInfo};
use partagpu_core::job::record::{JobPart, JobRecord};
use partagpu_core::job::spec::{JobId, JobSpec, NetworkMode, PeerAccess};
use partagpu_core::SharingState;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod torchrun;

/// Ports of the c10d rendezvous (one per group, drawn in this range).
pub const RENDEZVOUS_PORTS: (u16, u16) = (29400, 29499);
/// Linux's default ephemeral range, where gloo and NCCL listen between ranks.
pub const EPHEMERAL_PORTS: (u16, u16) = (32768, 60999);

/// A machine that could run a part.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Node id.
    pub node_id: String,
    /// Display name.
    pub name: String,
    /// Its address in the room.
    pub address: Ipv4Addr,
    /// Whether it is this machine.
    pub local: bool,
    /// What it says of itself.
    pub state: NodeState,
}

/// One machine's part.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The machine.
    pub machine: Candidate,
    /// Its node rank.
    pub node_rank: u32,
    /// Processes it runs.
    pub processes: u32,
    /// The job it is sent as.
    pub spec: JobSpec,
}

impl Part {
    /// The training's record of this part, once it was sent as `job`.
    #[must_use]
    pub fn sent_as(&self, job: &JobRecord) -> JobPart {
        JobPart {
            job: job.job.clone(),
            node: self.machine.node_id.clone(),
            node_name: self.machine.name.clone(),
            node_rank: self.node_rank,
            processes: self.processes,
            state: job.state,
        }
    }
}

/// Why a machine cannot take part, if it cannot.
#[must_use]
pub fn unfit(candidate: &Candidate, runtime: &str, torch: Option<&str>) -> Option<String> {
    let name = &candidate.name;
    match candidate.state.sharing {
        SharingState::Sharing => {}
        SharingState::Paused => return Some(format!("{name} is paused by its owner")),
        SharingState::Off => return Some(format!("{name} does not share")),
    }
    let Some(found) = candidate.state.runtimes.iter().find(|r| r.name == runtime) else {
        return Some(format!("{name} has no runtime {runtime:?}"));
    };
    match (found.torch.as_deref(), torch) {
        (None, _) => Some(format!("{name}'s runtime {runtime:?} has no torch")),
        (Some(theirs), Some(ours)) if theirs != ours => Some(format!(
            "{name} has torch {theirs}, the training needs {ours} (runtime {runtime:?})"
        )),
        _ => None,
    }
}

/// The reference runtime: the one named, as this machine has it, else as the first member
/// that has it.
#[must_use]
pub fn reference<'a>(candidates: &'a [Candidate], runtime: &str) -> Option<&'a RuntimeInfo> {
    candidates
        .iter()
        .flat_map(|c| c.state.runtimes.iter())
        .find(|r| r.name == runtime && r.torch.is_some())
}

/// Picks the machines: `wanted` is "" (every fit one), a count, or names/node ids separated
/// by commas. This machine comes first when it takes part (it is where the user sits).
///
/// # Errors
/// A sentence naming the machine that cannot, or saying that none can.
pub fn choose(
    candidates: &[Candidate],
    wanted: &str,
    runtime: &str,
    torch: Option<&str>,
) -> Result<Vec<Candidate>, String> {
    let wanted = wanted.trim();
    let fit: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| unfit(c, runtime, torch).is_none())
        .collect();
    let chosen: Vec<Candidate> = if wanted.is_empty() {
        fit.into_iter().cloned().collect()
    } else if let Ok(count) = wanted.parse::<usize>() {
        if count == 0 {
            return Err("a training needs at least one machine".into());
        }
        if fit.len() < count {
            let why: Vec<String> = candidates
                .iter()
                .filter_map(|c| unfit(c, runtime, torch))
                .collect();
            return Err(format!(
                "{count} machine(s) asked for, {} can take part ({})",
                fit.len(),
                if why.is_empty() {
                    format!(
                        "only {} machine(s) of the room are linked here now",
                        candidates.len()
                    )
                } else {
                    why.join("; ")
                }
            ));
        }
        fit.into_iter().take(count).cloned().collect()
    } else {
        let mut picked = Vec::new();
        for name in wanted.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let found = candidates
                .iter()
                .find(|c| super::super::remote::names_machine(name, &c.name, &c.node_id))
                .ok_or_else(|| format!("no member of the room is called {name:?} (see partagpuctl peers)"))?;
            if let Some(why) = unfit(found, runtime, torch) {
                return Err(why);
            }
            if !picked.iter().any(|p: &Candidate| p.node_id == found.node_id) {
                picked.push(found.clone());
            }
        }
        picked
    };
    if chosen.is_empty() {
        let why: Vec<String> = candidates
            .iter()
            .filter_map(|c| unfit(c, runtime, torch))
            .collect();
        return Err(format!(
            "no machine of the room can run this training{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {}", why.join("; "))
            }
        ));
    }
    Ok(chosen)
}

/// The rendezvous ports named by `argvs` (open trainings' parts known here).
fn ports_in_use<'a>(argvs: impl IntoIterator<Item = &'a [String]>) -> Vec<u16> {
    argvs
        .into_iter()
        .filter_map(|argv| {
            if let Some(at) = argv.iter().position(|a| a == "--master-port") {
                return argv.get(at + 1)?.parse().ok();
            }
            let at = argv.iter().position(|a| a == "--rdzv-endpoint")?;
            argv.get(at + 1)?.rsplit(':').next()?.parse().ok()
        })
        .collect()
}

/// A rendezvous port for a new training: `pick` chooses among those that no open training
/// known here uses, so two trainings whose rank 0 is this machine never collide (a torchrun
/// that finds its port taken fails the whole training).
#[must_use]
pub fn rendezvous_port<'a>(open_argvs: impl IntoIterator<Item = &'a [String]>, pick: u32) -> u16 {
    let used = ports_in_use(open_argvs);
    let free: Vec<u16> = (RENDEZVOUS_PORTS.0..=RENDEZVOUS_PORTS.1)
        .filter(|p| !used.contains(p))
        .collect();
    if free.is_empty() {
        // 100 open trainings: more than this machine takes; any port, torchrun will say.
        return RENDEZVOUS_PORTS.0 + u16::try_from(pick % 100).unwrap_or(0);
    }
    free[pick as usize % free.len()]
}

/// The id of part `rank` of group `group`: derived, so a retry names the same parts.
#[must_use]
pub fn part_id(group: &JobId, rank: u32) -> JobId {
    let digest = Sha256::new()
        .chain_update(group.0)
        .chain_update(rank.to_be_bytes())
        .finalize();
    let mut id = [0; 16];
    id.copy_from_slice(&digest[..16]);
    JobId(id)
}

/// Where the parts of one launch meet: node 0's rendezvous endpoint, the machines every
/// part may reach, and how many nodes the rendezvous takes at most. An elastic training's
/// newest one is kept beside its record, so that a machine of an earlier launch can join it
/// (rejoin.rs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Node 0's address and rendezvous port.
    pub master: (String, String),
    /// What every part may reach: each machine's rendezvous and ephemeral ports.
    pub peers: Vec<PeerAccess>,
    /// The most nodes of the rendezvous: these machines and the admitted ones.
    pub nodes: usize,
}

/// The layout of a launch on `machines` (node 0 first) that also lets the `admitted`
/// addresses in: machines of the training that are not in this launch but may join it.
#[must_use]
pub fn layout(machines: &[Candidate], rendezvous_port: u16, admitted: &[Ipv4Addr]) -> Layout {
    let mut addresses: Vec<Ipv4Addr> = machines.iter().map(|m| m.address).collect();
    for address in admitted {
        if !addresses.contains(address) {
            addresses.push(*address);
        }
    }
    let mut peers = Vec::new();
    for address in &addresses {
        for (first_port, last_port) in [RENDEZVOUS_PORTS, EPHEMERAL_PORTS] {
            peers.push(PeerAccess {
                address: *address,
                first_port,
                last_port,
            });
        }
    }
    Layout {
        master: (machines[0].address.to_string(), rendezvous_port.to_string()),
        peers,
        nodes: addresses.len(),
    }
}

/// Whether a machine at `address` may take part in a launch of this layout.
#[must_use]
pub fn admits(layout: &Layout, address: Ipv4Addr) -> bool {
    layout.peers.iter().any(|p| p.address == address)
}

/// The parts of a training: `template.argv` is the script and its arguments.
#[must_use]
pub fn parts(template: &JobSpec, machines: &[Candidate], rendezvous_port: u16) -> Vec<Part> {
    let layout = layout(machines, rendezvous_port, &[]);
    machines
        .iter()
        .zip(0..)
        .map(|(machine, rank)| part(template, &layout, machine, rank))
        .collect()
}

/// Node `rank`'s part, on `machine`, of a launch of `layout`.
#[must_use]
pub fn part(template: &JobSpec, layout: &Layout, machine: &Candidate, rank: u32) -> Part {
    let lent_gpus = if machine.state.limits.gpu_percent > 0 {
        machine.state.gpus.len()
    } else {
        0
    };
    let gpus = match template.resources.gpus {
        0 => u32::try_from(lent_gpus).unwrap_or(0),
        asked => asked.min(u32::try_from(lent_gpus).unwrap_or(0)),
    };
    let processes = gpus.max(1);
    let mut spec = template.clone();
    spec.id = part_id(&template.id, rank);
    spec.resources.gpus = gpus;
    spec.network = NetworkMode::Peers {
        peers: layout.peers.clone(),
    };
    // Quieter logs unless the user asks otherwise: the agents' C++ warnings about reverse
    // lookups (sandboxes have no DNS) and the stack traces printed when the rendezvous host
    // exits first at the end of a training.
    for (name, value) in [
        ("TORCH_CPP_LOG_LEVEL", "ERROR"),
        ("TORCH_SHOW_CPP_STACKTRACES", "0"),
    ] {
        spec.env
            .entry(name.to_owned())
            .or_insert_with(|| value.to_owned());
    }
    // Which machine a rank runs on, by its display name: the in-job helper names the slowest
    // one with it (the rank numbers change when an elastic training restarts).
    spec.env.insert(MACHINE_ENV.to_owned(), machine.name.clone());
    if template
        .min_nodes
        .is_some_and(|min| (min as usize) < layout.nodes)
    {
        // A machine that vanishes sends no reset: the others learn of it when a collective
        // times out (partagpu.ddp.init_process_group reads this), and their agents then
        // restart them without it.
        spec.env
            .entry(COLLECTIVE_TIMEOUT_ENV.to_owned())
            .or_insert_with(|| ELASTIC_COLLECTIVE_TIMEOUT_S.to_string());
        // By default the agents share the rendezvous store with their workers, and node rank
        // 0 publishes the workers' MASTER_ADDR in the first round only: a machine that joins
        // a later round (one coming back, see rejoin.rs) waits for it forever. Without the
        // sharing every round publishes it anew (the workers' store then listens on an
        // ephemeral port, which peers may reach).
        spec.env
            .insert(UNSHARED_STORE_ENV.0.to_owned(), UNSHARED_STORE_ENV.1.to_owned());
    }
    if rank != 0 && !template.artifacts_from_all_ranks {
        spec.artifacts.clear();
    }
    spec.artifacts_from_all_ranks = false;
    let mut argv = torchrun::launcher(template, layout, rank, processes, machine);
    argv.extend(template.argv.iter().cloned());
    spec.argv = argv;
    Part {
        machine: machine.clone(),
        node_rank: rank,
        processes,
        spec,
    }
}

/// The display name of the machine a part runs on, for the in-job helper's reports.
pub const MACHINE_ENV: &str = "PARTAGPU_MACHINE";
/// The collective timeout an elastic training's workers are given, in seconds.
pub const COLLECTIVE_TIMEOUT_ENV: &str = "PARTAGPU_COLLECTIVE_TIMEOUT_S";
/// torch's opt-out of sharing the rendezvous store with the workers, set in elastic parts.
pub const UNSHARED_STORE_ENV: (&str, &str) = ("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1");
const ELASTIC_COLLECTIVE_TIMEOUT_S: u32 = 30;
/// Restarts an elastic training may make (each after a lost machine or a failed worker).
pub const ELASTIC_RESTARTS: u32 = 3;

#[cfg(test)]
mod tests;
