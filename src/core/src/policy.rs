// SPDX-License-Identifier: GPL-3.0-or-later
//! The owner's sharing policy: whether the machine lends, what it lends, under which name.
//!
//! Validation lives here so the service, the CLI and the app give the same answer and the
//! same message for the same input.

use serde::{Deserialize, Serialize};

use crate::size::format_size;

/// Longest display name, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 64;

/// Default CPU and GPU share lent by a fresh install, in percent.
pub const DEFAULT_SHARE_PERCENT: u32 = 50;

/// What the machine lends, as a share of the whole machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// CPU time as a percentage of the whole machine (all cores), 0–100.
    pub cpu_percent: u32,
    /// Memory lent, in bytes, at most the machine's total.
    pub ram_bytes: u64,
    /// Share of each lent GPU, 0–100 (enforced with CUDA MPS).
    pub gpu_percent: u32,
}

/// A partial change of [`Limits`]; `None` keeps the current value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitsUpdate {
    /// New CPU share, percent.
    pub cpu_percent: Option<u32>,
    /// New RAM limit, bytes.
    pub ram_bytes: Option<u64>,
    /// New GPU share, percent.
    pub gpu_percent: Option<u32>,
}

/// Everything the owner decides, persisted by the service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharingPolicy {
    /// Sharing on (the machine accepts work) or off (it refuses new work).
    pub enabled: bool,
    /// Paused: running work is frozen, nothing new starts; resume gives it back.
    pub paused: bool,
    /// What is lent.
    pub limits: Limits,
    /// How the room sees this machine.
    pub display_name: String,
}

/// The one word the UI shows for a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SharingState {
    /// Lending within the limits.
    Sharing,
    /// Sharing is on but the owner paused it.
    Paused,
    /// Sharing is off.
    Off,
}

/// Why a policy change was refused. Messages are complete sentences for end users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// CPU share above 100 %.
    #[error("CPU limit {0} % is out of range: it must be between 0 and 100 %")]
    CpuOutOfRange(u32),
    /// GPU share above 100 %.
    #[error("GPU limit {0} % is out of range: it must be between 0 and 100 %")]
    GpuOutOfRange(u32),
    /// More RAM than the machine has.
    #[error("RAM limit {} is more than this machine has ({})", format_size(*requested), format_size(*total))]
    RamAboveTotal {
        /// What was asked, bytes.
        requested: u64,
        /// What the machine has, bytes.
        total: u64,
    },
    /// A change that changes nothing was asked.
    #[error("no limit given: set at least one of CPU, RAM or GPU")]
    EmptyUpdate,
    /// Empty or blank display name.
    #[error("the machine name must not be empty")]
    EmptyName,
    /// Too long a display name.
    #[error("the machine name is {0} characters long; at most 64 are allowed")]
    NameTooLong(usize),
    /// Control characters in a display name.
    #[error("the machine name must not contain control characters")]
    NameControlCharacter,
}

impl Limits {
    /// The limits of a fresh install: half of everything.
    #[must_use]
    pub fn default_for(ram_total_bytes: u64) -> Self {
        Self {
            cpu_percent: DEFAULT_SHARE_PERCENT,
            ram_bytes: ram_total_bytes / 2,
            gpu_percent: DEFAULT_SHARE_PERCENT,
        }
    }

    /// Checks the ranges against a machine with `ram_total_bytes` of memory.
    ///
    /// # Errors
    /// The first field out of range, CPU then RAM then GPU.
    pub fn validate(&self, ram_total_bytes: u64) -> Result<(), PolicyError> {
        if self.cpu_percent > 100 {
            return Err(PolicyError::CpuOutOfRange(self.cpu_percent));
        }
        if self.ram_bytes > ram_total_bytes {
            return Err(PolicyError::RamAboveTotal {
                requested: self.ram_bytes,
                total: ram_total_bytes,
            });
        }
        if self.gpu_percent > 100 {
            return Err(PolicyError::GpuOutOfRange(self.gpu_percent));
        }
        Ok(())
    }

    /// The limits after `update`, validated as a whole; `self` is left untouched on error.
    ///
    /// # Errors
    /// [`PolicyError::EmptyUpdate`] when `update` sets nothing, or the validation error.
    pub fn updated(&self, update: LimitsUpdate, ram_total_bytes: u64) -> Result<Self, PolicyError> {
        if update == LimitsUpdate::default() {
            return Err(PolicyError::EmptyUpdate);
        }
        let next = Self {
            cpu_percent: update.cpu_percent.unwrap_or(self.cpu_percent),
            ram_bytes: update.ram_bytes.unwrap_or(self.ram_bytes),
            gpu_percent: update.gpu_percent.unwrap_or(self.gpu_percent),
        };
        next.validate(ram_total_bytes)?;
        Ok(next)
    }
}

impl SharingPolicy {
    /// The policy of a fresh install: sharing on, not paused, default limits.
    #[must_use]
    pub fn default_for(ram_total_bytes: u64, display_name: String) -> Self {
        Self {
            enabled: true,
            paused: false,
            limits: Limits::default_for(ram_total_bytes),
            display_name,
        }
    }

    /// The state word shown to users.
    #[must_use]
    pub fn state(&self) -> SharingState {
        match (self.enabled, self.paused) {
            (false, _) => SharingState::Off,
            (true, true) => SharingState::Paused,
            (true, false) => SharingState::Sharing,
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// The first invalid field.
    pub fn validate(&self, ram_total_bytes: u64) -> Result<(), PolicyError> {
        self.limits.validate(ram_total_bytes)?;
        validate_display_name(&self.display_name).map(|_| ())
    }
}

impl SharingState {
    /// The D-Bus and JSON form.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sharing => "sharing",
            Self::Paused => "paused",
            Self::Off => "off",
        }
    }

    /// Parses [`Self::as_str`]'s form.
    #[must_use]
    pub fn from_wire(wire: &str) -> Option<Self> {
        [Self::Sharing, Self::Paused, Self::Off]
            .into_iter()
            .find(|state| state.as_str() == wire)
    }
}

/// Trims `name` and checks it can be shown to the room.
///
/// # Errors
/// Empty, too long, or containing control characters.
pub fn validate_display_name(name: &str) -> Result<&str, PolicyError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(PolicyError::EmptyName);
    }
    let chars = name.chars().count();
    if chars > MAX_DISPLAY_NAME_CHARS {
        return Err(PolicyError::NameTooLong(chars));
    }
    if name.chars().any(char::is_control) {
        return Err(PolicyError::NameControlCharacter);
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn limits_in_range_are_accepted_at_the_bounds() {
        let limits = Limits {
            cpu_percent: 100,
            ram_bytes: 8 * GIB,
            gpu_percent: 0,
        };
        assert_eq!(limits.validate(8 * GIB), Ok(()));
    }

    #[test]
    fn each_limit_out_of_range_is_refused_with_its_own_message() {
        let base = Limits::default_for(8 * GIB);
        let cpu = Limits {
            cpu_percent: 150,
            ..base
        }
        .validate(8 * GIB)
        .unwrap_err();
        assert_eq!(
            cpu.to_string(),
            "CPU limit 150 % is out of range: it must be between 0 and 100 %"
        );
        let gpu = Limits {
            gpu_percent: 101,
            ..base
        }
        .validate(8 * GIB)
        .unwrap_err();
        assert_eq!(gpu, PolicyError::GpuOutOfRange(101));
        let ram = Limits {
            ram_bytes: 9 * GIB,
            ..base
        }
        .validate(8 * GIB)
        .unwrap_err();
        assert_eq!(
            ram.to_string(),
            "RAM limit 9.0 GiB is more than this machine has (8.0 GiB)"
        );
    }

    #[test]
    fn an_update_changes_only_what_it_names_and_nothing_on_error() {
        let base = Limits {
            cpu_percent: 10,
            ram_bytes: GIB,
            gpu_percent: 20,
        };
        let next = base
            .updated(
                LimitsUpdate {
                    cpu_percent: Some(50),
                    ..LimitsUpdate::default()
                },
                8 * GIB,
            )
            .unwrap();
        assert_eq!(
            next,
            Limits {
                cpu_percent: 50,
                ..base
            }
        );
        let refused = base.updated(
            LimitsUpdate {
                cpu_percent: Some(50),
                gpu_percent: Some(300),
                ram_bytes: None,
            },
            8 * GIB,
        );
        assert_eq!(refused, Err(PolicyError::GpuOutOfRange(300)));
        assert_eq!(
            base.updated(LimitsUpdate::default(), 8 * GIB),
            Err(PolicyError::EmptyUpdate)
        );
    }

    #[test]
    fn state_follows_enabled_then_paused() {
        let mut policy = SharingPolicy::default_for(8 * GIB, "pc-01".into());
        assert_eq!(policy.state(), SharingState::Sharing);
        policy.paused = true;
        assert_eq!(policy.state(), SharingState::Paused);
        policy.enabled = false;
        assert_eq!(policy.state(), SharingState::Off);
        for state in [SharingState::Sharing, SharingState::Paused, SharingState::Off] {
            assert_eq!(SharingState::from_wire(state.as_str()), Some(state));
        }
        assert_eq!(SharingState::from_wire("on"), None);
    }

    #[test]
    fn display_names_are_trimmed_and_checked() {
        assert_eq!(
            validate_display_name("  Salle B12 — poste 3 "),
            Ok("Salle B12 — poste 3")
        );
        assert_eq!(validate_display_name("   "), Err(PolicyError::EmptyName));
        assert_eq!(
            validate_display_name(&"é".repeat(65)),
            Err(PolicyError::NameTooLong(65))
        );
        assert_eq!(validate_display_name(&"é".repeat(64)).map(str::len), Ok(128));
        assert_eq!(
            validate_display_name("a\u{1b}[2Jb"),
            Err(PolicyError::NameControlCharacter)
        );
    }
}
