// SPDX-License-Identifier: GPL-3.0-or-later
//! The jobs of this machine: accepting one (checks, journal, at-most-once), finding,
//! cancelling, reading output, and what happens at start and stop of the service.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::JobState;
use partagpu_core::job::workspace::plan_workspace;
use sha2::{Digest, Sha256};
use tokio::sync::{broadcast, watch};

use super::exec::Executor;
use super::runner::{self, end};
use super::spool::read_log;
use super::store::{files, JobStore};
use crate::sharing::SharingStore;

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Jobs one submitter may have open here at once (PGR/1 §9: members can be malicious too).
pub const MAX_OPEN_PER_SUBMITTER: usize = 8;
/// Jobs open here at once, all submitters together.
pub const MAX_OPEN_JOBS: usize = 16;

/// Why a job stops before it ends by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Someone asked; who, in words.
    Cancelled(String),
    /// The owner's pause outlasted the grace.
    Preempted,
    /// The job's time limit passed.
    TimeLimit,
    /// The service is stopping.
    Shutdown,
}

/// Why a request about jobs was refused. Messages are sentences for the person asking.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// The spec or the workspace is not acceptable; nothing was written.
    #[error("{0}")]
    Invalid(String),
    /// This machine does not take the job now (sharing off, paused, cannot run jobs).
    #[error("{0}")]
    Refused(String),
    /// No such job.
    #[error("{0}")]
    NotFound(String),
    /// The journal could not be written; the job was not accepted.
    #[error("the job could not be recorded: {0}")]
    Storage(String),
    /// The member that should run it could not be reached or said no.
    #[error("{0}")]
    Peer(String),
}

/// Who submits a job to this machine.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A local user, over the bus.
    Local {
        /// Their uid.
        uid: u32,
    },
    /// A verified member of the room, over PGR/1.
    Peer {
        /// Its node id (proved by node authentication).
        node_id: String,
        /// Its display name, as the fleet knows it.
        name: String,
    },
}

/// One job known to this machine.
#[derive(Debug)]
pub struct JobEntry {
    handle: String,
    record: Mutex<JobRecord>,
    /// Set once to ask the job to stop.
    pub stop: watch::Sender<Option<Stop>>,
    /// Bytes of log so far, so followers wake as soon as output arrives.
    pub output: watch::Sender<u64>,
}

impl JobEntry {
    /// A new entry.
    #[must_use]
    pub fn new(record: JobRecord) -> Self {
        Self {
            handle: record.job.clone(),
            output: watch::channel(record.log_bytes).0,
            record: Mutex::new(record),
            stop: watch::channel(None).0,
        }
    }

    /// The handle.
    #[must_use]
    pub fn handle(&self) -> &str {
        &self.handle
    }

    /// A copy of the record.
    #[must_use]
    pub fn record(&self) -> JobRecord {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, JobRecord> {
        self.record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What the runner and the bus side share.
pub struct Shared {
    /// How jobs run here.
    pub exec: Executor,
    /// Jobs run here.
    pub jobs: JobStore,
    /// Jobs sent to members.
    pub submitted: JobStore,
    /// The owner's policy.
    pub sharing: Arc<SharingStore>,
    /// This machine's node id.
    pub node_id: String,
    /// Where a job's checkpoint to start from is written as it arrives, before the job is
    /// accepted (emptied at each start: what is there belongs to no job).
    pub inbox: PathBuf,
    entries: Mutex<BTreeMap<String, Arc<JobEntry>>>,
    events: broadcast::Sender<(String, JobState)>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("exec", &self.exec)
            .field("node_id", &self.node_id)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The store a record lives in.
    #[must_use]
    pub fn store_of(&self, record: &JobRecord) -> &JobStore {
        if matches!(record.role, JobRole::Submitted | JobRole::Group) {
            &self.submitted
        } else {
            &self.jobs
        }
    }

    /// Applies `change` to the entry's record, journals it, then tells listeners. Once a
    /// record is terminal it never changes again.
    pub fn commit(&self, entry: &JobEntry, change: impl FnOnce(&mut JobRecord)) -> JobRecord {
        let mut record = entry.lock();
        if record.state.is_terminal() {
            return record.clone();
        }
        let mut next = record.clone();
        change(&mut next);
        if let Err(error) = self.store_of(&next).save(&next) {
            tracing::error!(job = entry.handle(), %error, "cannot journal a job's state");
        }
        let changed = next.state != record.state;
        *record = next.clone();
        drop(record);
        if changed {
            tracing::info!(job = entry.handle(), state = next.state.as_str(), reason = ?next.reason, "job state");
            let _ = self.events.send((next.job.clone(), next.state));
        }
        next
    }

    /// Notes new output (in memory: the log file itself is the durable copy).
    pub fn note_output(&self, entry: &JobEntry, log_len: u64) {
        entry.lock().log_bytes = log_len;
        entry.output.send_replace(log_len);
    }

    /// Registers an entry.
    pub fn insert(&self, entry: Arc<JobEntry>) {
        self.lock().insert(entry.handle.clone(), entry);
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<JobEntry>>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every entry.
    #[must_use]
    pub fn all(&self) -> Vec<Arc<JobEntry>> {
        self.lock().values().cloned().collect()
    }

    /// The entry named by a handle or a unique prefix of a job id.
    ///
    /// # Errors
    /// [`JobError::NotFound`] when none or several match.
    pub fn find(&self, name: &str) -> Result<Arc<JobEntry>, JobError> {
        let entries = self.lock();
        if let Some(entry) = entries.get(name) {
            return Ok(Arc::clone(entry));
        }
        let matching: Vec<_> = entries
            .values()
            .filter(|e| !name.is_empty() && e.lock().id.starts_with(name))
            .collect();
        match matching.as_slice() {
            [one] => Ok(Arc::clone(one)),
            [] => Err(JobError::NotFound(format!("no job {name:?} on this machine"))),
            _ => Err(JobError::NotFound(format!(
                "{name:?} names several jobs: give more of its id"
            ))),
        }
    }

    /// Job state changes, as (handle, state).
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<(String, JobState)> {
        self.events.subscribe()
    }
}

/// The jobs side of the service.
#[derive(Debug, Clone)]
pub struct JobManager {
    /// State shared with runners and followers.
    pub shared: Arc<Shared>,
}

impl JobManager {
    /// What all jobs use together now; `None` when jobs cannot run here (no cgroups) or the
    /// counters cannot be read (logged at debug: the probe asks every 2 s).
    #[must_use]
    pub fn usage(&self) -> Option<super::cgroup::CgroupUsage> {
        let backend = self.shared.exec.cgroups.as_ref().ok()?;
        backend
            .usage()
            .map_err(|error| tracing::debug!(%error, "cannot read the jobs' usage"))
            .ok()
    }

    /// Opens the journals under `state_dir`.
    ///
    /// # Errors
    /// A journal directory cannot be created.
    pub fn open(
        exec: Executor,
        state_dir: &std::path::Path,
        sharing: Arc<SharingStore>,
        node_id: String,
    ) -> Result<Self, crate::store::StoreError> {
        let inbox = super::inbox::open(state_dir)?;
        let shared = Shared {
            exec,
            jobs: JobStore::open(&state_dir.join("jobs"))?,
            submitted: JobStore::open(&state_dir.join("submitted"))?,
            sharing,
            node_id,
            inbox,
            entries: Mutex::new(BTreeMap::new()),
            events: broadcast::channel(256).0,
        };
        Ok(Self {
            shared: Arc::new(shared),
        })
    }

    /// After a start: every job that was running here when the service ended is killed
    /// (whatever is left of it) and marked `lost`; leftovers without a record are removed.
    /// Returns the submitted jobs still open, for their followers to resume.
    pub fn recover(&self) -> Vec<Arc<JobEntry>> {
        let shared = &self.shared;
        let mut known = Vec::new();
        for record in shared.jobs.load_all() {
            known.push(record.job.clone());
            let open = !record.state.is_terminal();
            let entry = Arc::new(JobEntry::new(record));
            shared.insert(Arc::clone(&entry));
            if open {
                shared.exec.clean_up(entry.handle(), None);
                let _ = std::fs::remove_file(shared.jobs.dir(entry.handle()).join(files::RESUME_CHECKPOINT));
                // What the job wrote after the last pump is still in its spool.
                let log_len = super::spool::Spool::resume(&shared.jobs.dir(entry.handle()))
                    .and_then(|mut spool| spool.finish(now_ms()).map(|()| spool.log_len()))
                    .unwrap_or(0);
                shared.commit(&entry, |r| {
                    r.log_bytes = log_len;
                    end(r, JobState::Lost, Some("the service on the executing machine restarted while the job ran; its processes were stopped".into()), None);
                });
            }
        }
        if let Ok(cgroups) = &shared.exec.cgroups {
            for orphan in cgroups.list().into_iter().filter(|name| !known.contains(name)) {
                tracing::warn!(cgroup = orphan, "removing a job cgroup without a record");
                shared.exec.clean_up(&orphan, None);
            }
        }
        // Every job is stopped by now, so every table of ours is a leftover.
        for table in super::netfilter::list_tables(super::netfilter::TABLE_PREFIX) {
            tracing::warn!(table, "removing the network rules of a job that is gone");
            let _ = super::netfilter::remove(&table);
        }
        let mut open = Vec::new();
        for record in shared.submitted.load_all() {
            // Submitted or coordinated by another machine: this state directory was copied
            // from it (a disk image). Only that machine can follow the job.
            let ours = record.submitter == shared.node_id || record.node == shared.node_id;
            let entry = Arc::new(JobEntry::new(record));
            if !ours {
                shared.commit(&entry, |r| {
                    end(r, JobState::Lost, Some("the record was copied from the machine that followed this job (a disk image); only that machine can follow it".into()), None);
                });
            } else if !entry.record().state.is_terminal() {
                open.push(Arc::clone(&entry));
            }
            shared.insert(entry);
        }
        open
    }

    /// Checks and accepts a job to run here; returns its record once journalled. A job key
    /// seen before returns the existing record and starts nothing (at-most-once).
    ///
    /// # Errors
    /// [`JobError`]; nothing is written unless the job is accepted.
    pub fn accept(&self, spec: JobSpec, workspace: Vec<u8>, origin: &Origin) -> Result<JobRecord, JobError> {
        let digest = Sha256::digest(&workspace).into();
        self.accept_hashed(spec, (workspace, digest), None, origin)
    }

    /// [`Self::accept`] for a workspace whose SHA-256 was computed as it arrived (PGR/1), so
    /// 16 MiB are not hashed a second time before the job can start; with the file of the
    /// spec's `resume_checkpoint`, checked already and written in [`Shared::inbox`]. That
    /// file is the job's once it is accepted, and removed when it is not.
    ///
    /// # Errors
    /// As [`Self::accept`].
    pub fn accept_hashed(
        &self,
        spec: JobSpec,
        workspace: (Vec<u8>, [u8; 32]),
        checkpoint: Option<PathBuf>,
        origin: &Origin,
    ) -> Result<JobRecord, JobError> {
        let accepted = self.accept_checked(spec, workspace, checkpoint.as_deref(), origin);
        if let Some(path) = checkpoint {
            // Moved into the job's directory when it was accepted; else it belongs to no one.
            let _ = std::fs::remove_file(path);
        }
        accepted
    }

    fn accept_checked(
        &self,
        mut spec: JobSpec,
        (workspace, digest): (Vec<u8>, [u8; 32]),
        checkpoint: Option<&Path>,
        origin: &Origin,
    ) -> Result<JobRecord, JobError> {
        let shared = &self.shared;
        let (submitter_name, uid, role) = match origin {
            Origin::Local { uid } => {
                spec.submitter.clone_from(&shared.node_id);
                (shared.sharing.policy().display_name, Some(*uid), JobRole::Both)
            }
            Origin::Peer { node_id, name } => {
                if spec.submitter != *node_id {
                    return Err(JobError::Invalid(
                        "the job's submitter is not the machine that sent it".into(),
                    ));
                }
                (name.clone(), None, JobRole::Here)
            }
        };
        spec.validate().map_err(|e| JobError::Invalid(e.to_string()))?;
        let handle = spec.key().dir_name();
        if let Ok(existing) = shared.find(&handle) {
            return Ok(existing.record());
        }
        let policy = shared.sharing.policy();
        let open: Vec<JobRecord> = shared
            .all()
            .iter()
            .map(|e| e.record())
            .filter(|r| matches!(r.role, JobRole::Here | JobRole::Both) && !r.state.is_terminal())
            .collect();
        if open.iter().filter(|r| r.submitter == spec.submitter).count() >= MAX_OPEN_PER_SUBMITTER
            || open.len() >= MAX_OPEN_JOBS
        {
            return Err(JobError::Refused(format!(
                "{} is busy: it runs as many jobs as it takes",
                policy.display_name
            )));
        }
        if !policy.enabled {
            return Err(JobError::Refused(format!(
                "sharing is off on {}: it takes no new jobs",
                policy.display_name
            )));
        }
        if policy.paused {
            return Err(JobError::Refused(format!(
                "{} is paused by its owner: it takes no new jobs now",
                policy.display_name
            )));
        }
        if let Some(why) = shared.exec.unavailable() {
            return Err(JobError::Refused(format!(
                "{} cannot run jobs: {why}",
                policy.display_name
            )));
        }
        let gpus = shared.exec.gpus.len();
        let wanted = usize::try_from(spec.resources.gpus).unwrap_or(usize::MAX);
        if wanted > 0 && (gpus < wanted || policy.limits.gpu_percent == 0) {
            let lent = if policy.limits.gpu_percent == 0 { 0 } else { gpus };
            return Err(JobError::Refused(format!(
                "{} lends {lent} GPU(s), the job asked for {wanted}",
                policy.display_name
            )));
        }
        let runtime = shared.exec.runtime(spec.runtime.as_deref()).ok_or_else(|| {
            JobError::Refused(format!(
                "{} has no runtime {:?}",
                policy.display_name,
                spec.runtime.as_deref().unwrap_or("")
            ))
        })?;
        let runtime_name = runtime.name.clone();
        if workspace.len() as u64 != spec.workspace_bytes {
            return Err(JobError::Invalid(format!(
                "the workspace has {} bytes, the job announced {}",
                workspace.len(),
                spec.workspace_bytes
            )));
        }
        if hex::encode(digest) != spec.workspace_sha256 {
            return Err(JobError::Invalid(
                "the workspace does not match its SHA-256: it was damaged on the way".into(),
            ));
        }
        if spec.resume_checkpoint.is_some() != checkpoint.is_some() {
            return Err(JobError::Invalid(
                "the job names a checkpoint to start from that did not come with it".into(),
            ));
        }
        let plan =
            plan_workspace(&workspace).map_err(|e| JobError::Invalid(format!("workspace refused: {e}")))?;
        let record = JobRecord {
            job: handle.clone(),
            id: spec.id.to_hex(),
            attempt: spec.attempt,
            submitter: spec.submitter.clone(),
            submitter_name,
            node: shared.node_id.clone(),
            node_name: policy.display_name.clone(),
            role,
            argv: spec.argv.clone(),
            runtime: Some(runtime_name),
            resources: spec.resources,
            network: spec.network.clone(),
            state: JobState::Accepted,
            reason: None,
            exit_code: None,
            created_ms: now_ms(),
            started_ms: None,
            ended_ms: None,
            uid,
            artifacts: Vec::new(),
            artifact_patterns: spec.artifacts.clone(),
            log_bytes: 0,
            memory_peak_bytes: None,
            cpu_usage_us: None,
            parts: Vec::new(),
            training: None,
        };
        match shared.jobs.create(&spec, &record) {
            Ok(true) => {}
            Ok(false) => {
                return Err(JobError::Invalid(
                    "this job was already submitted here once; a new run needs a new attempt number".into(),
                ))
            }
            Err(error) => return Err(JobError::Storage(error.to_string())),
        }
        if let Some(path) = checkpoint {
            let kept = shared.jobs.dir(&handle).join(files::RESUME_CHECKPOINT);
            if let Err(error) = std::fs::rename(path, &kept) {
                // Journalled already: the job ends at once, with the reason, as any failed start.
                let why = format!("its checkpoint to start from could not be kept: {error}");
                let entry = Arc::new(JobEntry::new(record));
                shared.insert(Arc::clone(&entry));
                shared.commit(&entry, |r| end(r, JobState::Failed, Some(why), None));
                return Ok(entry.record());
            }
        }
        let entry = Arc::new(JobEntry::new(record.clone()));
        shared.insert(Arc::clone(&entry));
        tokio::spawn(runner::run(
            Arc::clone(&self.shared),
            entry,
            spec,
            (workspace, plan),
        ));
        Ok(record)
    }

    /// Reads a job's output.
    ///
    /// # Errors
    /// [`JobError::NotFound`], or the log is unreadable.
    pub fn logs(&self, entry: &JobEntry, offset: u64, max: usize) -> Result<(Vec<u8>, u64, bool), JobError> {
        let record = entry.record();
        let dir = self.shared.store_of(&record).dir(&record.job);
        let (data, next) = read_log(&dir, offset, max)
            .map_err(|e| JobError::NotFound(format!("the job's output cannot be read: {e}")))?;
        // Complete only once the end is journalled and every byte was read.
        let complete = record.state.is_terminal() && data.is_empty();
        Ok((data, next, complete))
    }

    /// Where a collected or fetched artifact is.
    ///
    /// # Errors
    /// [`JobError::NotFound`] when the job has no such artifact.
    pub fn artifact_path(&self, entry: &JobEntry, name: &str) -> Result<PathBuf, JobError> {
        let record = entry.record();
        if !record.artifacts.iter().any(|a| a.name == name) {
            return Err(JobError::NotFound(format!("the job has no artifact {name:?}")));
        }
        Ok(self
            .shared
            .store_of(&record)
            .dir(&record.job)
            .join(files::ARTIFACTS)
            .join(name))
    }

    /// Asks a job to stop; `by` says who, for its reason.
    pub fn cancel(&self, entry: &JobEntry, by: &str) {
        entry.stop.send_if_modified(|stop| {
            if stop.is_none() {
                *stop = Some(Stop::Cancelled(by.to_owned()));
                true
            } else {
                false
            }
        });
    }

    /// Stops every job running here (service shutdown) and waits a little for their ends
    /// to be journalled.
    pub async fn shutdown(&self) {
        let running: Vec<_> = self
            .shared
            .all()
            .into_iter()
            .filter(|e| {
                matches!(e.record().role, JobRole::Here | JobRole::Both) && !e.record().state.is_terminal()
            })
            .collect();
        for entry in &running {
            entry.stop.send_replace(Some(Stop::Shutdown));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while running.iter().any(|e| !e.record().state.is_terminal())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
