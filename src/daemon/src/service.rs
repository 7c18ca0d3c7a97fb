// SPDX-License-Identifier: GPL-3.0-or-later
//! The bus objects. Everything is served at [`partagpu_core::ids::OBJECT_PATH`]:
//!
//! ```text
//! /org/partagpu/PartaGPU/Daemon
//! ├── org.partagpu.PartaGPU.Daemon.Machine1   (machine.rs: hardware, live load)
//! ├── org.partagpu.PartaGPU.Daemon.Sharing1   (sharing.rs: policy, pause, limits)
//! ├── org.partagpu.PartaGPU.Daemon.Security1  (security.rs: the journal)
//! ├── org.partagpu.PartaGPU.Daemon.Room1      (room.rs: the room, its code)
//! ├── org.partagpu.PartaGPU.Daemon.Fleet1     (fleet.rs: the room's machines, live)
//! └── org.partagpu.PartaGPU.Daemon.Jobs1      (jobs.rs: jobs run here and sent from here)
//! ```
//!
//! Handlers validate, authorise the caller, hand the work to the owning store, and emit
//! property changes; they never hold a lock across an `.await`.

pub mod fleet;
pub mod jobs;
pub mod machine;
pub mod room;
pub mod security;
pub mod sharing;

pub use fleet::FleetIface;
pub use jobs::JobsIface;
pub use machine::{MachineIface, MachineState};
pub use room::RoomIface;
pub use security::SecurityIface;
pub use sharing::SharingIface;
