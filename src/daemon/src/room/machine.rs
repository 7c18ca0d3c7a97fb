// SPDX-License-Identifier: GPL-3.0-or-later
//! Which machine a state directory belongs to, so that a disk image copied onto 20 PCs does
//! not give them all one identity key.
//!
//! A lab images one PC on which the service has run: its `/var/lib/partagpu` (the identity
//! seed, pins, jobs) is copied with the disk. Imaging tools and systemd give each copy its
//! own `/etc/machine-id` (an image is captured with that file emptied, and systemd writes a
//! new id at the first boot), so the secrets file records a tag of the machine id it was made
//! on, and a copy sees another one. The tag is an HMAC of the machine id, as machine-id(5)
//! asks of programs that keep an identifier of the machine: the id itself is never stored.

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Where the machine id is, on every systemd system.
pub const MACHINE_ID_PATH: &str = "/etc/machine-id";

/// The message of the HMAC: this program's own, fixed, so that the tag means nothing to
/// anyone else.
const APP_ID: &[u8] = b"partagpu state directory owner v1";

/// A tag of this machine's id (64 hex digits); no secret, but not the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineTag(String);

impl MachineTag {
    /// The tag of the machine id in `path`; `None` when there is none to trust: missing,
    /// empty (an image about to get one), `uninitialized` (systemd's first boot) or not 32 hex
    /// digits. The state directory is then not bound to a machine, as before this existed.
    #[must_use]
    pub fn read(path: &Path) -> Option<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let tag = Self::of_machine_id(&text);
                if tag.is_none() {
                    tracing::info!(path = %path.display(), "no usable machine id; the state directory is not tied to this machine");
                }
                tag
            }
            Err(error) => {
                tracing::info!(path = %path.display(), %error, "no machine id; the state directory is not tied to this machine");
                None
            }
        }
    }

    /// The tag of a machine id as written in the file (one line of 32 hex digits).
    #[must_use]
    pub fn of_machine_id(text: &str) -> Option<Self> {
        let id = text.trim_end_matches('\n');
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let key = hex::decode(id.to_ascii_lowercase()).ok()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
        mac.update(APP_ID);
        Some(Self(hex::encode(mac.finalize().into_bytes())))
    }

    /// The tag as stored.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_machine_id_has_a_tag_and_the_tag_is_not_the_id() {
        let id = "3d1219c7c4c5404aaa1f6d2a48adfda4";
        let tag = MachineTag::of_machine_id(&format!("{id}\n")).unwrap();
        assert_eq!(tag.as_str().len(), 64);
        assert!(!tag.as_str().contains(id));
        assert_eq!(MachineTag::of_machine_id(id), Some(tag.clone()));
        assert_eq!(MachineTag::of_machine_id(&id.to_uppercase()), Some(tag.clone()));
        let other = MachineTag::of_machine_id("3d1219c7c4c5404aaa1f6d2a48adfda5").unwrap();
        assert_ne!(other, tag);
        for bad in [
            "",
            "\n",
            "uninitialized\n",
            "3d1219c7",
            &format!("{id}{id}"),
            "zz1219c7c4c5404aaa1f6d2a48adfda4",
        ] {
            assert_eq!(MachineTag::of_machine_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_missing_file_has_no_tag() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(MachineTag::read(&dir.path().join("machine-id")), None);
        std::fs::write(
            dir.path().join("machine-id"),
            "0123456789abcdef0123456789abcdef\n",
        )
        .unwrap();
        assert!(MachineTag::read(&dir.path().join("machine-id")).is_some());
    }
}
