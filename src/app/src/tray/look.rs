// SPDX-License-Identifier: GPL-3.0-or-later
//! What the tray shows, without D-Bus: the icon for sharing / paused / off / busy, the
//! sentence of its tooltip and menu, and what its toggle item does.

use partagpu_core::job::record::JobRecord;
use partagpu_core::status::MachineStatus;
use partagpu_core::SharingState;

use crate::i18n::{i18n, ni18n_f};
use crate::pages::sharing::is_running_here;

/// Icon names, installed under hicolor/symbolic/apps (data/icons).
pub const ICON_SHARING: &str = "org.partagpu.PartaGPU-sharing-symbolic";
/// Paused by the owner.
pub const ICON_PAUSED: &str = "org.partagpu.PartaGPU-paused-symbolic";
/// Sharing off, or no service to ask.
pub const ICON_OFF: &str = "org.partagpu.PartaGPU-off-symbolic";
/// Sharing, with jobs running here now.
pub const ICON_BUSY: &str = "org.partagpu.PartaGPU-busy-symbolic";

/// What the toggle item of the menu asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    /// "Pause sharing": the machine is lent now.
    Pause,
    /// "Resume sharing": paused by the owner.
    Resume,
    /// "Turn sharing on": sharing is off.
    TurnOn,
}

impl Toggle {
    /// The state the machine is asked to reach.
    #[must_use]
    pub fn target(self) -> SharingState {
        match self {
            Toggle::Pause => SharingState::Paused,
            Toggle::Resume | Toggle::TurnOn => SharingState::Sharing,
        }
    }

    /// The menu label, translated.
    #[must_use]
    pub fn label(self) -> String {
        match self {
            Toggle::Pause => i18n("Pause sharing"),
            Toggle::Resume => i18n("Resume sharing"),
            Toggle::TurnOn => i18n("Turn sharing on"),
        }
    }
}

/// Everything the tray item shows; compared before each update so an unchanged look sends
/// no D-Bus signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayLook {
    /// Icon name.
    pub icon: &'static str,
    /// One sentence: the state and the jobs here (tooltip and the menu's first line).
    pub summary: String,
    /// The toggle item; `None` while the service cannot be asked.
    pub toggle: Option<Toggle>,
}

/// Computes the look from what the service last said.
#[derive(Debug, Default)]
pub struct TrayModel {
    status: Option<SharingState>,
    jobs_here: u32,
    service_running: bool,
}

impl TrayModel {
    /// The service is on the bus (or gone: its state is then unknown).
    pub fn set_service_running(&mut self, running: bool) {
        self.service_running = running;
        if !running {
            self.status = None;
            self.jobs_here = 0;
        }
    }

    /// A new status of this machine.
    pub fn set_status(&mut self, status: &MachineStatus) {
        self.status = Some(status.state);
    }

    /// Every job record known here.
    pub fn set_jobs(&mut self, jobs: &[JobRecord]) {
        let here = jobs.iter().filter(|job| is_running_here(job)).count();
        self.jobs_here = u32::try_from(here).unwrap_or(u32::MAX);
    }

    /// What the tray shows now.
    #[must_use]
    pub fn look(&self) -> TrayLook {
        let Some(state) = self.status.filter(|_| self.service_running) else {
            let summary = if self.service_running {
                i18n("Connecting to the PartaGPU service…")
            } else {
                i18n("The PartaGPU service is not running")
            };
            return TrayLook {
                icon: ICON_OFF,
                summary,
                toggle: None,
            };
        };
        let count = self.jobs_here.to_string();
        let (icon, summary, toggle) = match state {
            SharingState::Sharing if self.jobs_here > 0 => (
                ICON_BUSY,
                ni18n_f(
                    "Sharing: {} job runs here",
                    "Sharing: {} jobs run here",
                    self.jobs_here,
                    &[&count],
                ),
                Toggle::Pause,
            ),
            SharingState::Sharing => (ICON_SHARING, i18n("Sharing: nothing runs here"), Toggle::Pause),
            SharingState::Paused if self.jobs_here > 0 => (
                ICON_PAUSED,
                ni18n_f(
                    "Paused: {} job is frozen",
                    "Paused: {} jobs are frozen",
                    self.jobs_here,
                    &[&count],
                ),
                Toggle::Resume,
            ),
            SharingState::Paused => (
                ICON_PAUSED,
                i18n("Paused: this machine lends nothing"),
                Toggle::Resume,
            ),
            SharingState::Off => (ICON_OFF, i18n("Sharing is off"), Toggle::TurnOn),
        };
        TrayLook {
            icon,
            summary,
            toggle: Some(toggle),
        }
    }
}

#[cfg(test)]
#[path = "look_tests.rs"]
mod tests;
