// SPDX-License-Identifier: GPL-3.0-or-later
//! Shared, pure building blocks of PartaGPU.
//!
//! This crate holds what the service, the CLI, the app and the tests must agree on and that
//! needs no I/O: the bus and polkit names ([`ids`]), the resource and status DTOs
//! ([`resources`], [`status`]), the sharing policy and its validation ([`policy`]), human sizes
//! ([`size`]) and the security journal's event type ([`journal`]).
//!
//! It never touches D-Bus, the network, `/proc` or a runtime: callers pass every input in.

pub mod ids;
pub mod journal;
pub mod policy;
pub mod resources;
pub mod size;
pub mod status;

pub use policy::{Limits, LimitsUpdate, PolicyError, SharingPolicy, SharingState};
pub use resources::{CpuInfo, GpuInfo, GpuProbeStatus, LoadAverage, MemoryInfo, Resources};
