// SPDX-License-Identifier: GPL-3.0-or-later
//! Names that form the public contract of the service: bus name, object path, interface
//! names, error names and polkit action ids. `dbus/*.xml` and `polkit/*.policy` use the same
//! strings; tests check that they agree.

/// Application id, the prefix of every other name.
pub const APP_ID: &str = "org.partagpu.PartaGPU";

/// Well-known name of `partagpud` on the system bus.
pub const BUS_NAME: &str = "org.partagpu.PartaGPU.Daemon";

/// The one object that carries every interface of the service.
pub const OBJECT_PATH: &str = "/org/partagpu/PartaGPU/Daemon";

/// Read-only view of this machine: hardware, live load, version.
pub const MACHINE_INTERFACE: &str = "org.partagpu.PartaGPU.Daemon.Machine1";

/// What this machine lends and whether it lends it now.
pub const SHARING_INTERFACE: &str = "org.partagpu.PartaGPU.Daemon.Sharing1";

/// The security journal.
pub const SECURITY_INTERFACE: &str = "org.partagpu.PartaGPU.Daemon.Security1";

/// The room: lifecycle, public facts, the authorised reveal.
pub const ROOM_INTERFACE: &str = "org.partagpu.PartaGPU.Daemon.Room1";

/// The machines of the room, live.
pub const FLEET_INTERFACE: &str = "org.partagpu.PartaGPU.Daemon.Fleet1";

/// Jobs run here and jobs submitted from here.
pub const JOBS_INTERFACE: &str = "org.partagpu.PartaGPU.Daemon.Jobs1";

/// Prefix of the stable D-Bus error names (`<prefix>.NotAuthorized`, …).
pub const ERROR_PREFIX: &str = "org.partagpu.PartaGPU.Daemon.Error";

/// Default TCP port of the encrypted peer protocol (PGR/1).
pub const DEFAULT_PEER_PORT: u16 = 7655;

/// Polkit action ids, one per privileged verb.
pub mod actions {
    /// Pause or resume lending (the owner takes the machine back).
    pub const PAUSE: &str = "org.partagpu.PartaGPU.Daemon.pause";
    /// Turn sharing on or off.
    pub const SET_SHARING: &str = "org.partagpu.PartaGPU.Daemon.set-sharing";
    /// Change the CPU, RAM and GPU limits.
    pub const SET_LIMITS: &str = "org.partagpu.PartaGPU.Daemon.set-limits";
    /// Rename the machine as the room sees it.
    pub const SET_NAME: &str = "org.partagpu.PartaGPU.Daemon.set-name";

    /// Create, join, leave a room, or change its code.
    pub const MANAGE_ROOM: &str = "org.partagpu.PartaGPU.Daemon.manage-room";
    /// Show the current room code again.
    pub const REVEAL_CODE: &str = "org.partagpu.PartaGPU.Daemon.reveal-code";

    /// Submit a job (to this machine or a member of the room).
    pub const SUBMIT_JOB: &str = "org.partagpu.PartaGPU.Daemon.submit-job";
    /// Cancel a job someone else submitted (the owner taking the machine back from one job).
    pub const MANAGE_JOBS: &str = "org.partagpu.PartaGPU.Daemon.manage-jobs";

    /// Every action, for the consistency test with `polkit/*.policy`.
    pub const ALL: &[&str] = &[
        PAUSE,
        SET_SHARING,
        SET_LIMITS,
        SET_NAME,
        MANAGE_ROOM,
        REVEAL_CODE,
        SUBMIT_JOB,
        MANAGE_JOBS,
    ];
}
