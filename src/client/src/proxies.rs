// SPDX-License-Identifier: GPL-3.0-or-later
//! zbus proxies of `dbus/org.partagpu.PartaGPU.Daemon.xml`, one trait per interface.
//!
//! Keep these in the same order and with the same signatures as the XML; the daemon's
//! contract test compares the served interfaces with that file.

use std::collections::HashMap;

use zbus::proxy;
use zbus::zvariant::Value;

/// A GPU on the bus: (index, name, uuid, memory total, memory used, utilisation %).
pub type WireGpu = (u32, String, String, u64, u64, u32);

/// A runtime on the bus: (name, python version, torch version or "", CUDA version or "").
pub type WireRuntime = (String, String, String, String);

/// A security event on the bus: (seq, time ms, severity, kind, source, node id, message, count).
pub type WireEvent = (u64, u64, String, String, String, String, String, u32);

/// `org.partagpu.PartaGPU.Daemon.Machine1`.
#[proxy(
    interface = "org.partagpu.PartaGPU.Daemon.Machine1",
    default_service = "org.partagpu.PartaGPU.Daemon",
    default_path = "/org/partagpu/PartaGPU/Daemon"
)]
pub trait Machine1 {
    /// Version of the running service.
    #[zbus(property)]
    fn version(&self) -> zbus::Result<String>;
    /// CPU model name.
    #[zbus(property)]
    fn cpu_model(&self) -> zbus::Result<String>;
    /// Logical CPUs.
    #[zbus(property)]
    fn cpu_cores(&self) -> zbus::Result<u32>;
    /// Busy share of the machine, percent.
    #[zbus(property)]
    fn cpu_usage(&self) -> zbus::Result<f64>;
    /// Total memory, bytes.
    #[zbus(property)]
    fn memory_total(&self) -> zbus::Result<u64>;
    /// Available memory, bytes.
    #[zbus(property)]
    fn memory_available(&self) -> zbus::Result<u64>;
    /// 1, 5 and 15 minute load averages.
    #[zbus(property)]
    fn load_average(&self) -> zbus::Result<(f64, f64, f64)>;
    /// (CPU percent, memory bytes) used by the room's jobs.
    #[zbus(property)]
    fn jobs_usage(&self) -> zbus::Result<(f64, u64)>;
    /// GPUs.
    #[zbus(property)]
    fn gpus(&self) -> zbus::Result<Vec<WireGpu>>;
    /// "available" or "unavailable: <reason>".
    #[zbus(property)]
    fn gpu_status(&self) -> zbus::Result<String>;
    /// TCP port of PGR/1.
    #[zbus(property)]
    fn peer_port(&self) -> zbus::Result<u16>;
    /// Python runtimes jobs may use here.
    #[zbus(property)]
    fn runtimes(&self) -> zbus::Result<Vec<WireRuntime>>;
}

/// `org.partagpu.PartaGPU.Daemon.Sharing1`.
#[proxy(
    interface = "org.partagpu.PartaGPU.Daemon.Sharing1",
    default_service = "org.partagpu.PartaGPU.Daemon",
    default_path = "/org/partagpu/PartaGPU/Daemon"
)]
pub trait Sharing1 {
    /// Sharing on or off.
    #[zbus(property)]
    fn enabled(&self) -> zbus::Result<bool>;
    /// Paused by the owner.
    #[zbus(property)]
    fn paused(&self) -> zbus::Result<bool>;
    /// "sharing", "paused" or "off".
    #[zbus(property)]
    fn state(&self) -> zbus::Result<String>;
    /// CPU share, percent.
    #[zbus(property)]
    fn cpu_limit(&self) -> zbus::Result<u32>;
    /// RAM lent, bytes.
    #[zbus(property)]
    fn ram_limit(&self) -> zbus::Result<u64>;
    /// GPU share, percent.
    #[zbus(property)]
    fn gpu_limit(&self) -> zbus::Result<u32>;
    /// Name in the room.
    #[zbus(property)]
    fn display_name(&self) -> zbus::Result<String>;

    /// Turns sharing on or off.
    fn set_enabled(&self, enabled: bool) -> zbus::Result<()>;
    /// Pauses lending.
    fn pause(&self) -> zbus::Result<()>;
    /// Resumes lending.
    fn resume(&self) -> zbus::Result<()>;
    /// Changes some limits ("cpu-percent" u, "ram-bytes" t, "gpu-percent" u).
    fn set_limits(&self, limits: HashMap<&str, Value<'_>>) -> zbus::Result<()>;
    /// Renames the machine.
    fn set_display_name(&self, name: &str) -> zbus::Result<()>;
}

/// `org.partagpu.PartaGPU.Daemon.Security1`.
#[proxy(
    interface = "org.partagpu.PartaGPU.Daemon.Security1",
    default_service = "org.partagpu.PartaGPU.Daemon",
    default_path = "/org/partagpu/PartaGPU/Daemon"
)]
pub trait Security1 {
    /// Sequence number of the newest event.
    #[zbus(property)]
    fn last_event(&self) -> zbus::Result<u64>;
    /// Events after `after`, at most `max` (0 = all).
    fn list_events(&self, after: u64, max: u32) -> zbus::Result<Vec<WireEvent>>;
    /// A new event was recorded.
    #[zbus(signal)]
    fn event_recorded(&self, seq: u64, severity: &str, kind: &str) -> zbus::Result<()>;
}

/// A room announced on mDNS: (room id, label, epoch, member addresses).
pub type WireVisibleRoom = (String, String, u32, Vec<String>);

/// `org.partagpu.PartaGPU.Daemon.Room1`.
#[proxy(
    interface = "org.partagpu.PartaGPU.Daemon.Room1",
    default_service = "org.partagpu.PartaGPU.Daemon",
    default_path = "/org/partagpu/PartaGPU/Daemon"
)]
pub trait Room1 {
    /// Whether this machine is in a room.
    #[zbus(property)]
    fn joined(&self) -> zbus::Result<bool>;
    /// Room id, 32 hex digits (empty outside a room).
    #[zbus(property)]
    fn room_id(&self) -> zbus::Result<String>;
    /// How many times the code was changed.
    #[zbus(property)]
    fn epoch(&self) -> zbus::Result<u32>;
    /// The creator's label.
    #[zbus(property)]
    fn label(&self) -> zbus::Result<String>;
    /// This machine's node id.
    #[zbus(property)]
    fn node_id(&self) -> zbus::Result<String>;
    /// This machine's fingerprint words.
    #[zbus(property)]
    fn fingerprint(&self) -> zbus::Result<String>;
    /// Creates a room; returns its code.
    #[zbus(name = "New")]
    fn create(&self, label: &str, language: &str) -> zbus::Result<String>;
    /// Joins with a code; returns (room id, label).
    fn join(&self, code: &str, options: HashMap<&str, Value<'_>>) -> zbus::Result<(String, String)>;
    /// Leaves the room.
    fn leave(&self) -> zbus::Result<bool>;
    /// New code, next epoch.
    fn rotate(&self) -> zbus::Result<String>;
    /// The current code (authorised callers only).
    fn reveal_code(&self) -> zbus::Result<String>;
    /// Rooms announced on the network.
    fn visible_rooms(&self) -> zbus::Result<Vec<WireVisibleRoom>>;
}

/// One `Fleet1.Members` entry.
pub type WireMember = HashMap<String, zbus::zvariant::OwnedValue>;

/// `org.partagpu.PartaGPU.Daemon.Fleet1`.
#[proxy(
    interface = "org.partagpu.PartaGPU.Daemon.Fleet1",
    default_service = "org.partagpu.PartaGPU.Daemon",
    default_path = "/org/partagpu/PartaGPU/Daemon"
)]
pub trait Fleet1 {
    /// This machine first, then every verified member.
    #[zbus(property)]
    fn members(&self) -> zbus::Result<Vec<WireMember>>;
    /// Announcements of this room not verified: (address, why).
    #[zbus(property)]
    fn unverified(&self) -> zbus::Result<Vec<(String, String)>>;
    /// Other rooms: (label, machines).
    #[zbus(property)]
    fn other_rooms(&self) -> zbus::Result<Vec<(String, u32)>>;
    /// Interfaces discovery uses: (name, address/prefix).
    #[zbus(property)]
    fn interfaces(&self) -> zbus::Result<Vec<(String, String)>>;
}

/// `org.partagpu.PartaGPU.Daemon.Jobs1`. Records travel as JSON text (docs/jobs.md).
#[proxy(
    interface = "org.partagpu.PartaGPU.Daemon.Jobs1",
    default_service = "org.partagpu.PartaGPU.Daemon",
    default_path = "/org/partagpu/PartaGPU/Daemon"
)]
pub trait Jobs1 {
    /// Submits a JSON JobSpec with its workspace tar to `node` ("" = here); returns the handle.
    fn submit(&self, spec: &str, workspace: &serde_bytes::Bytes, node: &str) -> zbus::Result<String>;
    /// One DDP training across machines of the room; returns the group job's handle.
    fn distribute(&self, spec: &str, workspace: &serde_bytes::Bytes, nodes: &str) -> zbus::Result<String>;
    /// Every job known here, newest first: a JSON array of records.
    fn list(&self) -> zbus::Result<String>;
    /// One JSON record; `job` is a handle or a unique id prefix.
    fn show(&self, job: &str) -> zbus::Result<String>;
    /// Output from `offset`, at most `max` bytes: (data, next offset, complete).
    fn logs(&self, job: &str, offset: u64, max: u32) -> zbus::Result<(Vec<u8>, u64, bool)>;
    /// Cancels a job.
    fn cancel(&self, job: &str) -> zbus::Result<()>;
    /// A read-only descriptor of a collected artifact.
    fn open_artifact(&self, job: &str, name: &str) -> zbus::Result<zbus::zvariant::OwnedFd>;
    /// A job changed state, or its output grew.
    #[zbus(signal)]
    fn job_changed(&self, job: &str, state: &str) -> zbus::Result<()>;
}
