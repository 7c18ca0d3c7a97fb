// SPDX-License-Identifier: GPL-3.0-or-later
//! The durable job journal: one directory per job under the state directory, holding the
//! accepted spec and the job's record, rewritten atomically (fsync, rename, fsync of the
//! directory) at every change of state **before** the change is reported to anyone.
//!
//! The directory's existence is also the at-most-once guard: a job key whose directory
//! exists is never started again (PGR/1 §8), a duplicate submission gets the existing record.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use partagpu_core::job::record::JobRecord;
use partagpu_core::job::spec::JobSpec;

use crate::store::{load_json, write_atomic, Loaded, StoreError};

/// File names inside a job directory.
pub mod files {
    /// The accepted spec.
    pub const SPEC: &str = "spec.json";
    /// The record, rewritten at each state change.
    pub const RECORD: &str = "record.json";
    /// What the job wrote to stdout and stderr, as it wrote it (read and freed by the spool).
    pub const RAW: &str = "raw.out";
    /// The output made safe to show: escapes neutralised, drops marked.
    pub const LOG: &str = "log";
    /// Collected (executing side) or fetched (submitting side) artifacts.
    pub const ARTIFACTS: &str = "artifacts";
    /// The checkpoint a job starts from (its spec's `resume_checkpoint`), from its arrival
    /// until it is copied into the job's workspace.
    pub const RESUME_CHECKPOINT: &str = "resume-checkpoint";
}

/// One kind of job directory tree (`jobs/` for jobs run here, `submitted/` for jobs sent
/// to a member).
#[derive(Debug, Clone)]
pub struct JobStore {
    base: PathBuf,
}

impl JobStore {
    /// Opens (creating it 0700) the tree at `base`.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn open(base: &Path) -> Result<Self, StoreError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(base)
            .map_err(|source| StoreError {
                path: base.to_owned(),
                source,
            })?;
        Ok(Self {
            base: base.to_owned(),
        })
    }

    /// The directory of job `handle`.
    #[must_use]
    pub fn dir(&self, handle: &str) -> PathBuf {
        self.base.join(handle)
    }

    /// Creates the job's directory and writes its spec and first record. `Ok(false)` when
    /// the directory already exists: the job was submitted before (at-most-once).
    ///
    /// # Errors
    /// A file cannot be written; the partial directory is removed.
    pub fn create(&self, spec: &JobSpec, record: &JobRecord) -> Result<bool, StoreError> {
        let dir = self.dir(&record.job);
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(source) => return Err(StoreError { path: dir, source }),
        }
        let result = serde_json::to_vec_pretty(spec)
            .map_err(|e| StoreError {
                path: dir.join(files::SPEC),
                source: io::Error::other(e),
            })
            .and_then(|bytes| write_atomic(&dir.join(files::SPEC), &bytes, 0o600))
            .and_then(|()| self.save(record));
        if result.is_err() {
            let _ = fs::remove_dir_all(&dir);
        }
        result.map(|()| true)
    }

    /// Rewrites the record durably.
    ///
    /// # Errors
    /// The write failed; the previous record is intact.
    pub fn save(&self, record: &JobRecord) -> Result<(), StoreError> {
        let path = self.dir(&record.job).join(files::RECORD);
        let bytes = serde_json::to_vec_pretty(record).map_err(|e| StoreError {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        write_atomic(&path, &bytes, 0o600)
    }

    /// The spec a job was accepted with.
    #[must_use]
    pub fn spec(&self, handle: &str) -> Option<JobSpec> {
        match load_json(&self.dir(handle).join(files::SPEC)) {
            Loaded::Ok(spec) => Some(spec),
            _ => None,
        }
    }

    /// Every record of the tree. A record that does not parse is moved aside and logged.
    #[must_use]
    pub fn load_all(&self) -> Vec<JobRecord> {
        let Ok(entries) = fs::read_dir(&self.base) else {
            return Vec::new();
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path().join(files::RECORD);
            match load_json::<JobRecord>(&path) {
                Loaded::Ok(record) => records.push(record),
                Loaded::Missing => {}
                Loaded::Corrupt { kept_at, reason } => {
                    tracing::error!(path = %kept_at.display(), reason, "a job record is unreadable; kept aside");
                }
            }
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use partagpu_core::job::record::JobRole;
    use partagpu_core::job::spec::JobId;
    use partagpu_core::job::state::JobState;

    pub(crate) fn sample() -> (JobSpec, JobRecord) {
        let spec: JobSpec = serde_json::from_value(serde_json::json!({
            "id": "00112233445566778899aabbccddeeff", "attempt": 0,
            "submitter": "ab".repeat(16), "argv": ["true"],
            "workspace_bytes": 0, "workspace_sha256": "00".repeat(32),
        }))
        .unwrap();
        let record = JobRecord {
            job: spec.key().dir_name(),
            id: spec.id.to_hex(),
            attempt: 0,
            submitter: spec.submitter.clone(),
            submitter_name: String::new(),
            node: "cd".repeat(16),
            node_name: String::new(),
            role: JobRole::Here,
            argv: spec.argv.clone(),
            runtime: None,
            resources: spec.resources,
            network: spec.network.clone(),
            state: JobState::Accepted,
            reason: None,
            exit_code: None,
            created_ms: 1,
            started_ms: None,
            ended_ms: None,
            uid: None,
            artifacts: Vec::new(),
            artifact_patterns: Vec::new(),
            log_bytes: 0,
            memory_peak_bytes: None,
            cpu_usage_us: None,
            parts: Vec::new(),
            training: None,
        };
        let _ = JobId([0; 16]);
        (spec, record)
    }

    #[test]
    fn a_job_is_created_once_and_its_record_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let store = JobStore::open(&dir.path().join("jobs")).unwrap();
        let (spec, mut record) = sample();
        assert!(store.create(&spec, &record).unwrap());
        assert!(
            !store.create(&spec, &record).unwrap(),
            "the same key is refused the second time"
        );
        record.state = JobState::Running;
        store.save(&record).unwrap();
        let loaded = JobStore::open(&dir.path().join("jobs")).unwrap().load_all();
        assert_eq!(loaded, vec![record.clone()]);
        assert_eq!(store.spec(&record.job).unwrap(), spec);
    }
}
