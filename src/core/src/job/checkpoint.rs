// SPDX-License-Identifier: GPL-3.0-or-later
//! Checkpoints shipped to the coordinator (docs/distribute.md, "Checkpoints"): while a
//! training runs, `partagpu.checkpoint.save()` leaves an index beside its checkpoint naming
//! the file and its step; the coordinator keeps a copy of the newest one, so a training that
//! fails (even with the machine of node 0) still leaves its last checkpoint to its submitter.
//!
//! The index is written by the job, so it is hostile: it is read with a byte cap and the file
//! it names must be a plain name in the top of the workspace, matched literally.

use serde::{Deserialize, Serialize};

use super::state::ArtifactInfo;

#[cfg(test)]
mod tests;

/// The index `partagpu.checkpoint.save()` writes in the job's directory after the checkpoint.
pub const INDEX_FILE: &str = "partagpu-checkpoint.json";
/// Most bytes an index may have.
pub const MAX_INDEX_BYTES: u64 = 4096;
/// Largest checkpoint that is shipped; a larger one stays on the executing machines.
pub const MAX_CHECKPOINT_BYTES: u64 = 2 << 30;
/// Longest checkpoint file name, in bytes.
const MAX_NAME_BYTES: usize = 200;

/// What the index says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointIndex {
    /// The checkpoint's step (a number that grows: the epoch, the optimizer step).
    pub step: i64,
    /// Its file, in the top of the job's directory.
    pub file: String,
}

/// A checkpoint as it travels and as the coordinator holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShippedCheckpoint {
    /// Its step.
    pub step: i64,
    /// Its file name, size and SHA-256.
    pub artifact: ArtifactInfo,
}

/// Why an index was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// Not the JSON `save()` writes.
    #[error("the checkpoint index {INDEX_FILE} is not valid: {0}")]
    Invalid(String),
    /// Names a file that is not a plain name.
    #[error("the checkpoint index names {0:?}: a checkpoint is a plain file name in the job's directory, without '/', wildcards or control characters")]
    BadName(String),
}

/// Parses an index read from a job's directory.
///
/// # Errors
/// [`IndexError`] for anything `partagpu.checkpoint.save()` would not have written.
pub fn parse_index(bytes: &[u8]) -> Result<CheckpointIndex, IndexError> {
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return Err(IndexError::Invalid(format!("more than {MAX_INDEX_BYTES} bytes")));
    }
    let index: CheckpointIndex =
        serde_json::from_slice(bytes).map_err(|e| IndexError::Invalid(e.to_string()))?;
    check_name(&index.file)?;
    Ok(index)
}

/// A checkpoint file name: one literal component (also as an artifact pattern, so no
/// wildcard), not hidden, not the index itself.
///
/// # Errors
/// [`IndexError::BadName`].
pub fn check_name(name: &str) -> Result<(), IndexError> {
    let plain = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && !name.starts_with('.')
        && name != INDEX_FILE
        && !name
            .chars()
            .any(|c| c.is_control() || matches!(c, '/' | '\\' | '*' | '?' | '[' | ']'));
    if plain {
        Ok(())
    } else {
        Err(IndexError::BadName(name.chars().take(64).collect()))
    }
}

/// The step a coordinator that holds `held` asks to be above: only a newer step replaces it.
#[must_use]
pub fn after_step(held: Option<&ShippedCheckpoint>) -> i64 {
    held.map_or(i64::MIN, |h| h.step)
}
