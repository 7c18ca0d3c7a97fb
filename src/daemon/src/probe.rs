// SPDX-License-Identifier: GPL-3.0-or-later
//! Resource probing: CPU and memory from `/proc`, GPUs through a [`GpuBackend`].
//!
//! Every kernel path hangs off a root directory so tests read checked-in fixture trees.

pub mod gpu;
pub mod proc_fs;

use std::time::Instant;

use partagpu_core::{GpuProbeStatus, JobsUsage, Resources};

use crate::jobs::cgroup::CgroupUsage;

pub use gpu::{FakeGpus, GpuBackend, NvmlGpus};
pub use proc_fs::{CpuTimes, ProcError, ProcFs};

/// Reads what all jobs use together (the job manager's cgroups); `None` when jobs cannot
/// run here.
pub type JobsUsageSource = Box<dyn Fn() -> Option<CgroupUsage> + Send>;

/// Probes the whole machine: `/proc` for CPU and memory, `gpus` for GPUs, and the jobs'
/// share of both once [`Prober::watch_jobs`] was called.
pub struct Prober {
    proc_fs: ProcFs,
    gpus: Box<dyn GpuBackend>,
    last_cpu_times: Option<CpuTimes>,
    gpu_warned: bool,
    jobs: Option<JobsUsageSource>,
    last_jobs_cpu: Option<(Instant, u64)>,
}

impl Prober {
    /// A prober over `proc_fs` and `gpus`.
    #[must_use]
    pub fn new(proc_fs: ProcFs, gpus: Box<dyn GpuBackend>) -> Self {
        Self {
            proc_fs,
            gpus,
            last_cpu_times: None,
            gpu_warned: false,
            jobs: None,
            last_jobs_cpu: None,
        }
    }

    /// From now on, each probe also says what the jobs use.
    pub fn watch_jobs(&mut self, source: JobsUsageSource) {
        self.jobs = Some(source);
    }

    /// The jobs' share: memory now, CPU as a rate since the previous probe over every core.
    fn jobs_usage(&mut self, cores: u32) -> JobsUsage {
        let Some(sample) = self.jobs.as_ref().and_then(|read| read()) else {
            self.last_jobs_cpu = None;
            return JobsUsage::default();
        };
        let now = Instant::now();
        let cpu_percent = match self.last_jobs_cpu {
            Some((then, used)) => {
                jobs_cpu_percent(sample.cpu_usage_us.saturating_sub(used), now - then, cores)
            }
            None => 0.0,
        };
        self.last_jobs_cpu = Some((now, sample.cpu_usage_us));
        JobsUsage {
            cpu_percent,
            memory_bytes: sample.memory_bytes,
        }
    }

    /// Measures everything once. CPU usage is the busy share since the previous call (0 on the
    /// first call).
    ///
    /// # Errors
    /// When `/proc` cannot be read; a GPU failure is not an error but an unavailable status.
    pub fn probe(&mut self) -> Result<Resources, ProcError> {
        let mut cpu = self.proc_fs.cpu_info()?;
        let times = self.proc_fs.cpu_times()?;
        cpu.usage_percent = self
            .last_cpu_times
            .map_or(0.0, |previous| times.busy_percent_since(&previous));
        self.last_cpu_times = Some(times);
        let memory = self.proc_fs.memory()?;
        let load = self.proc_fs.load_average()?;
        let jobs = self.jobs_usage(cpu.cores);
        let (gpus, gpu_probe) = match self.gpus.probe() {
            Ok(gpus) => {
                self.gpu_warned = false;
                (gpus, GpuProbeStatus::Available)
            }
            Err(reason) => {
                // Said once per outage, not every two seconds.
                if !self.gpu_warned {
                    tracing::warn!(%reason, "GPUs unavailable; this machine reports no GPU");
                    self.gpu_warned = true;
                }
                (Vec::new(), GpuProbeStatus::Unavailable(reason))
            }
        };
        Ok(Resources {
            cpu,
            memory,
            load,
            gpus,
            gpu_probe,
            jobs,
        })
    }
}

/// `used_us` of CPU time in `elapsed` on `cores` cores, as percent of the whole machine.
fn jobs_cpu_percent(used_us: u64, elapsed: std::time::Duration, cores: u32) -> f64 {
    let capacity_us = elapsed.as_secs_f64() * 1e6 * f64::from(cores.max(1));
    if capacity_us <= 0.0 {
        return 0.0;
    }
    (used_us as f64 / capacity_us * 100.0).clamp(0.0, 100.0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::jobs_cpu_percent;

    #[test]
    fn jobs_cpu_is_a_share_of_every_core() {
        // One core busy for 2 s on a 4-core machine: a quarter of it.
        assert!((jobs_cpu_percent(2_000_000, Duration::from_secs(2), 4) - 25.0).abs() < 1e-9);
        assert_eq!(jobs_cpu_percent(10, Duration::ZERO, 4), 0.0);
        assert_eq!(jobs_cpu_percent(u64::MAX, Duration::from_secs(1), 1), 100.0);
    }
}
