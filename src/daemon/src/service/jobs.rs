// SPDX-License-Identifier: GPL-3.0-or-later
//! `Jobs1`: submit a job here or to a member, list and show jobs, read their output, cancel
//! them, open their artifacts. Reading the list is open to everyone (the owner sees what
//! runs on their machine); output and artifacts only to the submitting user and root.

use std::sync::Arc;

use partagpu_core::ids::actions;
use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::spec::JobSpec;
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedFd;
use zbus::Connection;

use crate::auth::{authorize, caller_uid};
use crate::error::BusError;
use crate::jobs::manager::{JobEntry, JobError, JobManager, Origin};
use crate::jobs::{inbox, remote};
use crate::peer::PeerContext;

/// Largest piece of output one `Logs` call returns.
const MAX_LOG_READ: u32 = 1 << 20;

impl From<JobError> for BusError {
    fn from(error: JobError) -> Self {
        match error {
            JobError::Invalid(why) => Self::InvalidArgument(why),
            JobError::Refused(why) => Self::JobRefused(why),
            JobError::NotFound(why) => Self::JobNotFound(why),
            JobError::Storage(why) => Self::StorageFailed(why),
            JobError::Peer(why) => Self::PeerFailed(why),
        }
    }
}

/// The `Jobs1` object.
pub struct JobsIface {
    jobs: JobManager,
    peer: Arc<PeerContext>,
}

impl JobsIface {
    /// An object over `jobs`; `peer` reaches the members.
    #[must_use]
    pub fn new(jobs: JobManager, peer: Arc<PeerContext>) -> Self {
        Self { jobs, peer }
    }

    /// A training's spec and the caller's uid, once the caller may submit and this machine
    /// is in a room.
    async fn training_request(
        &self,
        spec: &str,
        connection: &Connection,
        header: &Header<'_>,
    ) -> Result<(JobSpec, u32), BusError> {
        authorize(connection, header, actions::SUBMIT_JOB).await?;
        let uid = caller_uid(connection, header).await?;
        if self.peer.room.current().is_none() {
            return Err(BusError::NotInRoom(
                "this machine is in no room: join one first (partagpuctl room join)".into(),
            ));
        }
        let spec = JobSpec::parse(spec.as_bytes()).map_err(|e| BusError::InvalidArgument(e.to_string()))?;
        Ok((spec, uid))
    }

    async fn start_training(
        &self,
        spec: JobSpec,
        upload: (Vec<u8>, Option<std::path::PathBuf>),
        nodes: &str,
        uid: u32,
    ) -> Result<String, BusError> {
        let peer = Arc::clone(&self.peer);
        let origin = Origin::Local { uid };
        let record = crate::jobs::group::distribute(&self.jobs, peer, spec, upload, nodes, &origin).await?;
        Ok(record.job)
    }

    /// Only the submitting user and root may read a job's output and artifacts.
    async fn readable(
        &self,
        entry: &JobEntry,
        connection: &Connection,
        header: &Header<'_>,
    ) -> Result<(), BusError> {
        let uid = caller_uid(connection, header).await?;
        if uid == 0 || entry.record().uid == Some(uid) {
            Ok(())
        } else {
            Err(BusError::NotAuthorized(
                "only the user who submitted this job may read its output and artifacts".into(),
            ))
        }
    }
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

#[zbus::interface(name = "org.partagpu.PartaGPU.Daemon.Jobs1")]
impl JobsIface {
    #[zbus(out_args("job"))]
    async fn submit(
        &self,
        spec: String,
        workspace: serde_bytes::ByteBuf,
        node: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<String, BusError> {
        authorize(connection, &header, actions::SUBMIT_JOB).await?;
        let uid = caller_uid(connection, &header).await?;
        let workspace = workspace.into_vec();
        let mut spec =
            JobSpec::parse(spec.as_bytes()).map_err(|e| BusError::InvalidArgument(e.to_string()))?;
        let own = &self.jobs.shared.node_id;
        let local_name = self.jobs.shared.sharing.policy().display_name;
        if node.is_empty() || node.eq_ignore_ascii_case(&local_name) || node == *own {
            let record = self.jobs.accept(spec, workspace, &Origin::Local { uid })?;
            return Ok(record.job);
        }
        let target = remote::find_member(&self.peer, &node)?;
        spec.submitter.clone_from(own);
        let record = remote::submit(
            &self.jobs,
            Arc::clone(&self.peer),
            spec,
            (workspace, None),
            target,
            uid,
        )
        .await?;
        Ok(record.job)
    }

    #[zbus(out_args("job"))]
    async fn distribute(
        &self,
        spec: String,
        workspace: serde_bytes::ByteBuf,
        nodes: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<String, BusError> {
        let (spec, uid) = self.training_request(&spec, connection, &header).await?;
        self.start_training(spec, (workspace.into_vec(), None), &nodes, uid)
            .await
    }

    #[zbus(out_args("job"))]
    async fn distribute_resuming(
        &self,
        spec: String,
        workspace: serde_bytes::ByteBuf,
        nodes: String,
        checkpoint: OwnedFd,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<String, BusError> {
        let (spec, uid) = self.training_request(&spec, connection, &header).await?;
        let Some(announced) = spec.resume_checkpoint.clone() else {
            return Err(BusError::InvalidArgument(
                "the spec names no resume_checkpoint for the file passed".into(),
            ));
        };
        // Read with the rights the caller had when it opened the file; off the async threads.
        let file = std::fs::File::from(std::os::fd::OwnedFd::from(checkpoint));
        let inbox = self.jobs.shared.inbox.clone();
        let copied = tokio::task::spawn_blocking(move || inbox::copy_from(file, &announced, &inbox))
            .await
            .map_err(|e| BusError::StorageFailed(e.to_string()))?
            .map_err(BusError::InvalidArgument)?;
        self.start_training(spec, (workspace.into_vec(), Some(copied)), &nodes, uid)
            .await
    }

    #[zbus(out_args("jobs"))]
    fn list(&self) -> String {
        let mut records: Vec<JobRecord> = self.jobs.shared.all().iter().map(|e| e.record()).collect();
        records.sort_by_key(|r| std::cmp::Reverse(r.created_ms));
        to_json(&records)
    }

    #[zbus(out_args("record"))]
    fn show(&self, job: String) -> Result<String, BusError> {
        Ok(to_json(&self.jobs.shared.find(&job)?.record()))
    }

    #[zbus(out_args("data", "next", "complete"))]
    async fn logs(
        &self,
        job: String,
        offset: u64,
        max: u32,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<(Vec<u8>, u64, bool), BusError> {
        let entry = self.jobs.shared.find(&job)?;
        self.readable(&entry, connection, &header).await?;
        let max = usize::try_from(max.min(MAX_LOG_READ)).unwrap_or(1 << 20);
        Ok(self.jobs.logs(&entry, offset, max)?)
    }

    async fn cancel(
        &self,
        job: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<(), BusError> {
        let entry = self.jobs.shared.find(&job)?;
        let uid = caller_uid(connection, &header).await?;
        let record = entry.record();
        let by = if record.uid == Some(uid) {
            "its submitter".to_owned()
        } else {
            authorize(connection, &header, actions::MANAGE_JOBS).await?;
            match record.role {
                JobRole::Here => format!("the owner of {}", record.node_name),
                _ => format!("user {uid} of {}", self.jobs.shared.sharing.policy().display_name),
            }
        };
        self.jobs.cancel(&entry, &by);
        Ok(())
    }

    #[zbus(out_args("file"))]
    async fn open_artifact(
        &self,
        job: String,
        name: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(connection)] connection: &Connection,
    ) -> Result<OwnedFd, BusError> {
        let entry = self.jobs.shared.find(&job)?;
        self.readable(&entry, connection, &header).await?;
        let path = self.jobs.artifact_path(&entry, &name)?;
        let file = std::fs::File::open(&path)
            .map_err(|e| BusError::JobNotFound(format!("the artifact {name:?} cannot be opened: {e}")))?;
        Ok(OwnedFd::from(std::os::fd::OwnedFd::from(file)))
    }

    /// A job changed state.
    #[zbus(signal)]
    pub async fn job_changed(emitter: &SignalEmitter<'_>, job: &str, state: &str) -> zbus::Result<()>;
}

/// Emits `JobChanged` for every state change, for as long as the service runs.
pub async fn signal_changes(object: zbus::object_server::InterfaceRef<JobsIface>, jobs: JobManager) {
    let mut changes = jobs.shared.subscribe();
    loop {
        match changes.recv().await {
            Ok((job, state)) => {
                if let Err(error) =
                    JobsIface::job_changed(object.signal_emitter(), &job, state.as_str()).await
                {
                    tracing::debug!(%error, "cannot signal a job change");
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
