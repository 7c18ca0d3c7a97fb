// SPDX-License-Identifier: GPL-3.0-or-later
//! What a submitter asks for: the job spec, as JSON, and the names that identify a job.
//!
//! Everything here comes from another machine, so [`JobSpec::parse`] bounds the input before
//! parsing and checks every field after; the service acts only on a validated spec.

mod error;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::state::ArtifactInfo;

pub use error::JobSpecError;
pub use validate::*;

/// A job's id, chosen at random by the submitting client (so a retry can name the same job).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub [u8; 16]);

impl JobId {
    /// The id made of 16 random bytes.
    pub fn from_random(bytes: [u8; 16]) -> JobId {
        JobId(bytes)
    }

    /// 32 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl FromStr for JobId {
    type Err = JobSpecError;

    fn from_str(text: &str) -> Result<JobId, JobSpecError> {
        let mut bytes = [0u8; 16];
        if text.len() != 32 || hex::decode_to_slice(text, &mut bytes).is_err() {
            return Err(JobSpecError::BadJobId(crate::job::workspace::shown(text)));
        }
        Ok(JobId(bytes))
    }
}

impl Serialize for JobId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for JobId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<JobId, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What names one attempt of one job on an executing machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobKey {
    /// Node id of the submitting machine, 32 lowercase hex.
    pub submitter: String,
    /// The job's id.
    pub id: JobId,
    /// Which attempt (0 first).
    pub attempt: u32,
}

impl JobKey {
    /// `"{first 12 hex of submitter}-{id hex}-{attempt}"`: only hex, digits and '-', so it is
    /// safe as a file, directory and cgroup name.
    pub fn dir_name(&self) -> String {
        // The submitter is validated hex; anything else is filtered so the name stays safe.
        let prefix: String = self
            .submitter
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(12)
            .collect();
        format!("{}-{}-{}", prefix.to_ascii_lowercase(), self.id, self.attempt)
    }
}

/// Resources a job asks for; 0 means "all the machine lends".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResources {
    /// Percent of the machine's CPU (0: all that is lent).
    #[serde(default)]
    pub cpu_percent: u32,
    /// Bytes of RAM (0: all that is lent).
    #[serde(default)]
    pub ram_bytes: u64,
    /// Number of GPUs.
    #[serde(default)]
    pub gpus: u32,
}

/// One room peer a job may reach (for DDP), on a range of TCP ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PeerAccess {
    /// The peer's IPv4 address.
    pub address: Ipv4Addr,
    /// First port allowed.
    pub first_port: u16,
    /// Last port allowed (inclusive).
    pub last_port: u16,
}

/// The network a job gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum NetworkMode {
    /// No network at all (only loopback).
    #[default]
    None,
    /// Only the listed peers, on the listed ports.
    Peers {
        /// Who may be reached.
        peers: Vec<PeerAccess>,
    },
}

/// A job as the submitter asks for it. Unknown fields are refused, so a field a newer client
/// relies on is never silently ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// The job's id.
    pub id: JobId,
    /// Which attempt (0 first), at most [`MAX_ATTEMPT`].
    pub attempt: u32,
    /// Node id of the submitting machine, 32 lowercase hex.
    pub submitter: String,
    /// The command and its arguments.
    pub argv: Vec<String>,
    /// Extra environment, names on the allow-list ([`check_env_name`]).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Runtime name (`None`: the machine's default).
    #[serde(default)]
    pub runtime: Option<String>,
    /// Size of the workspace archive.
    pub workspace_bytes: u64,
    /// SHA-256 of the workspace archive, 64 lowercase hex.
    pub workspace_sha256: String,
    /// Resources asked for.
    #[serde(default)]
    pub resources: JobResources,
    /// Glob patterns of the files to send back.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// A distributed training brings back every rank's artifacts (rank N's under `rank-N/`),
    /// not only rank 0's. Ignored by a job that is not a training.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub artifacts_from_all_ranks: bool,
    /// An elastic training: it goes on, from its last checkpoint, while at least this many
    /// of its machines remain (torchrun's c10d rendezvous with an nnodes range and restarts).
    /// `None`: every machine must stay to the end. Ignored by a job that is not a training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_nodes: Option<u32>,
    /// The checkpoint this job starts from: a file sent after the workspace (PGR/1 §7.6) and
    /// placed at the top of the job's directory, replacing a file of that name. A training
    /// started with `resume_from`, and the new launch of an elastic training, have it on
    /// every part: a checkpoint may be far larger than a workspace may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_checkpoint: Option<ArtifactInfo>,
    /// The network the job gets.
    #[serde(default)]
    pub network: NetworkMode,
    /// Wall-clock limit in seconds.
    #[serde(default = "default_time_limit")]
    pub time_limit_s: u64,
}

fn default_time_limit() -> u64 {
    DEFAULT_TIME_LIMIT_S
}

impl JobSpec {
    /// The key of this attempt.
    pub fn key(&self) -> JobKey {
        JobKey {
            submitter: self.submitter.clone(),
            id: self.id,
            attempt: self.attempt,
        }
    }

    /// Parses and validates a spec received from another machine.
    ///
    /// # Errors
    /// [`JobSpecError::TooLarge`] over [`MAX_SPEC_BYTES`] (checked before parsing),
    /// [`JobSpecError::Json`] when it is not a spec, or the first rule it breaks.
    pub fn parse(json: &[u8]) -> Result<JobSpec, JobSpecError> {
        if json.len() > MAX_SPEC_BYTES {
            return Err(JobSpecError::TooLarge { bytes: json.len() });
        }
        let spec: JobSpec = serde_json::from_slice(json).map_err(|e| {
            // Serde's message names the bad field and its place; a hostile key could be long.
            let message: String = e
                .to_string()
                .chars()
                .filter(|c| !c.is_control())
                .take(300)
                .collect();
            JobSpecError::Json(message)
        })?;
        spec.validate()?;
        Ok(spec)
    }

    /// Checks every rule; see the constants of this module.
    ///
    /// # Errors
    /// The first [`JobSpecError`] found.
    pub fn validate(&self) -> Result<(), JobSpecError> {
        validate::validate(self)
    }
}
