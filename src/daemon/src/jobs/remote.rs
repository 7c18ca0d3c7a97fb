// SPDX-License-Identifier: GPL-3.0-or-later
//! The submitting side of a job sent to a member: upload, then a follower that mirrors the
//! member's record and output into this machine's `submitted/` journal, fetches and checks
//! the artifacts, and forwards a cancel. After a lost connection (or a restart of this
//! service) it redials and resumes from the bytes it already has: nothing is lost, and a
//! gap would be marked.

use std::fs;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::JobState;
use partagpu_core::job::wire::{parse_log, JobReply, JobRequest};
use partagpu_core::protocol::RecordType;
use tokio::time::Instant;

use super::manager::{now_ms, JobEntry, JobError, JobManager, Stop};
use super::spool::append_log;
use super::store::files;
use crate::peer::client::{dial_for, Dialled};
use crate::peer::control::ClientHelloBody;
use crate::peer::upload::send_data;
use crate::peer::wire::Channel;
use crate::peer::PeerContext;
use fetch::fetch_all;

pub(crate) mod fetch;

/// How long the member may stay unreachable before the job is reported lost.
const GIVE_UP_AFTER: Duration = Duration::from_secs(120);
/// Longest wait for one answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// The member a job goes to.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its node id.
    pub node_id: String,
    /// Its name.
    pub name: String,
    /// Where it listens.
    pub address: SocketAddr,
}

/// Whether a user's `wanted` names the machine `name` with node id `node_id`: its display name
/// in any case, or at least 4 leading hex digits of its node id.
#[must_use]
pub fn names_machine(wanted: &str, name: &str, node_id: &str) -> bool {
    let lower = wanted.to_lowercase();
    name.to_lowercase() == lower || (wanted.len() >= 4 && node_id.starts_with(&lower))
}

/// Finds the member called `wanted` (display name, or node id or its prefix).
///
/// # Errors
/// [`JobError::NotFound`] / [`JobError::Peer`] with what to do.
pub fn find_member(peer: &PeerContext, wanted: &str) -> Result<Target, JobError> {
    let members = peer.fleet.members();
    let found: Vec<_> = members
        .iter()
        .filter(|m| {
            names_machine(
                wanted,
                m.state.as_ref().map_or("", |s| s.name.as_str()),
                &m.node_id,
            )
        })
        .collect();
    let member = match found.as_slice() {
        [one] => *one,
        [] => {
            return Err(JobError::NotFound(format!(
                "no member of the room is called {wanted:?} (see partagpuctl peers)"
            )))
        }
        _ => {
            return Err(JobError::NotFound(format!(
                "{wanted:?} names several members: give its node id"
            )))
        }
    };
    let name = member
        .state
        .as_ref()
        .map_or_else(|| member.node_id[..8].to_owned(), |s| s.name.clone());
    match (member.online, member.address) {
        (true, Some(address)) => Ok(Target {
            node_id: member.node_id.clone(),
            name,
            address,
        }),
        _ => Err(JobError::Peer(format!("{name} is offline"))),
    }
}

pub(crate) async fn connect(
    peer: &PeerContext,
    address: SocketAddr,
    node_id: &str,
) -> Result<Channel, String> {
    let room = peer.room.current().ok_or("this machine left the room")?;
    let Dialled { channel, node, .. } = dial_for(address, &room, peer, ClientHelloBody::job())
        .await
        .map_err(|e| e.to_string())?;
    if node.node_id.to_hex() != node_id {
        return Err(format!("another machine answers at {address} now"));
    }
    Ok(channel)
}

/// Sends one REQUEST.
pub(crate) async fn send_request(channel: &mut Channel, request: &JobRequest) -> Result<(), String> {
    let body = serde_json::to_vec(request).unwrap_or_default();
    channel
        .writer
        .send(RecordType::Request, &body)
        .await
        .map_err(|e| e.to_string())
}

/// The next record, within [`ANSWER_WITHIN`].
pub(crate) async fn receive(channel: &mut Channel) -> Result<partagpu_core::protocol::Record, String> {
    channel
        .reader
        .recv_before(Instant::now() + ANSWER_WITHIN)
        .await
        .map_err(|e| e.to_string())
}

pub(crate) async fn answer(channel: &mut Channel) -> Result<JobReply, String> {
    loop {
        let record = receive(channel).await?;
        match record.record_type {
            RecordType::Response => {
                return serde_json::from_slice(&record.body).map_err(|_| "an invalid answer".to_owned())
            }
            RecordType::Close => return Err("the member closed the connection".into()),
            _ => {}
        }
    }
}

/// Sends the file at `path` as DATA records and a DATA_END of what was read; a file that
/// changed since its spec was written is refused by the member on its SHA-256.
async fn send_checkpoint(channel: &mut Channel, path: &std::path::Path) -> Result<(), String> {
    let mut file =
        fs::File::open(path).map_err(|e| format!("the checkpoint to start from cannot be read: {e}"))?;
    send_data(&mut channel.writer, &mut file)
        .await
        .map_err(|e| format!("the checkpoint to start from was not sent whole: {e}"))
}

/// Sends `spec` and its workspace to `target`, then the file of its `resume_checkpoint`
/// (`checkpoint`); once the member has journalled it, journals the mirror here and starts
/// following. Returns the local record.
///
/// # Errors
/// [`JobError::Peer`] with the member's own refusal when it said no.
pub async fn submit(
    jobs: &JobManager,
    peer: Arc<PeerContext>,
    spec: JobSpec,
    (workspace, checkpoint): (Vec<u8>, Option<&std::path::Path>),
    target: Target,
    uid: u32,
) -> Result<JobRecord, JobError> {
    let failed = |why: String| JobError::Peer(format!("{}: {why}", target.name));
    let mut channel = connect(&peer, target.address, &target.node_id)
        .await
        .map_err(failed)?;
    let request = serde_json::to_vec(&JobRequest::Submit {
        spec: Box::new(spec.clone()),
    })
    .unwrap_or_default();
    channel
        .writer
        .send(RecordType::Request, &request)
        .await
        .map_err(|e| failed(e.to_string()))?;
    send_data(&mut channel.writer, &mut workspace.as_slice())
        .await
        .map_err(|e| failed(e.to_string()))?;
    if let Some(path) = checkpoint {
        send_checkpoint(&mut channel, path).await.map_err(failed)?;
    }
    let reply = answer(&mut channel).await.map_err(failed)?;
    let remote = match (reply.ok, reply.record) {
        (true, Some(record)) => *record,
        _ => {
            return Err(JobError::Peer(format!(
                "{} refused the job: {}",
                target.name,
                reply.error.unwrap_or_default()
            )))
        }
    };
    let mut record = remote;
    record.role = JobRole::Submitted;
    record.uid = Some(uid);
    record.node_name.clone_from(&target.name);
    record.log_bytes = 0;
    let shared = &jobs.shared;
    match shared.submitted.create(&spec, &record) {
        Ok(_) => {}
        Err(error) => {
            let cancel = serde_json::to_vec(&JobRequest::Cancel {
                job: record.job.clone(),
            })
            .unwrap_or_default();
            let _ = channel.writer.send(RecordType::Request, &cancel).await;
            return Err(JobError::Storage(error.to_string()));
        }
    }
    let entry = Arc::new(JobEntry::new(record.clone()));
    shared.insert(Arc::clone(&entry));
    tokio::spawn(follow(jobs.clone(), peer, entry, Some((channel, target.address))));
    Ok(record)
}

/// Mirrors a submitted job until its end (also used after a restart, with no channel).
pub async fn follow(
    jobs: JobManager,
    peer: Arc<PeerContext>,
    entry: Arc<JobEntry>,
    mut channel: Option<(Channel, SocketAddr)>,
) {
    let shared = Arc::clone(&jobs.shared);
    let mut last_contact = Instant::now();
    let mut retry = Duration::from_secs(1);
    loop {
        let record = entry.record();
        if record.state.is_terminal() {
            return;
        }
        let (mut open, _address) = match channel.take() {
            Some(open) => open,
            None => {
                let address = peer
                    .fleet
                    .members()
                    .into_iter()
                    .find(|m| m.node_id == record.node)
                    .and_then(|m| m.address);
                match address {
                    Some(address) => match connect(&peer, address, &record.node).await {
                        Ok(open) => (open, address),
                        Err(error) => {
                            tracing::debug!(job = entry.handle(), %error, "cannot reach the executing member yet");
                            if last_contact.elapsed() > GIVE_UP_AFTER {
                                let why = format!(
                                    "{} could not be reached for {} s",
                                    record.node_name,
                                    GIVE_UP_AFTER.as_secs()
                                );
                                shared.commit(&entry, |r| {
                                    super::runner::end(r, JobState::Lost, Some(why), None)
                                });
                                return;
                            }
                            tokio::time::sleep(retry).await;
                            retry = (retry * 2).min(Duration::from_secs(10));
                            continue;
                        }
                    },
                    None => {
                        if last_contact.elapsed() > GIVE_UP_AFTER {
                            let why = format!("{} left the room or is offline", record.node_name);
                            shared.commit(&entry, |r| super::runner::end(r, JobState::Lost, Some(why), None));
                            return;
                        }
                        tokio::time::sleep(retry).await;
                        continue;
                    }
                }
            }
        };
        retry = Duration::from_secs(1);
        match mirror(&jobs, &entry, &mut open).await {
            Ok(()) => return,
            Err(error) => {
                tracing::info!(job = entry.handle(), %error, "the job connection ended; resuming");
                last_contact = Instant::now();
            }
        }
    }
}

/// One connection's worth of following. `Ok` once the end is journalled here.
async fn mirror(jobs: &JobManager, entry: &Arc<JobEntry>, channel: &mut Channel) -> Result<(), String> {
    let shared = &jobs.shared;
    let dir = shared.submitted.dir(entry.handle());
    let mut have = fs::metadata(dir.join(files::LOG)).map_or(0, |m| m.len());
    let follow = JobRequest::Follow {
        job: entry.handle().to_owned(),
        offset: have,
    };
    send_request(channel, &follow).await?;
    let mut stop = entry.stop.subscribe();
    let mut cancel_sent = false;
    loop {
        if !cancel_sent
            && stop
                .borrow_and_update()
                .as_ref()
                .is_some_and(|s| matches!(s, Stop::Cancelled(_)))
        {
            let cancel = JobRequest::Cancel {
                job: entry.handle().to_owned(),
            };
            send_request(channel, &cancel).await?;
            cancel_sent = true;
        }
        let record = tokio::select! {
            record = channel.reader.recv_before(Instant::now() + Duration::from_secs(3600)) => record.map_err(|e| e.to_string())?,
            _ = stop.changed(), if !cancel_sent => continue,
        };
        match record.record_type {
            RecordType::Log => {
                let (offset, bytes) = parse_log(&record.body).ok_or("an invalid LOG record")?;
                if offset > have {
                    append_log(
                        &dir,
                        format!(
                            "\n[partagpu: {} bytes of output lost in transit]\n",
                            offset - have
                        )
                        .as_bytes(),
                    )
                    .map_err(|e| e.to_string())?;
                    have = offset;
                }
                let skip = usize::try_from(have - offset)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                append_log(&dir, &bytes[skip..]).map_err(|e| e.to_string())?;
                have += (bytes.len() - skip) as u64;
                shared.note_output(entry, have);
            }
            RecordType::Response => {
                let reply: JobReply = serde_json::from_slice(&record.body).map_err(|_| "an invalid reply")?;
                let Some(remote) = reply.record else {
                    return Err(reply
                        .error
                        .unwrap_or_else(|| "the member refused to follow the job".into()));
                };
                if reply.done {
                    let artifacts = fetch_all(channel, entry.handle(), &remote.artifacts, &dir).await;
                    shared.commit(entry, |r| {
                        adopt(r, &remote);
                        r.log_bytes = have;
                        match artifacts {
                            Ok(list) => r.artifacts = list,
                            Err(why) => {
                                r.artifacts = Vec::new();
                                let _ = append_log(
                                    &dir,
                                    format!("[partagpu: artifacts not fetched: {why}]\n").as_bytes(),
                                );
                            }
                        }
                    });
                    channel.writer.close("done").await;
                    return Ok(());
                }
                shared.commit(entry, |r| adopt(r, &remote));
            }
            RecordType::Ping => channel
                .writer
                .send(RecordType::Pong, &[])
                .await
                .map_err(|e| e.to_string())?,
            RecordType::Close => return Err("the member closed the connection".into()),
            _ => {}
        }
    }
}

/// Copies what the executing member says into the local mirror (not terminal: terminal is
/// committed with the artifacts).
fn adopt(local: &mut JobRecord, remote: &JobRecord) {
    local.state = remote.state;
    local.reason.clone_from(&remote.reason);
    local.exit_code = remote.exit_code;
    local.started_ms = remote.started_ms;
    local.ended_ms = remote.ended_ms.or(if remote.state.is_terminal() {
        Some(now_ms())
    } else {
        None
    });
    local.memory_peak_bytes = remote.memory_peak_bytes;
    local.cpu_usage_us = remote.cpu_usage_us;
}
