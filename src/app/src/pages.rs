// SPDX-License-Identifier: GPL-3.0-or-later
//! One relm4 component per page of the main window; each keeps its logic in a plain
//! struct next to it, tested without a display.

pub mod guide;
pub mod jobs;
pub mod room;
pub mod security;
pub mod sharing;
