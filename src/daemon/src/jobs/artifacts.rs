// SPDX-License-Identifier: GPL-3.0-or-later
//! Artifact collection (sandbox.md §8): copy what a finished job left in its workspace, and
//! only what its patterns name, out of a directory the job could fill with anything.
//!
//! The workspace is hostile: it is walked from directory fds without following links, special
//! files and hard-linked files are refused without being opened in a way that could block, and
//! bytes are counted while read, so a file that grows or lies in `stat` cannot pass the caps.

use std::io::Read;
use std::path::{Path, PathBuf};

use partagpu_core::job::state::ArtifactInfo;
use sha2::{Digest, Sha256};

mod walk;

/// Deepest directory level of the workspace that is searched.
pub const MAX_DEPTH: usize = 32;
/// Most refusals kept in a [`Collection`]; later ones are only counted in a last entry.
pub const MAX_REFUSED: usize = 256;

/// One artifact copied out of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedArtifact {
    /// Its name (path relative to the workspace), size as read and SHA-256.
    pub info: ArtifactInfo,
    /// Where the copy lies: the destination directory joined with the name.
    pub stored: PathBuf,
}

/// Everything one collection produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collection {
    /// The copied files, in walk order (names sorted within each directory).
    pub artifacts: Vec<CollectedArtifact>,
    /// Paths that matched a pattern but were not copied, with the reason, for the job's report.
    pub refused: Vec<(String, String)>,
    /// Sum of the artifacts' sizes.
    pub total_bytes: u64,
}

/// Why artifacts could not be collected or a received one does not check out.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactIoError {
    /// The workspace (or a directory inside it) could not be opened or read.
    #[error("Could not read the job's workspace at {path}: {source}.")]
    Workspace { path: String, source: std::io::Error },
    /// The copy could not be written.
    #[error("Could not write the artifact copy {path}: {source}.")]
    Destination { path: PathBuf, source: std::io::Error },
    /// The artifacts are larger than allowed; nothing was kept.
    #[error("The artifacts exceed the limit of {limit} bytes (at {path}), so none were kept.")]
    TooLarge { limit: u64, path: String },
    /// There are more artifacts than allowed; nothing was kept.
    #[error("The job has more than {limit} artifact files (at {path}), so none were kept.")]
    TooMany { limit: usize, path: String },
    /// A received artifact could not be read for checking.
    #[error("Could not read the received artifact {path}: {source}.")]
    Verify { path: PathBuf, source: std::io::Error },
    /// A received artifact has another size than announced.
    #[error("The received artifact {name} has {actual} bytes where {expected} were announced.")]
    SizeMismatch {
        name: String,
        expected: u64,
        actual: u64,
    },
    /// A received artifact has another SHA-256 than announced.
    #[error("The received artifact {name} has the SHA-256 {actual} where {expected} was announced.")]
    HashMismatch {
        name: String,
        expected: String,
        actual: String,
    },
}

/// Copies every regular file of `workspace` whose relative path matches one of `patterns`
/// into `dest/<same path>` (created 0700), stopping with an error, and removing everything it
/// had copied, when the artifacts would exceed `max_total` bytes or `max_files` files.
///
/// Patterns that match nothing are not an error; the caller reports them.
pub fn collect(
    workspace: &Path,
    patterns: &[String],
    dest: &Path,
    max_total: u64,
    max_files: usize,
) -> Result<Collection, ArtifactIoError> {
    let mut collector = walk::Collector::new(patterns, dest, max_total, max_files);
    match collector.run(workspace) {
        Ok(()) => Ok(collector.finish()),
        Err(e) => {
            // A partial set of artifacts must never look like a result.
            collector.undo();
            Err(e)
        }
    }
}

/// Checks a received artifact at `path` against what the sender announced.
pub fn verify(path: &Path, expected: &ArtifactInfo) -> Result<(), ArtifactIoError> {
    let io = |source| ArtifactIoError::Verify {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        // Stop early: a file far larger than announced need not be hashed to the end.
        if size > expected.size {
            break;
        }
        hasher.update(&buf[..n]);
    }
    if size != expected.size {
        return Err(ArtifactIoError::SizeMismatch {
            name: expected.name.clone(),
            expected: expected.size,
            actual: size,
        });
    }
    let actual = hex::encode(hasher.finalize());
    if !actual.eq_ignore_ascii_case(&expected.sha256) {
        return Err(ArtifactIoError::HashMismatch {
            name: expected.name.clone(),
            expected: expected.sha256.clone(),
            actual,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
