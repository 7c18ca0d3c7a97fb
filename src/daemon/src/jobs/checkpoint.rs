// SPDX-License-Identifier: GPL-3.0-or-later
//! The executing side of shipping checkpoints (docs/distribute.md, "Checkpoints"): a copy of
//! the checkpoint a running job's index names, taken out of its workspace with the care of
//! artifacts (no links followed, no special or hard-linked files, bytes counted as read).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use partagpu_core::job::checkpoint::{
    parse_index, IndexError, ShippedCheckpoint, INDEX_FILE, MAX_CHECKPOINT_BYTES, MAX_INDEX_BYTES,
};

use partagpu_core::job::state::JobState;

use super::artifacts::{collect, ArtifactIoError, CollectedArtifact, Collection};
use super::manager::{JobEntry, Shared};

#[cfg(test)]
mod tests;

/// Why no copy could be taken.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointIoError {
    /// The index is not what `partagpu.checkpoint.save()` writes.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Reading the workspace or writing the copy failed, or the checkpoint is too large.
    #[error(transparent)]
    Copy(#[from] ArtifactIoError),
    /// The index or the checkpoint is a link, a special or a hard-linked file.
    #[error("the checkpoint file {0} was refused: {1}")]
    Refused(String, String),
    /// The copied index could not be read back.
    #[error("Could not read the copied checkpoint index: {0}.")]
    Read(#[from] std::io::Error),
}

/// A copy of a job's checkpoint, in a directory of the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Its step, name, size and SHA-256 (as read).
    pub shipped: ShippedCheckpoint,
    /// Where the copy lies.
    pub path: PathBuf,
}

/// Copies the checkpoint that the index in `workspace` names into `dest` (emptied first),
/// when its step is above `after_step`. `None` when there is no index, nothing newer, or the
/// file it names is not there (yet).
///
/// # Errors
/// [`CheckpointIoError`] for a hostile or broken index or file, or a checkpoint larger than
/// [`MAX_CHECKPOINT_BYTES`].
pub fn snapshot(
    workspace: &Path,
    after_step: i64,
    dest: &Path,
) -> Result<Option<Snapshot>, CheckpointIoError> {
    let _ = fs::remove_dir_all(dest);
    let index = match collect(
        workspace,
        &[INDEX_FILE.to_owned()],
        &dest.join("index"),
        MAX_INDEX_BYTES,
        1,
    ) {
        Err(ArtifactIoError::TooLarge { .. }) => {
            return Err(IndexError::Invalid(format!("more than {MAX_INDEX_BYTES} bytes")).into())
        }
        other => other?,
    };
    let Some(found) = only(index, INDEX_FILE)? else {
        return Ok(None);
    };
    let index = parse_index(&fs::read(&found.stored)?)?;
    if index.step <= after_step {
        return Ok(None);
    }
    let copy = collect(
        workspace,
        std::slice::from_ref(&index.file),
        &dest.join("file"),
        MAX_CHECKPOINT_BYTES,
        1,
    )?;
    let Some(file) = only(copy, &index.file)? else {
        return Ok(None);
    };
    Ok(Some(Snapshot {
        shipped: ShippedCheckpoint {
            step: index.step,
            artifact: file.info,
        },
        path: file.stored,
    }))
}

/// The one file a collection of one literal name copied, or why it was refused.
fn only(collection: Collection, name: &str) -> Result<Option<CollectedArtifact>, CheckpointIoError> {
    if let Some((_, why)) = collection.refused.into_iter().next() {
        return Err(CheckpointIoError::Refused(name.to_owned(), why));
    }
    Ok(collection.artifacts.into_iter().next())
}

/// A [`Snapshot`] in a directory of its own, removed when dropped (once sent or kept).
#[derive(Debug)]
pub struct Taken {
    /// The copy.
    pub snapshot: Snapshot,
    dir: PathBuf,
}

impl Drop for Taken {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A copy of the checkpoint of `entry`, a job running or paused on this machine, above
/// `after_step` (taken on a blocking thread: it may be gigabytes). `None` for a job that
/// runs elsewhere or has ended, whose workspace is not here.
///
/// # Errors
/// As [`snapshot`].
pub async fn take(
    shared: &Shared,
    entry: &JobEntry,
    after_step: i64,
) -> Result<Option<Taken>, CheckpointIoError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let record = entry.record();
    if record.node != shared.node_id || !matches!(record.state, JobState::Running | JobState::Paused) {
        return Ok(None);
    }
    let workspace = shared.exec.scratch_dir(&record.job);
    let dir = shared.store_of(&record).dir(&record.job).join(format!(
        "checkpoint-copy-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let into = dir.clone();
    let copied = tokio::task::spawn_blocking(move || snapshot(&workspace, after_step, &into))
        .await
        .map_err(|e| CheckpointIoError::Read(std::io::Error::other(e)))?;
    match copied {
        Ok(Some(snapshot)) => Ok(Some(Taken { snapshot, dir })),
        other => {
            let _ = fs::remove_dir_all(&dir);
            other.map(|_| None)
        }
    }
}
