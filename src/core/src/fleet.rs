// SPDX-License-Identifier: GPL-3.0-or-later
//! What members of a room tell each other inside their control sessions (PGR/1 §7.5): each
//! machine's name, version, resources, limits, sharing state and live load.
//!
//! Everything here arrives from another machine, so [`NodeState::check`] bounds every string
//! and list before the state is shown to anyone: a member can be malicious too (§9).

use serde::{Deserialize, Serialize};

use crate::policy::validate_display_name;
use crate::resources::{CpuInfo, GpuInfo, GpuProbeStatus, LoadAverage, MemoryInfo};
use crate::{Limits, SharingState};

/// The `op` of the request that carries a state.
pub const STATE_OP: &str = "fleet.state";
/// Most GPUs a machine may report.
pub const MAX_GPUS: usize = 64;
/// Longest model, GPU name, UUID, version or probe reason, in characters.
pub const MAX_TEXT_CHARS: usize = 128;
/// Most runtimes a machine may report.
pub const MAX_RUNTIMES: usize = 16;
/// Longest runtime name, in characters (`[a-z0-9][a-z0-9._-]{0,31}`).
pub const MAX_RUNTIME_NAME_CHARS: usize = 32;
/// Longest Python, torch or CUDA version of a runtime, in printable ASCII characters.
pub const MAX_VERSION_CHARS: usize = 64;
/// Most jobs a machine may say it runs.
pub const MAX_JOBS_RUNNING: u32 = 10_000;

/// One machine as it describes itself to the room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeState {
    /// Display name chosen by the owner.
    pub name: String,
    /// Version of its partagpud.
    pub version: String,
    /// Whether it lends now.
    pub sharing: SharingState,
    /// What it lends.
    pub limits: Limits,
    /// Processor and its load.
    pub cpu: CpuInfo,
    /// Memory.
    pub memory: MemoryInfo,
    /// Load averages.
    pub load: LoadAverage,
    /// GPUs and their load.
    pub gpus: Vec<GpuInfo>,
    /// Whether the GPU list means anything.
    pub gpu_probe: GpuProbeStatus,
    /// Jobs running (or paused) on it now, for any submitter. Absent from older members: 0.
    #[serde(default)]
    pub jobs_running: u32,
    /// The Python runtimes it offers to jobs, the default first. Absent from older members.
    #[serde(default)]
    pub runtimes: Vec<RuntimeInfo>,
}

/// A Python runtime a machine offers to jobs, as the room sees it: jobs that must run
/// together need machines with the same name and versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Name jobs ask for, e.g. "torch".
    pub name: String,
    /// Python version, e.g. "3.12.3".
    pub python: String,
    /// `torch.__version__`, when torch imports.
    pub torch: Option<String>,
    /// `torch.version.cuda`, when torch is a CUDA build.
    pub cuda: Option<String>,
}

impl RuntimeInfo {
    /// Whether `name` is a runtime name: `[a-z0-9][a-z0-9._-]{0,31}`.
    #[must_use]
    pub fn valid_name(name: &str) -> bool {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        first_ok
            && name.len() <= MAX_RUNTIME_NAME_CHARS
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
    }

    /// Whether `text` is a version: 1 to [`MAX_VERSION_CHARS`] printable ASCII characters.
    #[must_use]
    pub fn valid_version(text: &str) -> bool {
        !text.is_empty()
            && text.len() <= MAX_VERSION_CHARS
            && text.bytes().all(|b| (0x20..=0x7e).contains(&b))
    }

    /// Checks the bounds of §7.5.
    #[must_use]
    pub fn fits(&self) -> bool {
        let optional = |v: &Option<String>| v.as_deref().is_none_or(Self::valid_version);
        Self::valid_name(&self.name)
            && Self::valid_version(&self.python)
            && optional(&self.torch)
            && optional(&self.cuda)
    }
}

/// A REQUEST body of a control session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateRequest {
    /// Always [`STATE_OP`].
    pub op: String,
    /// Echoed in the RESPONSE.
    pub id: u64,
    /// The sender's state.
    pub state: NodeState,
}

/// The RESPONSE to a REQUEST: `{"id": N, "ok": true}` or `{"id": N, "error": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id, when it could be read.
    #[serde(default)]
    pub id: Option<u64>,
    /// True when the request was taken.
    #[serde(default)]
    pub ok: bool,
    /// Why it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why a received state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not the JSON of §7.5.
    #[error("not a fleet request")]
    Malformed,
    /// A request this version does not know.
    #[error("unknown-request")]
    UnknownRequest,
    /// A field out of bounds.
    #[error("invalid state: {0}")]
    Invalid(&'static str),
}

fn short_text(text: &str) -> bool {
    text.chars().count() <= MAX_TEXT_CHARS && !text.chars().any(char::is_control)
}

fn percent(value: f64) -> bool {
    value.is_finite() && (0.0..=100.0).contains(&value)
}

impl NodeState {
    /// Checks every bound; a state that fails is dropped, never shown.
    ///
    /// # Errors
    /// [`StateError::Invalid`] naming the first field out of bounds.
    pub fn check(&self) -> Result<(), StateError> {
        validate_display_name(&self.name).map_err(|_| StateError::Invalid("name"))?;
        if self.name != self.name.trim() {
            return Err(StateError::Invalid("name"));
        }
        if self.version.is_empty() || !short_text(&self.version) {
            return Err(StateError::Invalid("version"));
        }
        if self.limits.validate(self.memory.total_bytes).is_err() {
            return Err(StateError::Invalid("limits"));
        }
        if !short_text(&self.cpu.model) || !percent(self.cpu.usage_percent) {
            return Err(StateError::Invalid("cpu"));
        }
        if self.memory.available_bytes > self.memory.total_bytes {
            return Err(StateError::Invalid("memory"));
        }
        let load = [self.load.one, self.load.five, self.load.fifteen];
        if load.iter().any(|l| !l.is_finite() || *l < 0.0) {
            return Err(StateError::Invalid("load"));
        }
        if self.gpus.len() > MAX_GPUS {
            return Err(StateError::Invalid("gpus"));
        }
        for gpu in &self.gpus {
            let fits = short_text(&gpu.name)
                && short_text(&gpu.uuid)
                && gpu.memory_used_bytes <= gpu.memory_total_bytes
                && gpu.utilization_percent <= 100;
            if !fits {
                return Err(StateError::Invalid("gpus"));
            }
        }
        if let GpuProbeStatus::Unavailable(reason) = &self.gpu_probe {
            if !short_text(reason) {
                return Err(StateError::Invalid("gpu_probe"));
            }
        }
        if self.jobs_running > MAX_JOBS_RUNNING {
            return Err(StateError::Invalid("jobs_running"));
        }
        if self.runtimes.len() > MAX_RUNTIMES || !self.runtimes.iter().all(RuntimeInfo::fits) {
            return Err(StateError::Invalid("runtimes"));
        }
        Ok(())
    }
}

/// Reads and checks a REQUEST body.
///
/// # Errors
/// [`StateError`]; the caller answers with its message.
pub fn parse_request(body: &[u8]) -> Result<StateRequest, StateError> {
    #[derive(Deserialize)]
    struct Envelope {
        op: String,
    }
    let envelope: Envelope = serde_json::from_slice(body).map_err(|_| StateError::Malformed)?;
    if envelope.op != STATE_OP {
        return Err(StateError::UnknownRequest);
    }
    let request: StateRequest = serde_json::from_slice(body).map_err(|_| StateError::Malformed)?;
    request.state.check()?;
    Ok(request)
}

/// The id of a request that could not be parsed, so the RESPONSE can still name it.
#[must_use]
pub fn request_id(body: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct Id {
        id: u64,
    }
    serde_json::from_slice::<Id>(body).ok().map(|id| id.id)
}

#[cfg(test)]
mod tests;
