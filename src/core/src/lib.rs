// SPDX-License-Identifier: GPL-3.0-or-later
//! Shared, pure building blocks of PartaGPU.
//!
//! This crate holds what the service, the CLI, the app and the tests must agree on and that
//! needs no I/O: the bus and polkit names ([`ids`]), the resource and status DTOs
//! ([`resources`], [`status`]), the sharing policy and its validation ([`policy`]), human sizes
//! ([`size`]), the security journal's event type ([`journal`]), what members tell each other
//! ([`fleet`]), room codes and identities
//! ([`room`]) and the sans-IO PGR/1 peer protocol: handshake, key schedule, record layer and
//! node authentication ([`protocol`], specified in `docs/protocol.md`).
//!
//! It never touches D-Bus, the network, `/proc` or a runtime: callers pass every input in,
//! random number generators included.

pub mod fleet;
pub mod ids;
pub mod job;
pub mod journal;
pub mod policy;
pub mod protocol;
pub mod resources;
pub mod room;
pub mod size;
pub mod status;

pub use policy::{Limits, LimitsUpdate, PolicyError, SharingPolicy, SharingState};
pub use resources::{CpuInfo, GpuInfo, GpuProbeStatus, JobsUsage, LoadAverage, MemoryInfo, Resources};
