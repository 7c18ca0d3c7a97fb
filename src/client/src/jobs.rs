// SPDX-License-Identifier: GPL-3.0-or-later
//! The jobs part of [`crate::Client`]: `Jobs1`, output in chunks, and artifacts saved only
//! after their size and SHA-256 match the record.
//!
//! Specs and records cross the bus as JSON text (so the service can add keys) and are handed
//! over as that text: callers parse them into `partagpu_core::job` types with serde_json.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use partagpu_core::job::artifacts::validate_artifact_name;
use partagpu_core::job::state::ArtifactInfo;
use sha2::{Digest, Sha256};

use crate::proxies::Jobs1Proxy;
use crate::{Client, ClientError};

/// A piece of a job's output (`Jobs1.Logs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// The bytes, terminal escapes already neutralised by the service.
    pub data: Vec<u8>,
    /// The offset to ask for next.
    pub next: u64,
    /// The job ended and nothing follows `next`.
    pub complete: bool,
}

/// `Jobs1`, typed. Get one with [`Client::jobs`].
#[derive(Clone, Copy)]
pub struct Jobs<'a> {
    proxy: &'a Jobs1Proxy<'static>,
}

impl Client {
    /// The jobs run here and those submitted from here.
    #[must_use]
    pub fn jobs(&self) -> Jobs<'_> {
        Jobs { proxy: &self.jobs }
    }
}

impl Jobs<'_> {
    /// The raw proxy (for the `JobChanged` signal stream).
    #[must_use]
    pub fn proxy(&self) -> &Jobs1Proxy<'static> {
        self.proxy
    }

    /// Submits a JSON `JobSpec` with its workspace archive to `node` ("" = this machine).
    /// Returns the job's handle once the executing machine has journaled it.
    ///
    /// # Errors
    /// [`ClientError::InvalidArgument`] for a refused spec or workspace, [`ClientError::NotAuthorized`], …
    pub async fn submit(&self, spec_json: &str, workspace: &[u8], node: &str) -> Result<String, ClientError> {
        Ok(self
            .proxy
            .submit(spec_json, serde_bytes::Bytes::new(workspace), node)
            .await?)
    }

    /// Starts a DDP training (`spec_json`'s argv is the script and its arguments) on `nodes`
    /// ("" every eligible machine, a count, or names separated by commas).
    ///
    /// # Errors
    /// The service's refusal (no eligible machine, runtime mismatch, …) or a bus error.
    pub async fn distribute(
        &self,
        spec_json: &str,
        workspace: &[u8],
        nodes: &str,
    ) -> Result<String, ClientError> {
        Ok(self
            .proxy
            .distribute(spec_json, serde_bytes::Bytes::new(workspace), nodes)
            .await?)
    }

    /// Every job known here, newest first: the JSON array of `JobRecord`s the service sent.
    ///
    /// # Errors
    /// A bus error.
    pub async fn list_json(&self) -> Result<String, ClientError> {
        Ok(self.proxy.list().await?)
    }

    /// One job's `JobRecord` as JSON; `job` is a handle or a unique prefix of the id.
    ///
    /// # Errors
    /// An unknown or ambiguous job, or a bus error.
    pub async fn show_json(&self, job: &str) -> Result<String, ClientError> {
        Ok(self.proxy.show(job).await?)
    }

    /// At most `max` bytes of output from `offset`.
    ///
    /// # Errors
    /// [`ClientError::NotAuthorized`] for someone else's job, or a bus error.
    pub async fn logs(&self, job: &str, offset: u64, max: u32) -> Result<LogChunk, ClientError> {
        let (data, next, complete) = self.proxy.logs(job, offset, max).await?;
        Ok(LogChunk { data, next, complete })
    }

    /// Cancels a job (its end is then seen in its record and output).
    ///
    /// # Errors
    /// [`ClientError::NotAuthorized`], an unknown job, or a bus error.
    pub async fn cancel(&self, job: &str) -> Result<(), ClientError> {
        Ok(self.proxy.cancel(job).await?)
    }

    /// A read-only file of one collected artifact, unchecked.
    ///
    /// # Errors
    /// [`ClientError::NotAuthorized`], an unknown job or artifact, or a bus error.
    pub async fn open_artifact(&self, job: &str, name: &str) -> Result<File, ClientError> {
        let fd = self.proxy.open_artifact(job, name).await?;
        Ok(File::from(std::os::fd::OwnedFd::from(fd)))
    }

    /// Saves one artifact under `output` and returns where. The file appears only once its
    /// size and SHA-256 match `artifact`; a mismatch leaves nothing behind.
    ///
    /// # Errors
    /// [`ClientError::Artifact`] for a name that would leave `output`, a mismatch or a write
    /// failure; the errors of [`Jobs::open_artifact`].
    pub async fn save_artifact(
        &self,
        job: &str,
        artifact: &ArtifactInfo,
        output: &Path,
    ) -> Result<PathBuf, ClientError> {
        // Checked before asking, so a hostile record cannot even name a target outside.
        let destination = artifact_destination(output, &artifact.name)?;
        let source = self.open_artifact(job, &artifact.name).await?;
        write_verified(source, artifact, output, &destination).map_err(|problem| ClientError::Artifact {
            name: artifact.name.clone(),
            problem,
        })?;
        Ok(destination)
    }
}

/// Where the artifact `name` goes under `output`: refused when absolute, with `..`, or not
/// in the normal form the service sends.
///
/// # Errors
/// [`ClientError::Artifact`] saying why.
pub fn artifact_destination(output: &Path, name: &str) -> Result<PathBuf, ClientError> {
    let refused = |problem: String| ClientError::Artifact {
        name: name.to_owned(),
        problem,
    };
    validate_artifact_name(name).map_err(|e| refused(e.to_string()))?;
    let relative = Path::new(name);
    // Belt and braces over the shared rules: only plain names may be joined.
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(refused("the name would leave the output directory".into()));
    }
    Ok(output.join(relative))
}

/// SHA-256 of `data`, 64 lowercase hex digits.
#[must_use]
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn write_verified(source: File, artifact: &ArtifactInfo, output: &Path, dest: &Path) -> Result<(), String> {
    let parent = dest.parent().ok_or("it has no parent directory")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    // A directory of the output that is a symbolic link must not carry the file elsewhere.
    let inside = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    if !inside(parent)?.starts_with(inside(output)?) {
        return Err(format!("{} leads outside {}", parent.display(), output.display()));
    }
    let file_name = dest.file_name().ok_or("it has no file name")?.to_string_lossy();
    let temp = parent.join(format!(".{file_name}.partagpu-part"));
    let result = copy_checked(source, artifact, &temp).and_then(|()| {
        std::fs::rename(&temp, dest).map_err(|e| format!("cannot rename to {}: {e}", dest.display()))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn copy_checked(source: File, artifact: &ArtifactInfo, temp: &Path) -> Result<(), String> {
    let mut out = File::create(temp).map_err(|e| format!("cannot create {}: {e}", temp.display()))?;
    // One byte more than announced is enough to see that the file is too long.
    let mut reader = source.take(artifact.size.saturating_add(1));
    let mut hash = Sha256::new();
    let mut size: u64 = 0;
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let n = reader
            .read(&mut buffer)
            .map_err(|e| format!("cannot read it: {e}"))?;
        if n == 0 {
            break;
        }
        hash.update(&buffer[..n]);
        size += n as u64;
        out.write_all(&buffer[..n])
            .map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
    }
    if size != artifact.size {
        return Err(format!(
            "received {size} bytes, the record says {}",
            artifact.size
        ));
    }
    let sha256 = hex::encode(hash.finalize());
    if !sha256.eq_ignore_ascii_case(&artifact.sha256) {
        return Err(format!(
            "its SHA-256 is {sha256}, the record says {}",
            artifact.sha256
        ));
    }
    out.sync_all()
        .map_err(|e| format!("cannot write {}: {e}", temp.display()))
}

#[cfg(test)]
mod tests;
