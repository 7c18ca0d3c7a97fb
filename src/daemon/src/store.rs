// SPDX-License-Identifier: GPL-3.0-or-later
//! Crash-safe files in the state directory: write to a temporary file, fsync, rename over the
//! old one, fsync the directory. A reader sees the old content or the new one, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;

/// A state file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot save {}: {source}", path.display())]
pub struct StoreError {
    /// Which file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// What [`load_json`] found.
#[derive(Debug)]
pub enum Loaded<T> {
    /// No file yet.
    Missing,
    /// The file parsed.
    Ok(T),
    /// The file was unreadable or did not parse; it was moved aside to `kept_at`.
    Corrupt {
        /// Where the bad file now is.
        kept_at: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
}

/// Replaces `path` with `bytes` atomically and durably; the file gets `mode`.
///
/// # Errors
/// Any I/O failure; `path` then still holds its previous content.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
    let error = |source| StoreError {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let temporary = temporary_path(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        // The rename is the commit point; before it the old file is untouched.
        let _ = fs::remove_file(&temporary);
    }
    result.map_err(error)
}

fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Reads `path` as JSON. A file that does not parse is renamed to
/// `<name>.corrupt-<unix seconds>` (kept for the admin) and reported as [`Loaded::Corrupt`].
#[must_use]
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Loaded<T> {
    let reason = match fs::read(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
        Err(error) => error.to_string(),
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(value) => return Loaded::Ok(value),
            Err(error) => error.to_string(),
        },
    };
    move_aside(path, reason)
}

/// Renames a bad state file out of the way so the service can start on defaults.
#[must_use]
pub fn move_aside<T>(path: &Path, reason: String) -> Loaded<T> {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".corrupt-{seconds}"));
    let kept_at = path.with_file_name(name);
    match fs::rename(path, &kept_at) {
        Ok(()) => Loaded::Corrupt { kept_at, reason },
        Err(error) => Loaded::Corrupt {
            kept_at: path.to_owned(),
            reason: format!("{reason}; could not move it aside: {error}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.json");
        write_atomic(&path, b"{\"a\":1}", 0o600).unwrap();
        write_atomic(&path, b"{\"a\":2}", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":2}");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("policy.json")]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.json");
        write_atomic(&path, b"old", 0o644).unwrap();
        // A directory where the temporary file must go makes create_new fail.
        fs::create_dir(temporary_path(&path)).unwrap();
        assert!(write_atomic(&path, b"new", 0o644).is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
    }

    #[test]
    fn corrupt_json_is_moved_aside_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.json");
        fs::write(&path, b"{not json").unwrap();
        let Loaded::<serde_json::Value>::Corrupt { kept_at, .. } = load_json(&path) else {
            panic!("corrupt file not reported");
        };
        assert!(!path.exists());
        assert_eq!(fs::read(&kept_at).unwrap(), b"{not json");
        assert!(matches!(load_json::<serde_json::Value>(&path), Loaded::Missing));
    }
}
