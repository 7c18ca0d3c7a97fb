// SPDX-License-Identifier: GPL-3.0-or-later
//! Copying one checked file out of the workspace, and the directories the copies go into.

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use partagpu_core::job::state::ArtifactInfo;
use rustix::fs::{fstat, openat, FileType, Mode, OFlags, Stat};
use sha2::{Digest, Sha256};

use super::{check_kind, ws_err, Collector, SAFE};
use crate::jobs::artifacts::{ArtifactIoError, CollectedArtifact};

impl Collector<'_> {
    pub(super) fn copy(
        &mut self,
        dir: &OwnedFd,
        name: &CStr,
        seen: &Stat,
        path: String,
    ) -> Result<(), ArtifactIoError> {
        let fd = openat(dir, name, SAFE, Mode::empty()).map_err(ws_err(&path))?;
        // The job is gone but its files may still be swapped under us: check what was opened.
        let st = fstat(&fd).map_err(ws_err(&path))?;
        let kind = FileType::from_raw_mode(st.st_mode);
        if st.st_dev != seen.st_dev || st.st_ino != seen.st_ino {
            self.refuse(path, "was replaced while it was being collected");
            return Ok(());
        }
        if let Err(why) = check_kind(kind, &st) {
            self.refuse(path, why);
            return Ok(());
        }
        if self.out.artifacts.len() >= self.max_files {
            return Err(ArtifactIoError::TooMany {
                limit: self.max_files,
                path,
            });
        }
        let stored = self.dest.join(&path);
        if let Some(parent) = stored.parent() {
            self.mkdir(parent.to_owned())?;
        }
        let dest_err = |source| ArtifactIoError::Destination {
            path: stored.clone(),
            source,
        };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nofollow())
            .open(&stored)
            .map_err(dest_err)?;
        self.created.push(stored.clone());
        let mut input = File::from(fd);
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = input.read(&mut buf).map_err(|e| ArtifactIoError::Workspace {
                path: format!("/{path}"),
                source: e,
            })?;
            if n == 0 {
                break;
            }
            size += n as u64;
            if self.out.total_bytes + size > self.max_total {
                return Err(ArtifactIoError::TooLarge {
                    limit: self.max_total,
                    path,
                });
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(dest_err)?;
        }
        out.sync_all().map_err(dest_err)?;
        self.out.total_bytes += size;
        let info = ArtifactInfo {
            name: path,
            size,
            sha256: hex::encode(hasher.finalize()),
        };
        self.out.artifacts.push(CollectedArtifact { info, stored });
        Ok(())
    }

    /// Creates `dir` and its missing parents (0700), remembering each one it made.
    pub(super) fn mkdir(&mut self, dir: PathBuf) -> Result<(), ArtifactIoError> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            if !parent.as_os_str().is_empty() {
                self.mkdir(parent.to_owned())?;
            }
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|source| ArtifactIoError::Destination {
                path: dir.clone(),
                source,
            })?;
        self.created.push(dir);
        Ok(())
    }

    /// Makes the new directory entries durable, deepest first.
    pub(super) fn sync_dirs(&self) -> Result<(), ArtifactIoError> {
        let mut dirs: Vec<&Path> = self
            .out
            .artifacts
            .iter()
            .filter_map(|a| a.stored.parent())
            .collect();
        dirs.extend(self.created.iter().filter_map(|p| p.parent()));
        dirs.sort_unstable();
        dirs.dedup();
        for dir in dirs.into_iter().rev() {
            let sync = File::open(dir).and_then(|d| d.sync_all());
            sync.map_err(|source| ArtifactIoError::Destination {
                path: dir.to_owned(),
                source,
            })?;
        }
        Ok(())
    }
}

/// O_NOFOLLOW as the raw flag std wants: the copy must not land where a link points.
fn nofollow() -> i32 {
    OFlags::NOFOLLOW.bits() as i32
}
