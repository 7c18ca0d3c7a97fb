// SPDX-License-Identifier: GPL-3.0-or-later
//! `Machine1`: what this machine has and how busy it is.

use std::sync::{Arc, RwLock};

use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::Resources;
use zbus::object_server::SignalEmitter;

/// The probed machine, shared between the refresh loop and the bus object.
pub struct MachineState {
    version: String,
    peer_port: u16,
    resources: RwLock<Resources>,
    runtimes: RwLock<Vec<RuntimeInfo>>,
}

/// Which live properties differ between two probes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    cpu_usage: bool,
    memory_available: bool,
    load: bool,
    gpus: bool,
    gpu_status: bool,
    runtimes: bool,
    jobs_usage: bool,
}

impl MachineState {
    /// The state after the first probe.
    #[must_use]
    pub fn new(version: String, peer_port: u16, resources: Resources) -> Self {
        Self {
            version,
            peer_port,
            resources: RwLock::new(resources),
            runtimes: RwLock::new(Vec::new()),
        }
    }

    /// The runtimes jobs may use here (none until the executor has probed them).
    #[must_use]
    pub fn runtimes(&self) -> Vec<RuntimeInfo> {
        self.runtimes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Sets the runtimes once the executor has probed them, and says whether they changed
    /// (for [`MachineIface::emit`]).
    pub fn set_runtimes(&self, runtimes: Vec<RuntimeInfo>) -> Changed {
        let mut current = self
            .runtimes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = Changed {
            runtimes: *current != runtimes,
            ..Changed::default()
        };
        *current = runtimes;
        changed
    }

    /// The latest probe.
    #[must_use]
    pub fn resources(&self) -> Resources {
        self.resources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads one value of the latest probe without copying the rest.
    fn read<T>(&self, value: impl FnOnce(&Resources) -> T) -> T {
        value(
            &self
                .resources
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Replaces the probe and says what changed.
    pub fn update(&self, next: Resources) -> Changed {
        let mut current = self
            .resources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = Changed {
            cpu_usage: current.cpu.usage_percent != next.cpu.usage_percent,
            memory_available: current.memory.available_bytes != next.memory.available_bytes,
            load: current.load != next.load,
            gpus: current.gpus != next.gpus,
            gpu_status: current.gpu_probe != next.gpu_probe,
            runtimes: false,
            jobs_usage: current.jobs != next.jobs,
        };
        *current = next;
        changed
    }
}

/// A GPU as it travels on the bus: (index, name, uuid, memory total, memory used, utilisation).
pub type WireGpu = (u32, String, String, u64, u64, u32);

/// GPUs in their bus form (`Machine1.Gpus`, and each `Fleet1` member's "gpus").
#[must_use]
pub fn wire_gpus(gpus: &[partagpu_core::GpuInfo]) -> Vec<WireGpu> {
    gpus.iter()
        .map(|g| {
            let (name, uuid) = (g.name.clone(), g.uuid.clone());
            (
                g.index,
                name,
                uuid,
                g.memory_total_bytes,
                g.memory_used_bytes,
                g.utilization_percent,
            )
        })
        .collect()
}

/// A runtime as it travels on the bus: (name, python version, torch version or "", CUDA
/// version or "").
pub type WireRuntime = (String, String, String, String);

/// Runtimes in their bus form (`Machine1.Runtimes`, and each `Fleet1` member's "runtimes").
#[must_use]
pub fn wire_runtimes(runtimes: &[RuntimeInfo]) -> Vec<WireRuntime> {
    runtimes
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                r.python.clone(),
                r.torch.clone().unwrap_or_default(),
                r.cuda.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The `Machine1` object.
pub struct MachineIface {
    state: Arc<MachineState>,
}

impl MachineIface {
    /// An object over `state`.
    #[must_use]
    pub fn new(state: Arc<MachineState>) -> Self {
        Self { state }
    }

    /// Emits `PropertiesChanged` for what `changed` names.
    ///
    /// # Errors
    /// When the signal cannot be sent.
    pub async fn emit(&self, changed: Changed, emitter: &SignalEmitter<'_>) -> zbus::Result<()> {
        if changed.cpu_usage {
            self.cpu_usage_changed(emitter).await?;
        }
        if changed.memory_available {
            self.memory_available_changed(emitter).await?;
        }
        if changed.load {
            self.load_average_changed(emitter).await?;
        }
        if changed.gpus {
            self.gpus_changed(emitter).await?;
        }
        if changed.gpu_status {
            self.gpu_status_changed(emitter).await?;
        }
        if changed.runtimes {
            self.runtimes_changed(emitter).await?;
        }
        if changed.jobs_usage {
            self.jobs_usage_changed(emitter).await?;
        }
        Ok(())
    }
}

#[zbus::interface(name = "org.partagpu.PartaGPU.Daemon.Machine1")]
impl MachineIface {
    #[zbus(property(emits_changed_signal = "const"))]
    fn version(&self) -> String {
        self.state.version.clone()
    }

    #[zbus(property(emits_changed_signal = "const"))]
    fn cpu_model(&self) -> String {
        self.state.read(|r| r.cpu.model.clone())
    }

    #[zbus(property(emits_changed_signal = "const"))]
    fn cpu_cores(&self) -> u32 {
        self.state.read(|r| r.cpu.cores)
    }

    #[zbus(property)]
    fn cpu_usage(&self) -> f64 {
        self.state.read(|r| r.cpu.usage_percent)
    }

    #[zbus(property(emits_changed_signal = "const"))]
    fn memory_total(&self) -> u64 {
        self.state.read(|r| r.memory.total_bytes)
    }

    #[zbus(property)]
    fn memory_available(&self) -> u64 {
        self.state.read(|r| r.memory.available_bytes)
    }

    /// (CPU percent of the whole machine, memory bytes) used by the room's jobs.
    #[zbus(property)]
    fn jobs_usage(&self) -> (f64, u64) {
        self.state.read(|r| (r.jobs.cpu_percent, r.jobs.memory_bytes))
    }

    #[zbus(property)]
    fn load_average(&self) -> (f64, f64, f64) {
        let load = self.state.read(|r| r.load);
        (load.one, load.five, load.fifteen)
    }

    #[zbus(property)]
    fn gpus(&self) -> Vec<WireGpu> {
        self.state.read(|r| wire_gpus(&r.gpus))
    }

    #[zbus(property)]
    fn gpu_status(&self) -> String {
        self.state.read(|r| r.gpu_probe.to_wire())
    }

    #[zbus(property(emits_changed_signal = "const"))]
    fn peer_port(&self) -> u16 {
        self.state.peer_port
    }

    #[zbus(property)]
    fn runtimes(&self) -> Vec<WireRuntime> {
        wire_runtimes(&self.state.runtimes())
    }
}
