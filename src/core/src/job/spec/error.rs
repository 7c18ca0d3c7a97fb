// SPDX-License-Identifier: GPL-3.0-or-later
//! Why a job spec was refused.

use std::net::Ipv4Addr;

use super::validate::*;
use crate::job::artifacts::ArtifactError;
use crate::job::checkpoint::{IndexError, MAX_CHECKPOINT_BYTES};
use crate::job::workspace::MAX_WORKSPACE_BYTES;

/// Why a job spec was refused: one variant per rule. Values from the spec are shortened
/// to 64 characters, so a hostile spec cannot flood a log through its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobSpecError {
    /// Over [`MAX_SPEC_BYTES`].
    #[error("the job spec is {bytes} bytes: at most {MAX_SPEC_BYTES} are accepted")]
    TooLarge {
        /// Its length.
        bytes: usize,
    },
    /// Not JSON, or not the shape of a spec.
    #[error("the job spec is not valid: {0}")]
    Json(String),
    /// Not 32 hex digits.
    #[error("'{0}' is not a job id: a job id is 32 hexadecimal digits")]
    BadJobId(String),
    /// Over [`MAX_ATTEMPT`].
    #[error("the attempt number is {0}: at most {MAX_ATTEMPT} are accepted")]
    Attempt(u32),
    /// Not 32 lowercase hex digits.
    #[error("the submitter '{0}' is not a node id: a node id is 32 lowercase hexadecimal digits")]
    Submitter(String),
    /// Empty or more than [`MAX_ARGS`].
    #[error("the command has {0} arguments: between 1 and {MAX_ARGS} are accepted")]
    ArgCount(usize),
    /// An empty argument or one over [`MAX_ARG_BYTES`].
    #[error("argument {index} of the command is {bytes} bytes: each must be between 1 and {MAX_ARG_BYTES}")]
    ArgLength {
        /// Its position (0: the program).
        index: usize,
        /// Its length.
        bytes: usize,
    },
    /// An argument with a NUL byte.
    #[error("argument {0} of the command contains a NUL byte, which a command line cannot carry")]
    ArgNul(usize),
    /// All arguments over [`MAX_ARGV_TOTAL`].
    #[error("the command's arguments add up to {0} bytes: at most {MAX_ARGV_TOTAL} are accepted")]
    ArgvTooLarge(usize),
    /// More than [`MAX_ENV`] variables.
    #[error("the job sets {0} environment variables: at most {MAX_ENV} are accepted")]
    TooManyEnv(usize),
    /// A name not of the form `[A-Z_][A-Z0-9_]{0,127}`.
    #[error("'{0}' is not an environment variable name: use capital letters, digits and '_', not starting with a digit, at most {MAX_ENV_NAME_BYTES} characters")]
    EnvName(String),
    /// A name the service sets itself.
    #[error("the environment variable {0} is set by the service for every job: a job cannot change it")]
    EnvReserved(String),
    /// A name off the allow-list.
    #[error("the environment variable {0} is not allowed: a job may set PYTHONUNBUFFERED, PYTHONHASHSEED, PYTHONWARNINGS, PYTHONDONTWRITEBYTECODE, CUBLAS_WORKSPACE_CONFIG, TOKENIZERS_PARALLELISM, LANG, LC_ALL, TZ and names starting with PARTAGPU_, TORCH_, OMP_, MKL_, NCCL_ or GLOO_")]
    EnvNotAllowed(String),
    /// A value over [`MAX_ENV_VALUE_BYTES`].
    #[error("the value of the environment variable {name} is {bytes} bytes: at most {MAX_ENV_VALUE_BYTES} are accepted")]
    EnvValueTooLong {
        /// The variable.
        name: String,
        /// The value's length.
        bytes: usize,
    },
    /// A value with a NUL byte.
    #[error(
        "the value of the environment variable {0} contains a NUL byte, which the environment cannot carry"
    )]
    EnvValueNul(String),
    /// A runtime name not of the form `[a-z0-9][a-z0-9._-]{0,31}`.
    #[error("'{0}' is not a runtime name: use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most {MAX_RUNTIME_BYTES} characters")]
    Runtime(String),
    /// `workspace_bytes` over the cap.
    #[error("the workspace is {0} bytes: at most {MAX_WORKSPACE_BYTES} (16 MiB) are accepted")]
    WorkspaceTooLarge(u64),
    /// Not 64 lowercase hex digits.
    #[error("the workspace digest '{0}' is not a SHA-256: it must be 64 lowercase hexadecimal digits")]
    WorkspaceSha256(String),
    /// Over 100 %.
    #[error("the job asks for {0}% of the CPU: at most 100% can be asked for")]
    CpuPercent(u32),
    /// Over [`MAX_RAM_BYTES`].
    #[error("the job asks for {0} bytes of RAM: at most {MAX_RAM_BYTES} (1 TiB) can be asked for")]
    Ram(u64),
    /// Over [`MAX_GPUS`].
    #[error("the job asks for {0} GPUs: at most {MAX_GPUS} can be asked for")]
    Gpus(u32),
    /// More than [`MAX_ARTIFACT_PATTERNS`].
    #[error("the job lists {0} artifact patterns: at most {MAX_ARTIFACT_PATTERNS} are accepted")]
    TooManyArtifacts(usize),
    /// An artifact pattern breaks a rule.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// More than [`MAX_PEERS`].
    #[error("the job lists {0} network peers: at most {MAX_PEERS} are accepted")]
    TooManyPeers(usize),
    /// A port range that is empty or starts at 0.
    #[error("the port range {first}-{last} is not valid: the first port must be at least 1 and not above the last")]
    PortRange {
        /// First port.
        first: u16,
        /// Last port.
        last: u16,
    },
    /// An address that is no single machine.
    #[error("the peer address {0} is not a machine's address: unspecified, broadcast and multicast addresses are refused")]
    PeerAddress(Ipv4Addr),
    /// Zero or over [`MAX_TIME_LIMIT_S`].
    #[error("the time limit is {0} seconds: it must be between 1 and {MAX_TIME_LIMIT_S} (one week)")]
    TimeLimit(u64),
    /// An elastic training's smallest size out of 1..=[`MAX_TRAINING_NODES`].
    #[error("min_nodes is {0}: an elastic training goes on with at least 1 and at most {MAX_TRAINING_NODES} machines")]
    MinNodes(u32),
    /// The checkpoint to start from has a name that is not one plain file name.
    #[error(transparent)]
    CheckpointName(#[from] IndexError),
    /// The checkpoint to start from is over [`MAX_CHECKPOINT_BYTES`].
    #[error(
        "the checkpoint to start from is {0} bytes: at most {MAX_CHECKPOINT_BYTES} (2 GiB) are accepted"
    )]
    CheckpointTooLarge(u64),
    /// Its SHA-256 is not 64 lowercase hex.
    #[error("'{0}' is not the SHA-256 of a checkpoint: 64 lowercase hexadecimal digits are expected")]
    CheckpointSha256(String),
}
