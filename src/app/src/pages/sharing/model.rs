// SPDX-License-Identifier: GPL-3.0-or-later
//! The My sharing page without widgets: which mode to show, what the sliders show while the
//! owner drags them, when a debounced change is sent, and the gauges.

use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::state::JobState;
use partagpu_core::status::MachineStatus;
use partagpu_core::{GpuProbeStatus, Limits, LimitsUpdate, SharingState};

use crate::widgets::UsageParts;

/// Steps of the RAM slider: fine enough for a lab machine, coarse enough to drag.
pub const RAM_STEP_BYTES: u64 = 256 << 20;

/// One of the three sliders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slider {
    /// CPU percent of the whole machine.
    Cpu,
    /// RAM bytes.
    Ram,
    /// GPU percent of each lent GPU.
    Gpu,
}

/// One call to make to reach a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeStep {
    /// `Sharing1.SetEnabled`.
    SetEnabled(bool),
    /// `Sharing1.Pause` (true) or `Resume` (false).
    SetPaused(bool),
}

/// How full each gauge is, split into the owner's use, the jobs' use and the lent mark.
#[derive(Debug, Clone, PartialEq)]
pub struct Gauges {
    /// Processor, share of the whole machine.
    pub cpu: UsageParts,
    /// Memory, share of all of it.
    pub ram: UsageParts,
}

/// Splits `used` (0 to 1) into the jobs' part (never more than `used`: the two are
/// sampled a moment apart) and the rest, the owner's.
fn split(used: f64, jobs: f64, lent: f64) -> UsageParts {
    let used = used.clamp(0.0, 1.0);
    let jobs = jobs.clamp(0.0, used);
    UsageParts {
        own: used - jobs,
        jobs,
        lent: lent.clamp(0.0, 1.0),
    }
}

/// Whether `job` executes on this machine now, for any submitter (frozen ones count: they
/// hold what is lent).
#[must_use]
pub fn is_running_here(job: &JobRecord) -> bool {
    matches!(job.role, JobRole::Here | JobRole::Both)
        && matches!(
            job.state,
            JobState::Accepted | JobState::Running | JobState::Paused
        )
}

/// The page's state.
#[derive(Debug, Default)]
pub struct SharingModel {
    status: Option<MachineStatus>,
    /// What the owner chose and the service has not confirmed yet.
    pending: LimitsUpdate,
    /// Bumped by every slider move; only the newest timer sends.
    generation: u64,
    jobs: Vec<JobRecord>,
}

impl SharingModel {
    /// The last status, if any.
    #[must_use]
    pub fn status(&self) -> Option<&MachineStatus> {
        self.status.as_ref()
    }

    /// A new status from the service. Pending values it now confirms are dropped; others
    /// stay shown so a slider does not jump back while its change is on its way.
    pub fn set_status(&mut self, status: MachineStatus) {
        let limits = status.limits;
        if self.pending.cpu_percent == Some(limits.cpu_percent) {
            self.pending.cpu_percent = None;
        }
        if self.pending.ram_bytes == Some(limits.ram_bytes) {
            self.pending.ram_bytes = None;
        }
        if self.pending.gpu_percent == Some(limits.gpu_percent) {
            self.pending.gpu_percent = None;
        }
        self.status = Some(status);
    }

    /// Every job record; the page keeps those running here.
    pub fn set_jobs(&mut self, jobs: Vec<JobRecord>) {
        self.jobs = jobs;
    }

    /// Jobs executing on this machine now (for any submitter), newest first.
    pub fn jobs_here(&self) -> impl Iterator<Item = &JobRecord> {
        self.jobs.iter().filter(|job| is_running_here(job))
    }

    /// The limits to show: the service's, with the owner's unconfirmed choices over them.
    #[must_use]
    pub fn shown_limits(&self) -> Option<Limits> {
        let limits = self.status.as_ref()?.limits;
        Some(Limits {
            cpu_percent: self.pending.cpu_percent.unwrap_or(limits.cpu_percent),
            ram_bytes: self.pending.ram_bytes.unwrap_or(limits.ram_bytes),
            gpu_percent: self.pending.gpu_percent.unwrap_or(limits.gpu_percent),
        })
    }

    /// A slider moved to `value` (percent, or bytes for RAM). Returns the generation to
    /// schedule a debounce timer for, or `None` when nothing changes (the move was the page
    /// itself showing the service's value).
    pub fn slider_moved(&mut self, slider: Slider, value: f64) -> Option<u64> {
        let shown = self.shown_limits()?;
        let total = self.status.as_ref()?.resources.memory.total_bytes;
        match slider {
            Slider::Cpu => {
                let value = value.round().clamp(0.0, 100.0) as u32;
                if value == shown.cpu_percent {
                    return None;
                }
                self.pending.cpu_percent = Some(value);
            }
            Slider::Gpu => {
                let value = value.round().clamp(0.0, 100.0) as u32;
                if value == shown.gpu_percent {
                    return None;
                }
                self.pending.gpu_percent = Some(value);
            }
            Slider::Ram => {
                let value = snap_ram(value, total);
                if value == shown.ram_bytes {
                    return None;
                }
                self.pending.ram_bytes = Some(value);
            }
        }
        self.generation += 1;
        Some(self.generation)
    }

    /// A debounce timer fired. Returns the change to send when no newer move came since.
    pub fn debounce_elapsed(&mut self, generation: u64) -> Option<LimitsUpdate> {
        if generation != self.generation || self.pending == LimitsUpdate::default() {
            return None;
        }
        Some(self.pending)
    }

    /// The service refused a change: show its values again.
    pub fn change_refused(&mut self) {
        self.pending = LimitsUpdate::default();
    }

    /// The calls that take the machine from its state to `target`.
    #[must_use]
    pub fn steps_to(&self, target: SharingState) -> Vec<ModeStep> {
        let Some(status) = &self.status else {
            return Vec::new();
        };
        let mut steps = Vec::new();
        match target {
            SharingState::Off => {
                if status.sharing_enabled {
                    steps.push(ModeStep::SetEnabled(false));
                }
            }
            SharingState::Sharing | SharingState::Paused => {
                if !status.sharing_enabled {
                    steps.push(ModeStep::SetEnabled(true));
                }
                let paused = target == SharingState::Paused;
                if status.paused != paused {
                    steps.push(ModeStep::SetPaused(paused));
                }
            }
        }
        steps
    }

    /// The gauges, once a status came.
    #[must_use]
    pub fn gauges(&self) -> Option<Gauges> {
        let status = self.status.as_ref()?;
        let limits = self.shown_limits()?;
        let memory = &status.resources.memory;
        let total = memory.total_bytes.max(1) as f64;
        let jobs = &status.resources.jobs;
        Some(Gauges {
            cpu: split(
                status.resources.cpu.usage_percent / 100.0,
                jobs.cpu_percent / 100.0,
                f64::from(limits.cpu_percent) / 100.0,
            ),
            ram: split(
                memory.total_bytes.saturating_sub(memory.available_bytes) as f64 / total,
                jobs.memory_bytes as f64 / total,
                limits.ram_bytes as f64 / total,
            ),
        })
    }

    /// Why the GPU slider does nothing here, if it does nothing.
    #[must_use]
    pub fn no_gpu_reason(&self) -> Option<String> {
        let resources = &self.status.as_ref()?.resources;
        match &resources.gpu_probe {
            GpuProbeStatus::Unavailable(reason) => Some(reason.clone()),
            GpuProbeStatus::Available if resources.gpus.is_empty() => Some(String::new()),
            GpuProbeStatus::Available => None,
        }
    }
}

/// RAM slider values land on whole steps, except the machine's total itself.
#[must_use]
pub fn snap_ram(value: f64, total: u64) -> u64 {
    let value = value.max(0.0) as u64;
    if value >= total {
        return total;
    }
    ((value + RAM_STEP_BYTES / 2) / RAM_STEP_BYTES * RAM_STEP_BYTES).min(total)
}

#[cfg(test)]
#[path = "model_tests.rs"]
pub(crate) mod tests;
