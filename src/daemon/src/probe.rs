// SPDX-License-Identifier: GPL-3.0-or-later
//! Resource probing: CPU and memory from `/proc`, GPUs through a [`GpuBackend`].
//!
//! Every kernel path hangs off a root directory so tests read checked-in fixture trees.

pub mod gpu;
pub mod proc_fs;

use partagpu_core::{GpuProbeStatus, Resources};

pub use gpu::{FakeGpus, GpuBackend, NvmlGpus};
pub use proc_fs::{CpuTimes, ProcError, ProcFs};

/// Probes the whole machine: `/proc` for CPU and memory, `gpus` for GPUs.
pub struct Prober {
    proc_fs: ProcFs,
    gpus: Box<dyn GpuBackend>,
    last_cpu_times: Option<CpuTimes>,
    gpu_warned: bool,
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
        })
    }
}
