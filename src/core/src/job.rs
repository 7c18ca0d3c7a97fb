// SPDX-License-Identifier: GPL-3.0-or-later
//! Jobs: what a submitter asks for, how a workspace is checked, the states a job goes
//! through, and how its output and artifacts are made safe to show and send.

pub mod artifacts;
pub mod checkpoint;
pub mod logs;
pub mod record;
pub mod spec;
pub mod state;
pub mod training;
pub mod wire;
pub mod workspace;
