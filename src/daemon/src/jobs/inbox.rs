// SPDX-License-Identifier: GPL-3.0-or-later
//! Checkpoints to start from (a spec's `resume_checkpoint`) that arrive before their job is
//! accepted: from a member over PGR/1 (peer/upload.rs), or from a local user as a file
//! descriptor over D-Bus (`Jobs1.DistributeResuming`). Each is written to a new file of the
//! service's `incoming/` directory, checked against what the spec announced, and synced;
//! a file that is not kept is removed, and the directory is emptied at every start.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use partagpu_core::job::checkpoint::MAX_CHECKPOINT_BYTES;
use partagpu_core::job::state::ArtifactInfo;
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha256};

/// Free space left on the service's disk after a checkpoint is written: a training must not
/// fill the disk its owner works on.
const DISK_MARGIN: u64 = 256 << 20;
/// Bytes read at a time from a local file descriptor.
const READ_CHUNK: usize = 1 << 20;

/// The inbox under `state_dir`, emptied (what is there belongs to no job) and made 0700.
///
/// # Errors
/// The directory cannot be made.
pub fn open(state_dir: &Path) -> Result<PathBuf, crate::store::StoreError> {
    let inbox = state_dir.join("incoming");
    let _ = std::fs::remove_dir_all(&inbox);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&inbox)
        .map_err(|source| crate::store::StoreError {
            path: inbox.clone(),
            source,
        })?;
    Ok(inbox)
}

/// A name for a new file of `inbox`.
fn new_name(inbox: &Path) -> PathBuf {
    inbox.join(format!("{:016x}.part", OsRng.next_u64()))
}

/// `to` made a second name of the file at `from`: a hard link on the same disk, else a copy.
/// Either way a later replacement of `from` does not change `to`.
///
/// # Errors
/// Neither could be made.
pub fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::hard_link(from, to).or_else(|_| std::fs::copy(from, to).map(drop))
}

/// The file at `path` (which stays where it is) under a new name of `inbox`, as a checkpoint
/// received from a member would be.
///
/// # Errors
/// The sentence to answer: it cannot be read.
pub fn link_in(inbox: &Path, path: &Path) -> Result<PathBuf, String> {
    let name = new_name(inbox);
    link_or_copy(path, &name).map_err(|e| format!("the checkpoint to start from cannot be read: {e}"))?;
    Ok(name)
}

/// A file of the inbox being written: removed on drop unless [`Self::keep`] was called.
#[derive(Debug)]
pub struct Partial(Option<PathBuf>);

impl Partial {
    /// A new file in `inbox`, 0600, and its guard.
    ///
    /// # Errors
    /// The sentence to answer: the file cannot be made.
    pub fn create(inbox: &Path) -> Result<(File, Partial), String> {
        let path = new_name(inbox);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("this machine cannot keep the checkpoint to start from: {e}"))?;
        Ok((file, Partial(Some(path))))
    }

    /// The file stays; its path.
    #[must_use]
    pub fn keep(mut self) -> PathBuf {
        self.0.take().unwrap_or_default()
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Why this machine cannot keep a checkpoint of `size` bytes in `inbox`, before any is sent.
#[must_use]
pub fn no_room_for(inbox: &Path, size: u64) -> Option<String> {
    let stat = rustix::fs::statvfs(inbox).ok()?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    (free < size.saturating_add(DISK_MARGIN)).then(|| {
        format!(
            "this machine has {} MiB free on its disk, too little for the checkpoint to start from ({} MiB)",
            free >> 20,
            size >> 20
        )
    })
}

/// Copies a checkpoint a local user passed as an open file (read with the user's own rights
/// when they opened it) into `inbox`: it must be a regular file of exactly the announced
/// size and SHA-256. Blocking: run it off the async threads.
///
/// # Errors
/// The sentence to answer the caller with.
pub fn copy_from(mut source: File, announced: &ArtifactInfo, inbox: &Path) -> Result<PathBuf, String> {
    let meta = source
        .metadata()
        .map_err(|e| format!("the checkpoint passed cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("the checkpoint passed is not a regular file".into());
    }
    if announced.size > MAX_CHECKPOINT_BYTES || meta.len() != announced.size {
        return Err(format!(
            "the checkpoint passed has {} bytes, its spec announced {}",
            meta.len(),
            announced.size
        ));
    }
    if let Some(why) = no_room_for(inbox, announced.size) {
        return Err(why);
    }
    let (mut file, partial) = Partial::create(inbox)?;
    let mut hash = Sha256::new();
    let mut total = 0u64;
    let mut chunk = vec![0; READ_CHUNK];
    let failed = |e: std::io::Error| format!("the checkpoint passed cannot be copied: {e}");
    loop {
        let read = source.read(&mut chunk).map_err(failed)?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > announced.size {
            return Err("the checkpoint passed grew while it was read".into());
        }
        hash.update(&chunk[..read]);
        file.write_all(&chunk[..read]).map_err(failed)?;
    }
    if total != announced.size || hex::encode(hash.finalize()) != announced.sha256 {
        return Err(
            "the checkpoint passed does not match its size and SHA-256 (it changed while it was read?)"
                .into(),
        );
    }
    file.sync_all().map_err(failed)?;
    Ok(partial.keep())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn announced(data: &[u8]) -> ArtifactInfo {
        ArtifactInfo {
            name: "partagpu-checkpoint.pt".into(),
            size: data.len() as u64,
            sha256: hex::encode(Sha256::digest(data)),
        }
    }

    #[test]
    fn only_the_announced_regular_file_is_kept() {
        let inbox = tempfile::tempdir().unwrap();
        let source = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(source.path(), b"state of step 4").unwrap();
        let open = || File::open(source.path()).unwrap();
        let kept = copy_from(open(), &announced(b"state of step 4"), inbox.path()).unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"state of step 4");
        std::fs::remove_file(kept).unwrap();

        let other = announced(b"state of step 5");
        let error = copy_from(open(), &other, inbox.path()).unwrap_err();
        assert!(error.contains("does not match its size and SHA-256"), "{error}");
        let shorter = announced(b"state");
        assert!(copy_from(open(), &shorter, inbox.path())
            .unwrap_err()
            .contains("has 15 bytes, its spec announced 5"));
        let directory = File::open(inbox.path()).unwrap();
        assert_eq!(
            copy_from(directory, &shorter, inbox.path()).unwrap_err(),
            "the checkpoint passed is not a regular file"
        );
        // Nothing is left of the refused ones.
        assert_eq!(std::fs::read_dir(inbox.path()).unwrap().count(), 0);
    }
}
