// SPDX-License-Identifier: GPL-3.0-or-later
//! Tier-1 network allow-list of a multi-machine job (sandbox.md §6): the job shares the host
//! network namespace, and an nftables table of its own lets its cgroup reach only its peers'
//! DDP ports, while only those peers may reach the job's ports from outside.
//!
//! The job's own port ranges are the union of its peers' ranges: the room gives every rank of a
//! job the same rendezvous/NCCL range, so a rank listens where it connects.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use partagpu_core::job::spec::PeerAccess;

mod nft;

pub use nft::{install, list_tables, remove, Nft};

/// Prefix of every table this service creates; cleanup after a restart lists tables by it.
pub const TABLE_PREFIX: &str = "partagpu_";

/// Why the rules of a job could not be made, loaded or removed.
#[derive(Debug, thiserror::Error)]
pub enum NetfilterError {
    /// The job name is not 1 to 64 characters of `[0-9a-f-]`.
    #[error("The job name {0:?} is not 1 to 64 characters of lowercase hex digits and dashes.")]
    BadJobName(String),
    /// The table name was not made by [`table_name`].
    #[error("The table name {0:?} is not a PartaGPU job table name.")]
    BadTableName(String),
    /// The cgroup path is empty, absolute, has `.`/`..` or characters nft could misread.
    #[error("The cgroup path {0:?} is not a plain relative path of the unified hierarchy.")]
    BadCgroupPath(String),
    /// A peer's port range is empty or starts at port 0.
    #[error("The peer {address} has the invalid port range {first}-{last}.")]
    BadPortRange {
        address: Ipv4Addr,
        first: u16,
        last: u16,
    },
    /// The job's cgroup must exist before its rules are loaded: nft resolves it at load time.
    #[error("The job cgroup {0} does not exist, so its network rules cannot be loaded.")]
    MissingCgroup(PathBuf),
    /// nft (or unshare/nsenter around it) could not be started.
    #[error("Could not run {program}: {source}.")]
    Spawn { program: String, source: std::io::Error },
    /// nft refused the script or the command.
    #[error("nft failed ({status}): {stderr}")]
    Nft { status: String, stderr: String },
}

/// The table of `job`: `partagpu_` followed by the job name with `-` turned into `_`.
pub fn table_name(job: &str) -> Result<String, NetfilterError> {
    let valid =
        (1..=64).contains(&job.len()) && job.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'));
    if !valid {
        return Err(NetfilterError::BadJobName(job.to_owned()));
    }
    Ok(format!("{TABLE_PREFIX}{}", job.replace('-', "_")))
}

pub(crate) fn check_table(table: &str) -> Result<(), NetfilterError> {
    let rest = table.strip_prefix(TABLE_PREFIX).unwrap_or("");
    let valid = (1..=64).contains(&rest.len())
        && rest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'_'));
    if valid {
        Ok(())
    } else {
        Err(NetfilterError::BadTableName(table.to_owned()))
    }
}

/// Checks the cgroup path and returns its depth, the `level` nft compares at.
fn cgroup_level(path: &str) -> Result<usize, NetfilterError> {
    let bad = || NetfilterError::BadCgroupPath(path.to_owned());
    let mut level = 0;
    for part in path.split('/') {
        // The path is quoted in the script: only characters that need no escaping are allowed.
        let plain = part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if part.is_empty() || part == "." || part == ".." || !plain {
            return Err(bad());
        }
        level += 1;
    }
    Ok(level)
}

/// Sorted, merged port ranges, because nft refuses overlapping elements of an interval set.
fn merge(mut ranges: Vec<(u16, u16)>) -> Vec<(u16, u16)> {
    ranges.sort_unstable();
    let mut out: Vec<(u16, u16)> = Vec::new();
    for (first, last) in ranges {
        match out.last_mut() {
            Some(prev) if u32::from(first) <= u32::from(prev.1) + 1 => prev.1 = prev.1.max(last),
            _ => out.push((first, last)),
        }
    }
    out
}

fn range_text((first, last): (u16, u16)) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

fn set(name: &str, kind: &str, interval: bool, elements: &[String], why: &str) -> String {
    let mut s = format!("\t# {why}\n\tset {name} {{\n\t\ttype {kind}\n");
    if interval {
        s.push_str("\t\tflags interval\n");
    }
    // An empty `elements = { }` is a syntax error: an empty set is simply declared without it.
    if !elements.is_empty() {
        s.push_str(&format!("\t\telements = {{ {} }}\n", elements.join(", ")));
    }
    s.push_str("\t}\n");
    s
}

/// The `nft -f` script that (re)creates `table inet <table>` for the job whose sockets live in
/// `cgroup_path` (relative to the cgroup2 root) and may reach only `peers`.
pub fn rules(table: &str, cgroup_path: &str, peers: &[PeerAccess]) -> Result<String, NetfilterError> {
    check_table(table)?;
    let level = cgroup_level(cgroup_path)?;
    let mut by_addr: Vec<(Ipv4Addr, Vec<(u16, u16)>)> = Vec::new();
    for p in peers {
        if p.first_port == 0 || p.first_port > p.last_port {
            return Err(NetfilterError::BadPortRange {
                address: p.address,
                first: p.first_port,
                last: p.last_port,
            });
        }
        match by_addr.iter_mut().find(|(a, _)| *a == p.address) {
            Some((_, r)) => r.push((p.first_port, p.last_port)),
            None => by_addr.push((p.address, vec![(p.first_port, p.last_port)])),
        }
    }
    by_addr.sort_unstable_by_key(|(a, _)| *a);
    let ports = merge(by_addr.iter().flat_map(|(_, r)| r.iter().copied()).collect());
    let ports: Vec<String> = ports.into_iter().map(range_text).collect();
    let addrs: Vec<String> = by_addr.iter().map(|(a, _)| a.to_string()).collect();
    let pairs: Vec<String> = by_addr
        .iter()
        .flat_map(|(a, r)| {
            merge(r.clone())
                .into_iter()
                .map(move |r| format!("{a} . {}", range_text(r)))
        })
        .collect();

    let mut s = String::new();
    s.push_str("# PartaGPU tier-1 allow-list of one multi-machine job (sandbox.md §6).\n");
    s.push_str("# add+delete first: the new table replaces any old one in this same atomic transaction.\n");
    s.push_str(&format!(
        "add table inet {table}\ndelete table inet {table}\ntable inet {table} {{\n"
    ));
    s.push_str(&set(
        "job_ports",
        "inet_service",
        true,
        &ports,
        "Ports the ranks of this job listen on.",
    ));
    s.push_str(&set(
        "peer_addrs",
        "ipv4_addr",
        false,
        &addrs,
        "Machines running the other ranks.",
    ));
    s.push_str(&set(
        "peers",
        "ipv4_addr . inet_service",
        true,
        &pairs,
        "Peer address . port range.",
    ));
    s.push_str(&format!(
        "\tchain output {{\n\t\ttype filter hook output priority 0; policy accept;\n\
         \t\t# Only sockets of the job's cgroup (and its sub-cgroups) are filtered.\n\
         \t\tsocket cgroupv2 level {level} \"{cgroup_path}\" jump job_egress\n\t}}\n"
    ));
    s.push_str(
        "\tchain job_egress {\n\
         \t\t# Replies on connections the rules below allowed, and to peers connecting to us;\n\
         \t\t# not to anyone else, or a job listening on another port would serve the LAN.\n\
         \t\tct state established,related oif \"lo\" accept\n\
         \t\tct state established,related ip daddr @peer_addrs accept\n\
         \t\t# Several ranks on one machine talk over loopback, but only on the job's ports:\n\
         \t\t# other local services (the daemon on 7655, sshd, DNS stubs) stay out of reach.\n\
         \t\toif \"lo\" tcp dport @job_ports accept\n\
         \t\t# Peers are IPv4 addresses; IPv6 would bypass the address list.\n\
         \t\tmeta nfproto ipv6 reject with icmpx type admin-prohibited\n\
         \t\tip daddr . tcp dport @peers accept\n\
         \t\t# Everything else (DNS, 7655, 22, other LAN hosts, the internet) fails fast, not by timeout.\n\
         \t\tmeta l4proto tcp reject with tcp reset\n\
         \t\treject with icmpx type admin-prohibited\n\t}\n",
    );
    s.push_str(&format!(
        "\tchain input {{\n\t\ttype filter hook input priority 0; policy accept;\n\
         \t\t# c10d/TCPStore, gloo and NCCL have no authentication: only peers may reach the\n\
         \t\t# job's sockets, on any port (gloo listens on ephemeral ones). The socket lookup\n\
         \t\t# finds the local socket a packet is for, so the host's own sockets are untouched.\n\
         \t\t# Loopback is judged on output, where the sender's cgroup is known.\n\
         \t\tiif != \"lo\" socket cgroupv2 level {level} \"{cgroup_path}\" ip saddr != @peer_addrs drop\n\
         \t\tiif != \"lo\" socket cgroupv2 level {level} \"{cgroup_path}\" meta nfproto ipv6 drop\n\t}}\n}}\n",
    ));
    Ok(s)
}

#[cfg(test)]
mod tests;
