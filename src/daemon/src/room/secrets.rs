// SPDX-License-Identifier: GPL-3.0-or-later
//! The one secrets file (PGR/1 §11): this machine's Ed25519 seed, the room it is in (id,
//! epoch, label, normalised code) and the machines pinned on first sight.
//!
//! It is the only file that holds the code, written 0600 in the 0700 state directory. The
//! normalised code is kept rather than only `pw` so that an authorised caller can ask for it
//! again (`RevealCode`): a teacher who closed the window must not have to rotate the room.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::store::{self, Loaded, StoreError};

/// File name in the state directory.
pub const SECRETS_FILE: &str = "secrets.json";

/// What the secrets file holds, as stored.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct StoredSecrets {
    /// This machine's Ed25519 seed, hex.
    pub node_seed: Zeroizing<String>,
    /// The room, when the machine is in one.
    #[serde(default)]
    pub room: Option<StoredRoom>,
    /// Pinned machines by node id (32 hex digits).
    #[serde(default)]
    pub pins: BTreeMap<String, StoredPin>,
    /// The tag of the machine id this file was made on ([`super::machine`]); absent in files
    /// of older versions and on machines without a machine id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// The room part of the secrets file.
#[derive(Clone, Serialize, Deserialize)]
pub struct StoredRoom {
    /// 32 hex digits.
    pub room_id: String,
    /// Current epoch (§2.5).
    pub epoch: u32,
    /// The creator's label, maybe empty.
    pub label: String,
    /// The normalised code (§2.3).
    pub code: Zeroizing<String>,
}

/// A machine seen on an authenticated session (TOFU, §5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPin {
    /// Its Ed25519 public key, hex.
    pub public_key: String,
    /// The last address it was seen at (dialled or connecting from).
    pub address: String,
    /// First and last authenticated session, milliseconds since the Unix epoch.
    pub first_seen_ms: u64,
    /// See `first_seen_ms`.
    pub last_seen_ms: u64,
}

/// Why the secrets file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// Reading or writing failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The file exists but is not ours to trust (moved aside, a new identity is made).
    #[error("the secrets file {} was unreadable and was kept at {}: {reason}", path.display(), kept_at.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where it now is.
        kept_at: PathBuf,
        /// Why (never contains the content).
        reason: String,
    },
}

/// Reads the secrets file; `Ok(None)` when there is none yet.
///
/// # Errors
/// [`SecretsError::Corrupt`] after moving a damaged file aside (the caller logs it and
/// starts with a new identity, which pinned peers will see as a key change: that is honest).
pub fn load(state_dir: &Path) -> Result<Option<StoredSecrets>, SecretsError> {
    let path = state_dir.join(SECRETS_FILE);
    match store::load_json::<StoredSecrets>(&path) {
        Loaded::Missing => Ok(None),
        Loaded::Ok(secrets) => Ok(Some(secrets)),
        // serde_json's message can quote input: never pass it on, it could be the code.
        Loaded::Corrupt { kept_at, .. } => Err(SecretsError::Corrupt {
            path,
            kept_at,
            reason: "it is not valid JSON of the expected shape".into(),
        }),
    }
}

/// Writes the secrets file atomically, mode 0600.
///
/// # Errors
/// [`StoreError`] when it cannot be written; the previous file is kept.
pub fn save(state_dir: &Path, secrets: &StoredSecrets) -> Result<(), StoreError> {
    let bytes = Zeroizing::new(serde_json::to_vec_pretty(secrets).unwrap_or_default());
    store::write_atomic(&state_dir.join(SECRETS_FILE), &bytes, 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn secrets_round_trip_in_a_0600_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        let mut secrets = StoredSecrets {
            node_seed: Zeroizing::new("11".repeat(32)),
            ..StoredSecrets::default()
        };
        secrets.room = Some(StoredRoom {
            room_id: "ab".repeat(16),
            epoch: 3,
            label: "Salle B12".into(),
            code: Zeroizing::new("abandon-ability-able-about".into()),
        });
        save(dir.path(), &secrets).unwrap();
        let path = dir.path().join(SECRETS_FILE);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let loaded = load(dir.path()).unwrap().unwrap();
        let room = loaded.room.unwrap();
        assert_eq!((room.epoch, room.label.as_str()), (3, "Salle B12"));
        assert_eq!(room.code.as_str(), "abandon-ability-able-about");
    }

    #[test]
    fn a_damaged_file_is_kept_aside_and_its_content_is_not_quoted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SECRETS_FILE), b"{\"node_seed\": abandon-ability").unwrap();
        let error = load(dir.path()).err().unwrap();
        let message = error.to_string();
        assert!(!message.contains("abandon"), "{message}");
        assert!(matches!(error, SecretsError::Corrupt { .. }));
        assert!(load(dir.path()).unwrap().is_none());
    }
}
