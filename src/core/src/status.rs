// SPDX-License-Identifier: GPL-3.0-or-later
//! The status of one machine as `partagpuctl status --json` prints it and the app shows it.

use serde::{Deserialize, Serialize};

use crate::{Limits, Resources, SharingState};

/// A snapshot of one machine: what it has, what it lends, whether it lends now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineStatus {
    /// Version of the running `partagpud`.
    pub version: String,
    /// How the room sees this machine.
    pub display_name: String,
    /// `sharing`, `paused` or `off`.
    pub state: SharingState,
    /// Sharing on or off.
    pub sharing_enabled: bool,
    /// Paused by the owner.
    pub paused: bool,
    /// What is lent.
    pub limits: Limits,
    /// What the machine has and how busy it is.
    pub resources: Resources,
    /// TCP port of the encrypted peer protocol.
    pub peer_port: u16,
}
