// SPDX-License-Identifier: GPL-3.0-or-later
//! The rules a job spec must follow, and their limits.

use super::{JobSpec, JobSpecError, NetworkMode};
use crate::job::artifacts::validate_pattern;
use crate::job::checkpoint::{check_name, MAX_CHECKPOINT_BYTES};
use crate::job::workspace::{shown, MAX_WORKSPACE_BYTES};

/// Largest spec accepted, checked before parsing.
pub const MAX_SPEC_BYTES: usize = 64 << 10;
/// Highest attempt number.
pub const MAX_ATTEMPT: u32 = 1000;
/// Most arguments (the command included).
pub const MAX_ARGS: usize = 256;
/// Longest argument, in bytes.
pub const MAX_ARG_BYTES: usize = 4096;
/// Most bytes of all arguments together.
pub const MAX_ARGV_TOTAL: usize = 64 << 10;
/// Most environment variables.
pub const MAX_ENV: usize = 64;
/// Longest environment variable name.
pub const MAX_ENV_NAME_BYTES: usize = 128;
/// Longest environment variable value, in bytes.
pub const MAX_ENV_VALUE_BYTES: usize = 4096;
/// Longest runtime name.
pub const MAX_RUNTIME_BYTES: usize = 32;
/// Most RAM one job may ask for.
pub const MAX_RAM_BYTES: u64 = 1 << 40;
/// Most GPUs one job may ask for.
pub const MAX_GPUS: u32 = 16;
/// Most artifact patterns.
pub const MAX_ARTIFACT_PATTERNS: usize = 64;
/// Most peers a job may reach.
pub const MAX_PEERS: usize = 64;
/// Most machines one elastic training may be reduced from.
pub const MAX_TRAINING_NODES: u32 = 256;
/// Time limit when the spec gives none: one day.
pub const DEFAULT_TIME_LIMIT_S: u64 = 86_400;
/// Longest time limit: one week.
pub const MAX_TIME_LIMIT_S: u64 = 604_800;

/// Environment names a job may set exactly.
pub const ENV_ALLOWED: &[&str] = &[
    "PYTHONUNBUFFERED",
    "PYTHONHASHSEED",
    "PYTHONWARNINGS",
    "PYTHONDONTWRITEBYTECODE",
    "CUBLAS_WORKSPACE_CONFIG",
    "TOKENIZERS_PARALLELISM",
    "LANG",
    "LC_ALL",
    "TZ",
];
/// Prefixes of environment names a job may set.
pub const ENV_ALLOWED_PREFIXES: &[&str] = &["PARTAGPU_", "TORCH_", "OMP_", "MKL_", "NCCL_", "GLOO_"];
/// Names the service sets itself, refused even when a prefix would allow them.
pub const ENV_RESERVED: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "CUDA_VISIBLE_DEVICES",
];
/// Prefixes the service sets itself (or that change how every program loads).
pub const ENV_RESERVED_PREFIXES: &[&str] = &["CUDA_MPS_", "LD_"];

pub(super) fn validate(spec: &JobSpec) -> Result<(), JobSpecError> {
    if spec.attempt > MAX_ATTEMPT {
        return Err(JobSpecError::Attempt(spec.attempt));
    }
    if !is_lower_hex(&spec.submitter, 32) {
        return Err(JobSpecError::Submitter(shown(&spec.submitter)));
    }
    check_argv(&spec.argv)?;
    if spec.env.len() > MAX_ENV {
        return Err(JobSpecError::TooManyEnv(spec.env.len()));
    }
    for (name, value) in &spec.env {
        check_env_name(name)?;
        if value.len() > MAX_ENV_VALUE_BYTES {
            return Err(JobSpecError::EnvValueTooLong {
                name: name.clone(),
                bytes: value.len(),
            });
        }
        if value.contains('\0') {
            return Err(JobSpecError::EnvValueNul(name.clone()));
        }
    }
    if let Some(runtime) = &spec.runtime {
        check_runtime(runtime)?;
    }
    if spec.workspace_bytes > MAX_WORKSPACE_BYTES {
        return Err(JobSpecError::WorkspaceTooLarge(spec.workspace_bytes));
    }
    if !is_lower_hex(&spec.workspace_sha256, 64) {
        return Err(JobSpecError::WorkspaceSha256(shown(&spec.workspace_sha256)));
    }
    let r = &spec.resources;
    if r.cpu_percent > 100 {
        return Err(JobSpecError::CpuPercent(r.cpu_percent));
    }
    if r.ram_bytes > MAX_RAM_BYTES {
        return Err(JobSpecError::Ram(r.ram_bytes));
    }
    if r.gpus > MAX_GPUS {
        return Err(JobSpecError::Gpus(r.gpus));
    }
    if spec.artifacts.len() > MAX_ARTIFACT_PATTERNS {
        return Err(JobSpecError::TooManyArtifacts(spec.artifacts.len()));
    }
    for pattern in &spec.artifacts {
        validate_pattern(pattern)?;
    }
    check_network(&spec.network)?;
    if !(1..=MAX_TIME_LIMIT_S).contains(&spec.time_limit_s) {
        return Err(JobSpecError::TimeLimit(spec.time_limit_s));
    }
    if let Some(checkpoint) = &spec.resume_checkpoint {
        check_name(&checkpoint.name)?;
        if checkpoint.size > MAX_CHECKPOINT_BYTES {
            return Err(JobSpecError::CheckpointTooLarge(checkpoint.size));
        }
        if !is_lower_hex(&checkpoint.sha256, 64) {
            return Err(JobSpecError::CheckpointSha256(shown(&checkpoint.sha256)));
        }
    }
    if let Some(min) = spec.min_nodes {
        if !(1..=MAX_TRAINING_NODES).contains(&min) {
            return Err(JobSpecError::MinNodes(min));
        }
    }
    Ok(())
}

fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_argv(argv: &[String]) -> Result<(), JobSpecError> {
    if argv.is_empty() || argv.len() > MAX_ARGS {
        return Err(JobSpecError::ArgCount(argv.len()));
    }
    let mut total = 0;
    for (index, arg) in argv.iter().enumerate() {
        if arg.is_empty() || arg.len() > MAX_ARG_BYTES {
            return Err(JobSpecError::ArgLength {
                index,
                bytes: arg.len(),
            });
        }
        if arg.contains('\0') {
            return Err(JobSpecError::ArgNul(index));
        }
        total += arg.len();
    }
    if total > MAX_ARGV_TOTAL {
        return Err(JobSpecError::ArgvTooLarge(total));
    }
    Ok(())
}

/// Checks one environment name: its form `[A-Z_][A-Z0-9_]{0,127}`, then the reserved names,
/// then the allow-list.
///
/// # Errors
/// [`JobSpecError::EnvName`], [`JobSpecError::EnvReserved`] or [`JobSpecError::EnvNotAllowed`].
pub fn check_env_name(name: &str) -> Result<(), JobSpecError> {
    let bytes = name.as_bytes();
    let well_formed = !bytes.is_empty()
        && bytes.len() <= MAX_ENV_NAME_BYTES
        && !bytes[0].is_ascii_digit()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !well_formed {
        return Err(JobSpecError::EnvName(shown(name)));
    }
    if ENV_RESERVED.contains(&name) || ENV_RESERVED_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return Err(JobSpecError::EnvReserved(name.to_owned()));
    }
    if ENV_ALLOWED.contains(&name) || ENV_ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return Ok(());
    }
    Err(JobSpecError::EnvNotAllowed(name.to_owned()))
}

fn check_runtime(runtime: &str) -> Result<(), JobSpecError> {
    let bytes = runtime.as_bytes();
    let first_ok = bytes
        .first()
        .is_some_and(|&b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let rest_ok = bytes
        .iter()
        .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
    if !first_ok || !rest_ok || bytes.len() > MAX_RUNTIME_BYTES {
        return Err(JobSpecError::Runtime(shown(runtime)));
    }
    Ok(())
}

fn check_network(network: &NetworkMode) -> Result<(), JobSpecError> {
    let NetworkMode::Peers { peers } = network else {
        return Ok(());
    };
    if peers.len() > MAX_PEERS {
        return Err(JobSpecError::TooManyPeers(peers.len()));
    }
    for peer in peers {
        if peer.first_port == 0 || peer.first_port > peer.last_port {
            return Err(JobSpecError::PortRange {
                first: peer.first_port,
                last: peer.last_port,
            });
        }
        let a = peer.address;
        if a.is_unspecified() || a.is_broadcast() || a.is_multicast() {
            return Err(JobSpecError::PeerAddress(a));
        }
    }
    Ok(())
}
