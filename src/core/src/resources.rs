// SPDX-License-Identifier: GPL-3.0-or-later
//! What a machine has and how busy it is, as probed by the service.

use serde::{Deserialize, Serialize};

/// The processor as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// Model name from `/proc/cpuinfo`, or empty when the kernel does not give one.
    pub model: String,
    /// Logical CPUs the machine can run on.
    pub cores: u32,
    /// Busy share of the whole machine over the last probe interval, 0–100.
    pub usage_percent: f64,
}

/// Main memory, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryInfo {
    /// `MemTotal`.
    pub total_bytes: u64,
    /// `MemAvailable`: what new work can get without swapping.
    pub available_bytes: u64,
}

/// The kernel's 1, 5 and 15 minute load averages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadAverage {
    /// Over one minute.
    pub one: f64,
    /// Over five minutes.
    pub five: f64,
    /// Over fifteen minutes.
    pub fifteen: f64,
}

/// One GPU as NVML reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML index (the order of `nvidia-smi`).
    pub index: u32,
    /// Marketing name, e.g. "NVIDIA RTX A4000".
    pub name: String,
    /// Stable UUID, e.g. "GPU-…".
    pub uuid: String,
    /// Device memory, in bytes.
    pub memory_total_bytes: u64,
    /// Device memory in use, in bytes.
    pub memory_used_bytes: u64,
    /// Compute utilisation over the driver's last sample period, 0–100.
    pub utilization_percent: u32,
}

/// Whether GPUs could be probed at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "reason", rename_all = "lowercase")]
pub enum GpuProbeStatus {
    /// NVML answered (the list may still be empty).
    Available,
    /// No NVML on this machine, or it failed; the reason is for humans.
    Unavailable(String),
}

impl GpuProbeStatus {
    /// The D-Bus form: `"available"` or `"unavailable: <reason>"`.
    #[must_use]
    pub fn to_wire(&self) -> String {
        match self {
            Self::Available => "available".to_owned(),
            Self::Unavailable(reason) => format!("unavailable: {reason}"),
        }
    }

    /// Parses [`Self::to_wire`]'s form; anything unknown reads as unavailable.
    #[must_use]
    pub fn from_wire(wire: &str) -> Self {
        match wire.strip_prefix("unavailable: ") {
            None if wire == "available" => Self::Available,
            None => Self::Unavailable(wire.to_owned()),
            Some(reason) => Self::Unavailable(reason.to_owned()),
        }
    }
}

/// What the room's jobs use on this machine now, all of them together.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JobsUsage {
    /// CPU busy with jobs, percent of the whole machine (like [`CpuInfo::usage_percent`]).
    pub cpu_percent: f64,
    /// Memory charged to jobs, bytes.
    pub memory_bytes: u64,
}

/// Everything the probe measures at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Processor.
    pub cpu: CpuInfo,
    /// Memory.
    pub memory: MemoryInfo,
    /// Load averages.
    pub load: LoadAverage,
    /// GPUs, empty without NVML.
    pub gpus: Vec<GpuInfo>,
    /// Whether the GPU list is meaningful.
    pub gpu_probe: GpuProbeStatus,
    /// The part of the CPU and memory use that is the room's jobs (zero when none runs).
    #[serde(default)]
    pub jobs: JobsUsage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_probe_status_round_trips_through_its_wire_form() {
        for status in [
            GpuProbeStatus::Available,
            GpuProbeStatus::Unavailable("libnvidia-ml.so.1 not found".into()),
        ] {
            assert_eq!(GpuProbeStatus::from_wire(&status.to_wire()), status);
        }
        assert_eq!(
            GpuProbeStatus::from_wire("garbage"),
            GpuProbeStatus::Unavailable("garbage".into())
        );
    }
}
