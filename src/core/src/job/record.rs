// SPDX-License-Identifier: GPL-3.0-or-later
//! What the service tells about a job (`Jobs1.List` / `Jobs1.Show`, docs/jobs.md).

use serde::{Deserialize, Serialize};

use super::spec::{JobResources, NetworkMode};
use super::state::{ArtifactInfo, JobState};
use super::training::TrainingReport;

/// Where a job record comes from, seen from the machine that answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobRole {
    /// Submitted by a member, executed here.
    Here,
    /// Submitted from here, executed by a member.
    Submitted,
    /// Submitted from here and executed here.
    Both,
    /// A distributed training coordinated from here: its parts run on the members.
    Group,
}

/// One machine's part of a group job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobPart {
    /// The part's own handle (a job record of its own).
    pub job: String,
    /// Node id of the machine running it.
    pub node: String,
    /// Its display name.
    pub node_name: String,
    /// Its torchrun node rank (0 hosts the rendezvous and saves the artifacts).
    pub node_rank: u32,
    /// Processes it runs (GPUs there, or one CPU process).
    pub processes: u32,
    /// Its state, as last seen.
    pub state: JobState,
}

/// One job as `Jobs1` shows it. Keys may be added; readers ignore unknown ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The handle (`JobKey::dir_name`).
    pub job: String,
    /// The client-generated id, 32 hex digits.
    pub id: String,
    /// The attempt number.
    pub attempt: u32,
    /// Node id of the submitting machine.
    pub submitter: String,
    /// Its display name, when known.
    #[serde(default)]
    pub submitter_name: String,
    /// Node id of the executing machine.
    pub node: String,
    /// Its display name, when known.
    #[serde(default)]
    pub node_name: String,
    /// How this machine relates to the job.
    pub role: JobRole,
    /// The command.
    pub argv: Vec<String>,
    /// The runtime asked for (`None`: the machine's default).
    #[serde(default)]
    pub runtime: Option<String>,
    /// Resources asked for.
    #[serde(default)]
    pub resources: JobResources,
    /// The network mode.
    #[serde(default)]
    pub network: NetworkMode,
    /// Current state.
    pub state: JobState,
    /// Why it ended (failed, cancelled, preempted, lost), one sentence.
    #[serde(default)]
    pub reason: Option<String>,
    /// The exit status of the command, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// When it was accepted, ms since the epoch.
    pub created_ms: u64,
    /// When it started, ms since the epoch.
    #[serde(default)]
    pub started_ms: Option<u64>,
    /// When it ended, ms since the epoch.
    #[serde(default)]
    pub ended_ms: Option<u64>,
    /// Local uid that submitted it (only on the submitting machine).
    #[serde(default)]
    pub uid: Option<u32>,
    /// The artifacts collected (on the executing machine) or fetched (on the submitting one).
    #[serde(default)]
    pub artifacts: Vec<ArtifactInfo>,
    /// Artifact patterns asked for.
    #[serde(default)]
    pub artifact_patterns: Vec<String>,
    /// Bytes of output kept so far.
    #[serde(default)]
    pub log_bytes: u64,
    /// Peak memory of the job's cgroup, bytes.
    #[serde(default)]
    pub memory_peak_bytes: Option<u64>,
    /// CPU time used, µs.
    #[serde(default)]
    pub cpu_usage_us: Option<u64>,
    /// For a group job: its parts, by node rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<JobPart>,
    /// For a group job using the in-job helper: what its reports said (docs/distribute.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingReport>,
}
