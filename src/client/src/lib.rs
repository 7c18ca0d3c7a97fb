// SPDX-License-Identifier: GPL-3.0-or-later
//! Typed access to `partagpud` over the system bus, shared by the CLI, the app and the tray.
//!
//! [`proxies`] mirrors `dbus/org.partagpu.PartaGPU.Daemon.xml` one to one; [`Client`] wraps
//! them with the types of `partagpu_core` and turns bus errors into a [`ClientError`] whose
//! message a user can act on.

pub mod error;
pub mod fleet;
pub mod jobs;
pub mod proxies;
pub mod room;
pub mod workspace;

use std::collections::HashMap;

use partagpu_core::fleet::RuntimeInfo;
use partagpu_core::journal::{SecurityEvent, Severity};
use partagpu_core::status::MachineStatus;
use partagpu_core::{
    CpuInfo, GpuInfo, GpuProbeStatus, JobsUsage, Limits, LimitsUpdate, LoadAverage, MemoryInfo, Resources,
    SharingState,
};
use serde::Serialize;
use zbus::zvariant::Value;

pub use error::ClientError;
pub use fleet::{FleetView, Peer};
pub use jobs::{Jobs, LogChunk};
pub use proxies::{Fleet1Proxy, Jobs1Proxy, Machine1Proxy, Room1Proxy, Security1Proxy, Sharing1Proxy};
pub use room::{JoinOptions, RoomInfo, VisibleRoom};

/// A GPU from its bus form (`Machine1.Gpus`, a `Fleet1` member's "gpus").
pub(crate) fn gpu_from_wire(
    (index, name, uuid, memory_total_bytes, memory_used_bytes, utilization_percent): proxies::WireGpu,
) -> GpuInfo {
    GpuInfo {
        index,
        name,
        uuid,
        memory_total_bytes,
        memory_used_bytes,
        utilization_percent,
    }
}

/// A runtime from its bus form (`Machine1.Runtimes`, a `Fleet1` member's "runtimes"): ""
/// is "none".
pub(crate) fn runtime_from_wire((name, python, torch, cuda): proxies::WireRuntime) -> RuntimeInfo {
    let some = |text: String| Some(text).filter(|t| !t.is_empty());
    RuntimeInfo {
        name,
        python,
        torch: some(torch),
        cuda: some(cuda),
    }
}

/// What `partagpuctl status` shows: the machine's status and the runtimes jobs may use
/// here. Its JSON is [`MachineStatus`]'s with a `runtimes` list added.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusView {
    /// What the machine has, lends and does now.
    #[serde(flatten)]
    pub machine: MachineStatus,
    /// Python runtimes jobs may use here, the default first.
    pub runtimes: Vec<RuntimeInfo>,
}

/// A connection to the local `partagpud`.
#[derive(Clone)]
pub struct Client {
    connection: zbus::Connection,
    machine: Machine1Proxy<'static>,
    sharing: Sharing1Proxy<'static>,
    security: Security1Proxy<'static>,
    room: Room1Proxy<'static>,
    fleet: Fleet1Proxy<'static>,
    jobs: Jobs1Proxy<'static>,
}

impl Client {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` if set).
    ///
    /// # Errors
    /// [`ClientError::NoBus`] when there is no system bus to talk to.
    pub async fn connect_system() -> Result<Self, ClientError> {
        let connection = zbus::Connection::system().await.map_err(ClientError::no_bus)?;
        Self::with_connection(connection).await
    }

    /// Uses an existing connection (tests, the app's shared connection).
    ///
    /// # Errors
    /// When the proxies cannot be built.
    pub async fn with_connection(connection: zbus::Connection) -> Result<Self, ClientError> {
        // Without caching, a one-shot command reads exactly what it asks for; long-lived
        // users (the app) subscribe to change streams instead.
        let no_cache = zbus::proxy::CacheProperties::No;
        let machine = Machine1Proxy::builder(&connection)
            .cache_properties(no_cache)
            .build()
            .await?;
        let sharing = Sharing1Proxy::builder(&connection)
            .cache_properties(no_cache)
            .build()
            .await?;
        let security = Security1Proxy::builder(&connection)
            .cache_properties(no_cache)
            .build()
            .await?;
        let room = Room1Proxy::builder(&connection)
            .cache_properties(no_cache)
            .build()
            .await?;
        let fleet = Fleet1Proxy::builder(&connection)
            .cache_properties(no_cache)
            .build()
            .await?;
        let jobs = Jobs1Proxy::builder(&connection)
            .cache_properties(no_cache)
            .build()
            .await?;
        Ok(Self {
            connection,
            machine,
            sharing,
            security,
            room,
            fleet,
            jobs,
        })
    }

    /// The underlying bus connection.
    pub fn connection(&self) -> &zbus::Connection {
        &self.connection
    }

    /// The raw `Machine1` proxy (for property change streams).
    #[must_use]
    pub fn machine(&self) -> &Machine1Proxy<'static> {
        &self.machine
    }

    /// The raw `Sharing1` proxy (for property change streams).
    #[must_use]
    pub fn sharing(&self) -> &Sharing1Proxy<'static> {
        &self.sharing
    }

    /// What this machine has, lends and does now, and its runtimes.
    ///
    /// # Errors
    /// [`ClientError::NotRunning`] when no service answers, or another bus error.
    pub async fn status(&self) -> Result<StatusView, ClientError> {
        Ok(StatusView {
            machine: self.machine_status().await?,
            runtimes: self.runtimes().await?,
        })
    }

    /// The Python runtimes jobs may use here (none from a service older than job execution).
    ///
    /// # Errors
    /// A bus error other than an unknown property.
    pub async fn runtimes(&self) -> Result<Vec<RuntimeInfo>, ClientError> {
        match self.machine.runtimes().await {
            Ok(runtimes) => Ok(runtimes.into_iter().map(runtime_from_wire).collect()),
            Err(zbus::Error::FDO(error)) if matches!(*error, zbus::fdo::Error::UnknownProperty(_)) => {
                Ok(Vec::new())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// What this machine has, lends and does now.
    ///
    /// # Errors
    /// [`ClientError::NotRunning`] when no service answers, or another bus error.
    pub async fn machine_status(&self) -> Result<MachineStatus, ClientError> {
        let resources = self.resources().await?;
        let state = self.sharing.state().await?;
        Ok(MachineStatus {
            version: self.machine.version().await?,
            display_name: self.sharing.display_name().await?,
            state: SharingState::from_wire(&state)
                .ok_or_else(|| ClientError::Protocol(format!("unknown sharing state '{state}'")))?,
            sharing_enabled: self.sharing.enabled().await?,
            paused: self.sharing.paused().await?,
            limits: self.limits().await?,
            resources,
            peer_port: self.machine.peer_port().await?,
        })
    }

    /// The limits now.
    ///
    /// # Errors
    /// A bus error.
    pub async fn limits(&self) -> Result<Limits, ClientError> {
        Ok(Limits {
            cpu_percent: self.sharing.cpu_limit().await?,
            ram_bytes: self.sharing.ram_limit().await?,
            gpu_percent: self.sharing.gpu_limit().await?,
        })
    }

    /// The latest probe of this machine.
    ///
    /// # Errors
    /// A bus error.
    pub async fn resources(&self) -> Result<Resources, ClientError> {
        let m = &self.machine;
        let (one, five, fifteen) = m.load_average().await?;
        let gpus = m.gpus().await?.into_iter().map(gpu_from_wire).collect();
        let (jobs_cpu, jobs_memory) = m.jobs_usage().await?;
        Ok(Resources {
            cpu: CpuInfo {
                model: m.cpu_model().await?,
                cores: m.cpu_cores().await?,
                usage_percent: m.cpu_usage().await?,
            },
            memory: MemoryInfo {
                total_bytes: m.memory_total().await?,
                available_bytes: m.memory_available().await?,
            },
            load: LoadAverage { one, five, fifteen },
            gpus,
            gpu_probe: GpuProbeStatus::from_wire(&m.gpu_status().await?),
            jobs: JobsUsage {
                cpu_percent: jobs_cpu,
                memory_bytes: jobs_memory,
            },
        })
    }

    /// Changes the limits that `update` names; the others stay.
    ///
    /// # Errors
    /// [`ClientError::InvalidArgument`] (nothing changed), [`ClientError::NotAuthorized`], …
    pub async fn set_limits(&self, update: LimitsUpdate) -> Result<(), ClientError> {
        let mut limits: HashMap<&str, Value<'_>> = HashMap::new();
        if let Some(cpu) = update.cpu_percent {
            limits.insert("cpu-percent", cpu.into());
        }
        if let Some(ram) = update.ram_bytes {
            limits.insert("ram-bytes", ram.into());
        }
        if let Some(gpu) = update.gpu_percent {
            limits.insert("gpu-percent", gpu.into());
        }
        Ok(self.sharing.set_limits(limits).await?)
    }

    /// Pauses (`true`) or resumes (`false`) lending.
    ///
    /// # Errors
    /// A bus or authorisation error.
    pub async fn set_paused(&self, paused: bool) -> Result<(), ClientError> {
        if paused {
            Ok(self.sharing.pause().await?)
        } else {
            Ok(self.sharing.resume().await?)
        }
    }

    /// Turns sharing on or off.
    ///
    /// # Errors
    /// A bus or authorisation error.
    pub async fn set_sharing(&self, enabled: bool) -> Result<(), ClientError> {
        Ok(self.sharing.set_enabled(enabled).await?)
    }

    /// Renames the machine.
    ///
    /// # Errors
    /// A bus, validation or authorisation error.
    pub async fn set_display_name(&self, name: &str) -> Result<(), ClientError> {
        Ok(self.sharing.set_display_name(name).await?)
    }

    /// Security events after `after`, at most `max` (0 = all).
    ///
    /// # Errors
    /// A bus error, or an event with an unknown severity.
    pub async fn security_events(&self, after: u64, max: u32) -> Result<Vec<SecurityEvent>, ClientError> {
        self.security
            .list_events(after, max)
            .await?
            .into_iter()
            .map(
                |(seq, time_unix_ms, severity, kind, source, node_id, message, count)| {
                    let severity = Severity::from_wire(&severity)
                        .ok_or_else(|| ClientError::Protocol(format!("unknown severity '{severity}'")))?;
                    Ok(SecurityEvent {
                        seq,
                        time_unix_ms,
                        severity,
                        kind,
                        source,
                        node_id,
                        message,
                        count,
                    })
                },
            )
            .collect()
    }
}
