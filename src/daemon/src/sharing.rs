// SPDX-License-Identifier: GPL-3.0-or-later
//! The owner's sharing policy, held in memory and persisted in `<state dir>/policy.json`.
//!
//! Every change is validated, then written to disk, and only then becomes the policy in
//! memory: a change the caller sees as done survives a crash, a refused one leaves no trace.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use partagpu_core::{PolicyError, SharingPolicy};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::store::{self, Loaded, StoreError};

/// File name of the policy inside the state directory.
pub const POLICY_FILE: &str = "policy.json";

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// Refused by validation.
    #[error(transparent)]
    Invalid(#[from] PolicyError),
    /// Could not be saved.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

#[derive(Serialize, Deserialize)]
struct PolicyFile {
    format: u32,
    policy: SharingPolicy,
}

const FORMAT: u32 = 1;

/// The policy and where it is kept.
pub struct SharingStore {
    path: PathBuf,
    ram_total_bytes: u64,
    policy: Mutex<SharingPolicy>,
    changes: tokio::sync::watch::Sender<u64>,
}

impl SharingStore {
    /// Loads the policy from `state_dir`, or starts from the config's defaults when there is
    /// none or it is corrupt (the bad file is kept beside, with a warning).
    ///
    /// # Errors
    /// When the config's defaults do not fit this machine, or the first save fails.
    pub fn open(
        state_dir: &Path,
        config: &Config,
        ram_total_bytes: u64,
        host_name: &str,
    ) -> Result<Self, ChangeError> {
        let path = state_dir.join(POLICY_FILE);
        let loaded = match store::load_json::<PolicyFile>(&path) {
            Loaded::Ok(file) if file.format != FORMAT => {
                store::move_aside(&path, format!("unknown format {}", file.format))
            }
            Loaded::Ok(mut file) => {
                // Less RAM than when the limit was set (a DIMM removed, another VM size):
                // keep the machine usable by lending at most what there is.
                if file.policy.limits.ram_bytes > ram_total_bytes {
                    tracing::warn!(
                        saved = file.policy.limits.ram_bytes,
                        total = ram_total_bytes,
                        "RAM limit above this machine's memory; lowered to the total"
                    );
                    file.policy.limits.ram_bytes = ram_total_bytes;
                }
                match file.policy.validate(ram_total_bytes) {
                    Ok(()) => Loaded::Ok(file.policy),
                    Err(error) => store::move_aside(&path, error.to_string()),
                }
            }
            Loaded::Missing => Loaded::Missing,
            Loaded::Corrupt { kept_at, reason } => Loaded::Corrupt { kept_at, reason },
        };
        let (policy, save) = match loaded {
            Loaded::Ok(policy) => (policy, false),
            Loaded::Missing => (config.initial_policy(ram_total_bytes, host_name)?, true),
            Loaded::Corrupt { kept_at, reason } => {
                tracing::warn!(
                    kept_at = %kept_at.display(),
                    %reason,
                    "saved sharing policy is unusable; it was kept aside and defaults are used"
                );
                (config.initial_policy(ram_total_bytes, host_name)?, true)
            }
        };
        let store = Self {
            path,
            ram_total_bytes,
            policy: Mutex::new(policy.clone()),
            changes: tokio::sync::watch::channel(0).0,
        };
        if save {
            store.save(&policy)?;
        }
        Ok(store)
    }

    /// The policy now.
    #[must_use]
    pub fn policy(&self) -> SharingPolicy {
        self.lock().clone()
    }

    /// Bumped after every change that took effect (the room hears of it at once).
    #[must_use]
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The machine's memory, against which RAM limits are checked.
    #[must_use]
    pub fn ram_total_bytes(&self) -> u64 {
        self.ram_total_bytes
    }

    /// Applies `change` to the current policy, validates and saves the result, then makes it
    /// current. Returns the policies before and after.
    ///
    /// # Errors
    /// The change's own error, a validation error, or a storage error; the policy is then
    /// unchanged in memory and on disk.
    pub fn change(
        &self,
        change: impl FnOnce(&SharingPolicy) -> Result<SharingPolicy, PolicyError>,
    ) -> Result<(SharingPolicy, SharingPolicy), ChangeError> {
        // Held while saving so two changes cannot interleave; no await happens under it.
        let mut current = self.lock();
        let next = change(&current)?;
        next.validate(self.ram_total_bytes)?;
        if next != *current {
            self.save(&next)?;
        }
        let changed = next != *current;
        let previous = std::mem::replace(&mut *current, next.clone());
        drop(current);
        if changed {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok((previous, next))
    }

    fn save(&self, policy: &SharingPolicy) -> Result<(), StoreError> {
        let file = PolicyFile {
            format: FORMAT,
            policy: policy.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
        bytes.push(b'\n');
        store::write_atomic(&self.path, &bytes, 0o644)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SharingPolicy> {
        // A panic while holding the lock cannot leave a half-applied policy: `change` only
        // assigns after the save succeeded.
        self.policy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use partagpu_core::{Limits, LimitsUpdate};

    const GIB: u64 = 1 << 30;

    fn open(dir: &Path) -> SharingStore {
        SharingStore::open(dir, &Config::default(), 8 * GIB, "pc-01").unwrap()
    }

    #[test]
    fn a_change_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let update = LimitsUpdate {
            cpu_percent: Some(70),
            ram_bytes: Some(2 * GIB),
            gpu_percent: Some(30),
        };
        store
            .change(|p| {
                Ok(SharingPolicy {
                    limits: p.limits.updated(update, 8 * GIB)?,
                    paused: true,
                    ..p.clone()
                })
            })
            .unwrap();
        let reopened = open(dir.path());
        assert_eq!(
            reopened.policy().limits,
            Limits {
                cpu_percent: 70,
                ram_bytes: 2 * GIB,
                gpu_percent: 30
            }
        );
        assert!(reopened.policy().paused);
    }

    #[test]
    fn a_refused_change_leaves_memory_and_disk_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let before = std::fs::read(dir.path().join(POLICY_FILE)).unwrap();
        let result = store.change(|p| {
            let limits = Limits {
                cpu_percent: 150,
                ..p.limits
            };
            Ok(SharingPolicy { limits, ..p.clone() })
        });
        assert!(matches!(
            result,
            Err(ChangeError::Invalid(PolicyError::CpuOutOfRange(150)))
        ));
        assert_eq!(
            store.policy(),
            SharingPolicy::default_for(8 * GIB, "pc-01".into())
        );
        assert_eq!(std::fs::read(dir.path().join(POLICY_FILE)).unwrap(), before);
    }

    #[test]
    fn a_corrupt_file_is_kept_aside_and_defaults_are_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(POLICY_FILE), b"\x00garbage").unwrap();
        let store = open(dir.path());
        assert_eq!(
            store.policy(),
            SharingPolicy::default_for(8 * GIB, "pc-01".into())
        );
        let kept: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with("policy.json.corrupt-"))
            .collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(std::fs::read(dir.path().join(&kept[0])).unwrap(), b"\x00garbage");
    }

    #[test]
    fn a_hand_edited_out_of_range_file_is_treated_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let mut policy = SharingPolicy::default_for(8 * GIB, "pc-01".into());
        policy.limits.gpu_percent = 400;
        let text = serde_json::to_string(&PolicyFile {
            format: FORMAT,
            policy,
        })
        .unwrap();
        std::fs::write(dir.path().join(POLICY_FILE), text).unwrap();
        assert_eq!(open(dir.path()).policy().limits.gpu_percent, 50);
    }

    #[test]
    fn a_ram_limit_above_a_shrunk_machine_is_lowered() {
        let dir = tempfile::tempdir().unwrap();
        let big = SharingStore::open(dir.path(), &Config::default(), 32 * GIB, "pc").unwrap();
        big.change(|p| {
            Ok(SharingPolicy {
                limits: Limits {
                    ram_bytes: 30 * GIB,
                    ..p.limits
                },
                ..p.clone()
            })
        })
        .unwrap();
        let small = SharingStore::open(dir.path(), &Config::default(), 8 * GIB, "pc").unwrap();
        assert_eq!(small.policy().limits.ram_bytes, 8 * GIB);
    }
}
