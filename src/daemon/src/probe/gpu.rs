// SPDX-License-Identifier: GPL-3.0-or-later
//! GPUs behind a small trait: NVML on real machines, a fixture file where there is no GPU.

use std::path::Path;

use nvml_wrapper::Nvml;
use partagpu_core::GpuInfo;

/// Something that lists GPUs. `Err` carries a reason for humans ("NVML not found …").
pub trait GpuBackend: Send {
    /// The GPUs now, with live memory use and utilisation.
    ///
    /// # Errors
    /// When GPUs cannot be probed at all.
    fn probe(&mut self) -> Result<Vec<GpuInfo>, String>;
}

/// NVIDIA GPUs through NVML (`libnvidia-ml.so.1`, loaded at run time).
pub struct NvmlGpus {
    nvml: Result<Nvml, String>,
}

impl NvmlGpus {
    /// Loads NVML once; a machine without it gets a backend that always says why.
    #[must_use]
    pub fn load() -> Self {
        let nvml = Nvml::init().map_err(|error| match error {
            // The usual case on a machine without an NVIDIA GPU: say it plainly.
            nvml_wrapper::error::NvmlError::LibloadingError(_) => {
                "no NVIDIA driver found (libnvidia-ml.so.1 cannot be loaded)".to_owned()
            }
            error => format!("NVML is not available ({error})"),
        });
        Self { nvml }
    }
}

impl GpuBackend for NvmlGpus {
    fn probe(&mut self) -> Result<Vec<GpuInfo>, String> {
        let nvml = self.nvml.as_ref().map_err(Clone::clone)?;
        let failed = |error: nvml_wrapper::error::NvmlError| format!("NVML query failed ({error})");
        let count = nvml.device_count().map_err(failed)?;
        (0..count)
            .map(|index| {
                let device = nvml.device_by_index(index).map_err(failed)?;
                let memory = device.memory_info().map_err(failed)?;
                Ok(GpuInfo {
                    index,
                    name: device.name().map_err(failed)?,
                    uuid: device.uuid().map_err(failed)?,
                    memory_total_bytes: memory.total,
                    memory_used_bytes: memory.used,
                    utilization_percent: device.utilization_rates().map_err(failed)?.gpu,
                })
            })
            .collect()
    }
}

/// GPUs read from a JSON file (a list of [`GpuInfo`]), re-read at every probe so a test can
/// change the load. Only for machines without GPUs: tests and the virtual lab.
pub struct FakeGpus {
    path: std::path::PathBuf,
}

impl FakeGpus {
    /// A backend over the file at `path`.
    #[must_use]
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
        }
    }
}

impl GpuBackend for FakeGpus {
    fn probe(&mut self) -> Result<Vec<GpuInfo>, String> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|error| format!("cannot read {}: {error}", self.path.display()))?;
        serde_json::from_str(&text)
            .map_err(|error| format!("{} is not a GPU list: {error}", self.path.display()))
    }
}
