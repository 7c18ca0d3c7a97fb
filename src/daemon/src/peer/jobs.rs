// SPDX-License-Identifier: GPL-3.0-or-later
//! The executing side of a job connection (PGR/1 §7.6): a verified member submits a job
//! (spec, then its workspace as DATA ended by DATA_END) or asks this machine to coordinate a
//! distributed training for it (a notebook without a service of its own), follows it (LOG
//! records and state replies until the end), cancels it, and fetches its artifacts. A member
//! only ever sees and touches the jobs it submitted itself.

use std::sync::Arc;
use std::time::Duration;

use partagpu_core::job::record::JobRecord;
use partagpu_core::job::wire::{log_body, JobReply, JobRequest, CHUNK};
use partagpu_core::journal::Severity;
use partagpu_core::protocol::{Record, RecordType, VerifiedNode};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::events::kinds;
use super::upload::{receive_upload, send_data};
use super::wire::{Channel, Reader, WireError, Writer};
use super::PeerContext;
use crate::jobs::manager::{JobEntry, JobManager, Origin};

/// How long a job connection may stay silent on the submitter's side.
const IDLE: Duration = Duration::from_secs(3600);
/// How often a follower polls the log when nothing new was signalled.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Serves one job connection until it ends.
pub async fn serve(channel: Channel, context: &Arc<PeerContext>, node: &VerifiedNode) {
    let Channel {
        reader,
        mut writer,
        peer,
        ..
    } = channel;
    let Some(jobs) = context.jobs.get().cloned() else {
        writer.close("this machine runs no jobs").await;
        return;
    };
    let node_id = node.node_id.to_hex();
    let name = context
        .fleet
        .members()
        .into_iter()
        .find(|m| m.node_id == node_id)
        .and_then(|m| m.state.map(|s| s.name))
        .unwrap_or_else(|| node_id[..8].to_owned());
    let (records, mut incoming) = mpsc::channel(8);
    let reading = tokio::spawn(read_records(reader, records));
    let origin = Origin::Peer {
        node_id: node_id.clone(),
        name: name.clone(),
    };
    while let Some(Ok(record)) = incoming.recv().await {
        let outcome = match record.record_type {
            RecordType::Request => match serde_json::from_slice::<JobRequest>(&record.body) {
                Ok(request) => {
                    let connection = Connection {
                        jobs: &jobs,
                        context,
                        origin: &origin,
                    };
                    handle(request, &connection, &mut writer, &mut incoming).await
                }
                Err(_) => Err("a job request that is not valid"),
            },
            RecordType::Ping => writer.send(RecordType::Pong, &[]).await.map_err(|_| "closed"),
            RecordType::Pong => Ok(()),
            RecordType::Close => break,
            _ => Err("a record out of place on a job connection"),
        };
        if let Err(what) = outcome {
            if what != "closed" {
                context.reporter.report(
                    Severity::Warning,
                    kinds::MALFORMED,
                    &peer.ip().to_string(),
                    &node_id,
                    format!(
                        "The machine at {} sent {what}; the job connection was closed.",
                        peer.ip()
                    ),
                );
                writer.close(what).await;
            }
            break;
        }
    }
    reading.abort();
}

async fn read_records(mut reader: Reader, records: mpsc::Sender<Result<Record, WireError>>) {
    loop {
        let record = reader.recv_before(Instant::now() + IDLE).await;
        let failed = record.is_err();
        if records.send(record).await.is_err() || failed {
            return;
        }
    }
}

pub(super) type Incoming = mpsc::Receiver<Result<Record, WireError>>;

pub(super) async fn reply(writer: &mut Writer, reply: &JobReply) -> Result<(), &'static str> {
    let body = serde_json::to_vec(reply).unwrap_or_default();
    writer
        .send(RecordType::Response, &body)
        .await
        .map_err(|_| "closed")
}

/// Who a member's cancel is attributed to, in the job's reason.
fn cancelled_by(origin: &Origin) -> String {
    match origin {
        Origin::Peer { name, .. } => format!("its submitter ({name})"),
        Origin::Local { .. } => "its submitter".to_owned(),
    }
}

/// The job a member may touch: one it submitted.
fn own_job(jobs: &JobManager, origin: &Origin, job: &str) -> Result<Arc<JobEntry>, String> {
    let Origin::Peer { node_id, .. } = origin else {
        return Err("not a member".into());
    };
    match jobs.shared.find(job) {
        Ok(entry) if entry.record().submitter == *node_id && entry.handle() == job => Ok(entry),
        _ => Err(format!("no job {job:?} of yours on this machine")),
    }
}

/// What one job connection serves with.
struct Connection<'a> {
    jobs: &'a JobManager,
    context: &'a Arc<PeerContext>,
    origin: &'a Origin,
}

async fn handle(
    request: JobRequest,
    connection: &Connection<'_>,
    writer: &mut Writer,
    incoming: &mut Incoming,
) -> Result<(), &'static str> {
    let Connection { jobs, origin, .. } = *connection;
    match request {
        JobRequest::Submit { spec } => {
            let inbox = &jobs.shared.inbox;
            let Some((workspace, checkpoint)) = receive_upload(&spec, inbox, writer, incoming).await? else {
                return Ok(());
            };
            match jobs.accept_hashed(*spec, workspace, checkpoint, origin) {
                Ok(record) => reply(writer, &JobReply::with(record, false)).await,
                Err(error) => reply(writer, &JobReply::refused(error.to_string())).await,
            }
        }
        JobRequest::Distribute { spec, nodes } => {
            let inbox = &jobs.shared.inbox;
            let Some(((workspace, _), checkpoint)) = receive_upload(&spec, inbox, writer, incoming).await?
            else {
                return Ok(());
            };
            let peer = Arc::clone(connection.context);
            let upload = (workspace, checkpoint);
            match crate::jobs::group::distribute(jobs, peer, *spec, upload, &nodes, origin).await {
                Ok(record) => reply(writer, &JobReply::with(record, false)).await,
                Err(error) => reply(writer, &JobReply::refused(error.to_string())).await,
            }
        }
        JobRequest::Follow { job, offset } => match own_job(jobs, origin, &job) {
            Ok(entry) => follow(jobs, &entry, origin, offset, writer, incoming).await,
            Err(why) => reply(writer, &JobReply::refused(why)).await,
        },
        JobRequest::Cancel { job } => match own_job(jobs, origin, &job) {
            Ok(entry) => {
                jobs.cancel(&entry, &cancelled_by(origin));
                reply(writer, &JobReply::with(entry.record(), false)).await
            }
            Err(why) => reply(writer, &JobReply::refused(why)).await,
        },
        JobRequest::Artifact { job, name } => {
            let path = own_job(jobs, origin, &job)
                .and_then(|e| jobs.artifact_path(&e, &name).map_err(|e| e.to_string()));
            match path {
                Ok(path) => send_file(&path, writer).await,
                Err(why) => reply(writer, &JobReply::refused(why)).await,
            }
        }
        JobRequest::Checkpoint { job, after_step } => match own_job(jobs, origin, &job) {
            Ok(entry) => send_checkpoint(jobs, &entry, after_step, writer).await,
            Err(why) => reply(writer, &JobReply::refused(why)).await,
        },
    }
}

/// Answers a coordinator asking for a running part's checkpoint: the reply names it, then
/// the file follows; a reply without one when there is nothing newer.
async fn send_checkpoint(
    jobs: &JobManager,
    entry: &JobEntry,
    after_step: i64,
    writer: &mut Writer,
) -> Result<(), &'static str> {
    match crate::jobs::checkpoint::take(&jobs.shared, entry, after_step).await {
        Ok(Some(taken)) => {
            let mut answer = JobReply::with(entry.record(), false);
            answer.checkpoint = Some(taken.snapshot.shipped.clone());
            reply(writer, &answer).await?;
            send_file(&taken.snapshot.path, writer).await
        }
        Ok(None) => reply(writer, &JobReply::with(entry.record(), false)).await,
        Err(error) => reply(writer, &JobReply::refused(error.to_string())).await,
    }
}

/// Streams output from `offset`, a reply at each state change, and a final reply once the
/// end is journalled and every byte was sent. A cancel may arrive meanwhile.
async fn follow(
    jobs: &JobManager,
    entry: &JobEntry,
    origin: &Origin,
    mut offset: u64,
    writer: &mut Writer,
    incoming: &mut Incoming,
) -> Result<(), &'static str> {
    let mut changes = jobs.shared.subscribe();
    let mut output = entry.output.subscribe();
    let mut told: Option<JobRecord> = None;
    loop {
        let (data, next, complete) = jobs.logs(entry, offset, CHUNK).map_err(|_| "closed")?;
        if !data.is_empty() {
            writer
                .send(RecordType::Log, &log_body(offset, &data))
                .await
                .map_err(|_| "closed")?;
            offset = next;
            continue;
        }
        let record = entry.record();
        if complete {
            return reply(writer, &JobReply::with(record, true)).await;
        }
        if told.as_ref().is_none_or(|t| t.state != record.state) {
            reply(writer, &JobReply::with(record.clone(), false)).await?;
            told = Some(record);
        }
        tokio::select! {
            _ = tokio::time::sleep(FOLLOW_POLL) => {}
            _ = changes.recv() => {}
            _ = output.changed() => {}
            got = incoming.recv() => match got {
                Some(Ok(record)) if record.record_type == RecordType::Request => {
                    match serde_json::from_slice::<JobRequest>(&record.body) {
                        Ok(JobRequest::Cancel { job }) if job == entry.handle() => jobs.cancel(entry, &cancelled_by(origin)),
                        _ => return Err("a request other than cancel while following a job"),
                    }
                }
                Some(Ok(record)) if record.record_type == RecordType::Ping => {
                    writer.send(RecordType::Pong, &[]).await.map_err(|_| "closed")?;
                }
                _ => return Err("closed"),
            },
        }
    }
}

/// Sends a file in DATA records and a DATA_END with what was actually read.
async fn send_file(path: &std::path::Path, writer: &mut Writer) -> Result<(), &'static str> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return reply(writer, &JobReply::refused("the artifact cannot be read")).await;
    };
    send_data(writer, &mut file).await.map_err(|_| "closed")
}
