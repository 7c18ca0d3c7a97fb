// SPDX-License-Identifier: GPL-3.0-or-later
//! Files coming back from a member over a job connection: a job's artifacts after its end,
//! and a running part's checkpoint. Each is written beside its place under a hidden name,
//! checked (length and SHA-256 against what was announced) and only then renamed into place.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use partagpu_core::job::artifacts::validate_artifact_name;
use partagpu_core::job::state::ArtifactInfo;
use partagpu_core::job::wire::{parse_data_end, JobRequest};
use partagpu_core::protocol::RecordType;
use sha2::{Digest, Sha256};

use super::super::store::files;
use super::{receive, send_request};
use crate::peer::wire::Channel;

/// Fetches every artifact into `dir/artifacts`, each checked before it is renamed into place.
pub(super) async fn fetch_all(
    channel: &mut Channel,
    job: &str,
    wanted: &[ArtifactInfo],
    dir: &Path,
) -> Result<Vec<ArtifactInfo>, String> {
    let mut total = 0u64;
    let mut fetched = Vec::new();
    for info in wanted {
        validate_artifact_name(&info.name).map_err(|e| e.to_string())?;
        total += info.size;
        if total > partagpu_core::job::artifacts::MAX_ARTIFACT_TOTAL {
            return Err("the artifacts are larger than 256 MiB".into());
        }
        let request = JobRequest::Artifact {
            job: job.to_owned(),
            name: info.name.clone(),
        };
        send_request(channel, &request).await?;
        receive_file(channel, info, &dir.join(files::ARTIFACTS).join(&info.name)).await?;
        fetched.push(info.clone());
    }
    Ok(fetched)
}

/// Receives the DATA records and DATA_END of the file `info` announces into `path` (its
/// directory created 0700), checked before it is renamed into place.
pub(crate) async fn receive_file(
    channel: &mut Channel,
    info: &ArtifactInfo,
    path: &Path,
) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| e.to_string())?;
    }
    // A hidden sibling name no artifact can have (names never start with ".partagpu-").
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".partagpu-{file_name}.partial"));
    let mut file = File::create(&partial).map_err(|e| e.to_string())?;
    let mut hash = Sha256::new();
    let mut got = 0u64;
    loop {
        let record = receive(channel).await.inspect_err(|_| {
            let _ = fs::remove_file(&partial);
        })?;
        match record.record_type {
            RecordType::Data => {
                got += record.body.len() as u64;
                if got > info.size {
                    let _ = fs::remove_file(&partial);
                    return Err(format!("{} is longer than announced", info.name));
                }
                hash.update(&record.body);
                file.write_all(&record.body).map_err(|e| e.to_string())?;
            }
            RecordType::DataEnd => {
                let (sha, len) = parse_data_end(&record.body).ok_or("an invalid DATA_END")?;
                let digest: [u8; 32] = hash.finalize().into();
                if len != got || sha != digest || hex::encode(digest) != info.sha256 || got != info.size {
                    let _ = fs::remove_file(&partial);
                    return Err(format!("{} arrived damaged", info.name));
                }
                file.sync_all().map_err(|e| e.to_string())?;
                fs::rename(&partial, path).map_err(|e| e.to_string())?;
                return Ok(());
            }
            RecordType::Response => {
                let _ = fs::remove_file(&partial);
                return Err(format!("{} could not be sent", info.name));
            }
            _ => {}
        }
    }
}
