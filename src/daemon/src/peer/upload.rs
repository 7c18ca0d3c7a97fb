// SPDX-License-Identifier: GPL-3.0-or-later
//! Files as DATA records on a job connection (PGR/1 §7.6). What follows a submit request:
//! the workspace, kept in memory (at most 16 MiB), then, when the spec names one, the
//! checkpoint the job starts from, written to a file as it arrives (at most 2 GiB); both are
//! hashed as they arrive and never take more than the spec announced. And the sending side
//! of any file: a checkpoint to start from, an artifact.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use partagpu_core::job::checkpoint::MAX_CHECKPOINT_BYTES;
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::ArtifactInfo;
use partagpu_core::job::wire::{data_end, parse_data_end, JobReply, CHUNK};
use partagpu_core::protocol::RecordType;
use sha2::{Digest, Sha256};

use super::jobs::{reply, Incoming};
use super::wire::{WireError, Writer};
use crate::jobs::inbox::{no_room_for, Partial};

/// Why a file was not sent whole.
#[derive(Debug, thiserror::Error)]
pub enum SendDataError {
    /// Reading it failed part way.
    #[error("it cannot be read: {0}")]
    Read(#[from] std::io::Error),
    /// The connection failed.
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// Sends what `source` holds as DATA records and a DATA_END of the SHA-256 and length of
/// what was actually read (the receiver compares them with what it was told to expect).
///
/// # Errors
/// [`SendDataError`].
pub async fn send_data(writer: &mut Writer, source: &mut impl Read) -> Result<(), SendDataError> {
    let mut hash = Sha256::new();
    let mut total = 0u64;
    let mut chunk = vec![0; CHUNK];
    loop {
        let read = source.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        hash.update(&chunk[..read]);
        total += read as u64;
        writer.send(RecordType::Data, &chunk[..read]).await?;
    }
    writer
        .send(RecordType::DataEnd, &data_end(hash.finalize().into(), total))
        .await?;
    Ok(())
}

/// What follows a submit or distribute request: the workspace and its SHA-256, then the
/// checkpoint to start from when the spec names one. `None` once a refusal was answered.
pub(super) async fn receive_upload(
    spec: &JobSpec,
    inbox: &Path,
    writer: &mut Writer,
    incoming: &mut Incoming,
) -> Result<Option<((Vec<u8>, [u8; 32]), Option<PathBuf>)>, &'static str> {
    let Some(workspace) = receive_workspace(spec, writer, incoming).await? else {
        return Ok(None);
    };
    let Some(announced) = &spec.resume_checkpoint else {
        return Ok(Some((workspace, None)));
    };
    let received = receive_checkpoint(announced, inbox, writer, incoming).await?;
    Ok(received.map(|path| (workspace, Some(path))))
}

/// Receives the workspace (never more than the spec announced, which is itself capped) and
/// its SHA-256, hashed as it arrives. `None` once a damaged workspace was answered.
async fn receive_workspace(
    spec: &JobSpec,
    writer: &mut Writer,
    incoming: &mut Incoming,
) -> Result<Option<(Vec<u8>, [u8; 32])>, &'static str> {
    let announced = spec
        .workspace_bytes
        .min(partagpu_core::job::workspace::MAX_WORKSPACE_BYTES);
    let mut workspace = Vec::new();
    let mut hash = Sha256::new();
    loop {
        let Some(Ok(record)) = incoming.recv().await else {
            return Err("closed");
        };
        match record.record_type {
            RecordType::Data => {
                if (workspace.len() + record.body.len()) as u64 > announced {
                    return Err("a workspace larger than it announced");
                }
                workspace.extend_from_slice(&record.body);
                hash.update(&record.body);
            }
            RecordType::DataEnd => {
                let Some((sha, total)) = parse_data_end(&record.body) else {
                    return Err("an invalid DATA_END");
                };
                let digest: [u8; 32] = hash.finalize().into();
                if total != workspace.len() as u64 || sha != digest {
                    reply(
                        writer,
                        &JobReply::refused("the workspace arrived damaged (length or SHA-256)"),
                    )
                    .await?;
                    return Ok(None);
                }
                return Ok(Some((workspace, digest)));
            }
            _ => return Err("a record out of place in a workspace upload"),
        }
    }
}

/// Receives the checkpoint `announced` (a spec's `resume_checkpoint`) into a new file of
/// `inbox`, synced before it is returned. `None` once a refusal was answered (damaged, or no
/// room on this machine): its records were read to their DATA_END, so the connection goes on.
async fn receive_checkpoint(
    announced: &ArtifactInfo,
    inbox: &Path,
    writer: &mut Writer,
    incoming: &mut Incoming,
) -> Result<Option<PathBuf>, &'static str> {
    let limit = announced.size.min(MAX_CHECKPOINT_BYTES);
    let mut trouble = no_room_for(inbox, limit);
    let mut file = None;
    let mut partial = None;
    if trouble.is_none() {
        match Partial::create(inbox) {
            Ok((opened, guard)) => {
                file = Some(opened);
                partial = Some(guard);
            }
            Err(why) => trouble = Some(why),
        }
    }
    let mut hash = Sha256::new();
    let mut received = 0u64;
    loop {
        let Some(Ok(record)) = incoming.recv().await else {
            return Err("closed");
        };
        match record.record_type {
            RecordType::Data => {
                received += record.body.len() as u64;
                if received > limit {
                    return Err("a checkpoint larger than it announced");
                }
                hash.update(&record.body);
                if let Some(error) = file
                    .as_mut()
                    .and_then(|f: &mut File| f.write_all(&record.body).err())
                {
                    trouble = Some(format!(
                        "this machine cannot keep the checkpoint to start from: {error}"
                    ));
                    file = None;
                }
            }
            RecordType::DataEnd => {
                let Some((sha, total)) = parse_data_end(&record.body) else {
                    return Err("an invalid DATA_END");
                };
                let digest: [u8; 32] = hash.finalize().into();
                let intact = total == received && sha == digest && received == announced.size;
                let matches = intact && hex::encode(digest) == announced.sha256;
                let synced = file.as_ref().map(File::sync_all);
                let why = match (trouble, synced) {
                    (Some(why), _) => why,
                    _ if !matches => {
                        "the checkpoint to start from arrived damaged (length or SHA-256)".into()
                    }
                    (None, Some(Err(error))) => {
                        format!("this machine cannot keep the checkpoint to start from: {error}")
                    }
                    (None, _) => return Ok(partial.map(Partial::keep)),
                };
                reply(writer, &JobReply::refused(why)).await?;
                return Ok(None);
            }
            _ => return Err("a record out of place in a checkpoint upload"),
        }
    }
}
