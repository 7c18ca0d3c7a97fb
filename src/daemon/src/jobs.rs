// SPDX-License-Identifier: GPL-3.0-or-later
//! Jobs run on this machine for members of the room: their cgroups, their sandbox, their
//! network, their artifacts, and the durable record of their states.

pub mod artifacts;
pub mod cgroup;
pub mod gpu;
pub mod launch;
pub mod netfilter;
pub mod runtime;
pub mod sandbox;
pub mod user;
pub mod workspace;
