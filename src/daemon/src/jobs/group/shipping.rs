// SPDX-License-Identifier: GPL-3.0-or-later
//! The coordinator's copy of a training's newest checkpoint (docs/distribute.md,
//! "Checkpoints"). While the training runs, it looks every [`LOCAL_EVERY`] at the part on this
//! machine (a copy on the same disk), or, when none runs here, asks the first running part
//! elsewhere every [`REMOTE_EVERY`] over one job connection (the copy crosses the LAN the
//! training uses). It keeps only a newer step than it holds. A training that fails or is
//! cancelled, even with node 0's machine, leaves that copy to its submitter as an artifact.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use partagpu_core::job::checkpoint::{after_step, check_name, ShippedCheckpoint, MAX_CHECKPOINT_BYTES};
use partagpu_core::job::record::JobPart;
use partagpu_core::job::state::JobState;
use partagpu_core::job::wire::JobRequest;
use tokio::time::Instant;

use super::super::checkpoint;
use super::super::manager::{JobEntry, JobManager};
use super::super::remote::{self, fetch::receive_file};
use super::super::spool::append_log;
use crate::peer::wire::Channel;
use crate::peer::PeerContext;

/// Where the copy is kept, in the group's directory.
pub const DIR: &str = "checkpoint";
/// What the copy is (its step, name, size and SHA-256), beside it.
const HELD: &str = "held.json";
/// How often the part on this machine is looked at (reading its small index).
const LOCAL_EVERY: Duration = Duration::from_secs(1);
/// How often a part elsewhere is asked.
const REMOTE_EVERY: Duration = Duration::from_secs(5);

/// The checkpoint held in `group_dir`, if any.
#[must_use]
pub fn held(group_dir: &Path) -> Option<(ShippedCheckpoint, PathBuf)> {
    let dir = group_dir.join(DIR);
    let shipped: ShippedCheckpoint = serde_json::from_slice(&fs::read(dir.join(HELD)).ok()?).ok()?;
    check_name(&shipped.artifact.name).ok()?;
    let path = dir
        .join(format!("step-{}", shipped.step))
        .join(&shipped.artifact.name);
    Some((shipped, path))
}

/// Copies the training's newest checkpoint to this machine until the group ends, never from
/// the parts in `gone` (lost, or of an earlier launch: coordinator.rs).
pub async fn ship(
    jobs: JobManager,
    peer: Arc<PeerContext>,
    group: Arc<JobEntry>,
    gone: tokio::sync::watch::Receiver<BTreeSet<String>>,
) {
    let group_dir = jobs.shared.submitted.dir(group.handle());
    let mut asked_elsewhere: Option<Instant> = None;
    let mut link: Option<Link> = None;
    let mut told: Option<String> = None;
    loop {
        tokio::time::sleep(LOCAL_EVERY).await;
        if group.record().state.is_terminal() {
            return;
        }
        let Some((part, entry)) = source(&jobs, &group, &gone.borrow()) else {
            continue;
        };
        let after = after_step(held(&group_dir).map(|(h, _)| h).as_ref());
        let kept = if part.node == jobs.shared.node_id {
            take_here(&jobs, &entry, after, &group_dir).await
        } else if asked_elsewhere.is_none_or(|at| at.elapsed() >= REMOTE_EVERY) {
            asked_elsewhere = Some(Instant::now());
            fetch(&peer, &mut link, &part, after, &group_dir).await
        } else {
            continue;
        };
        match kept {
            Ok(Some(step)) => {
                tracing::info!(
                    group = group.handle(),
                    step,
                    from = part.node_name,
                    "checkpoint kept"
                );
            }
            Ok(None) => {}
            // A part given up on while it was being asked (its machine lost power, say): the
            // coordinator's log line says what became of it, and the copy is not missed.
            Err(_) if gone.borrow().contains(&part.job) => {}
            Err(why) => {
                // Said once in the training's log, so its user knows the copy is missing.
                let line = format!(
                    "[partagpu] the checkpoint of {} (node {}) cannot be copied to this machine: {why}\n",
                    part.node_name, part.node_rank
                );
                if told.as_deref() != Some(line.as_str()) {
                    tracing::warn!(group = group.handle(), "{}", line.trim_end());
                    let _ = append_log(&group_dir, line.as_bytes());
                    told = Some(line);
                }
            }
        }
    }
}

/// The part to copy from: the one running on this machine, else the running part of the
/// lowest node rank; none of those `gone`.
fn source(jobs: &JobManager, group: &JobEntry, gone: &BTreeSet<String>) -> Option<(JobPart, Arc<JobEntry>)> {
    let own = &jobs.shared.node_id;
    let mut running: Vec<(JobPart, Arc<JobEntry>)> = group
        .record()
        .parts
        .into_iter()
        .filter(|part| !gone.contains(&part.job))
        .filter_map(|part| {
            let entry = jobs.shared.find(&part.job).ok()?;
            matches!(entry.record().state, JobState::Running | JobState::Paused).then_some((part, entry))
        })
        .collect();
    running.sort_by_key(|(part, _)| (part.node != *own, part.node_rank));
    running.into_iter().next()
}

async fn take_here(
    jobs: &JobManager,
    entry: &JobEntry,
    after: i64,
    group_dir: &Path,
) -> Result<Option<i64>, String> {
    let Some(taken) = checkpoint::take(&jobs.shared, entry, after)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let shipped = taken.snapshot.shipped.clone();
    let place = place_of(group_dir, &shipped)?;
    if fs::rename(&taken.snapshot.path, &place).is_err() {
        fs::copy(&taken.snapshot.path, &place).map_err(|e| e.to_string())?;
    }
    keep(group_dir, &shipped).map(Some)
}

/// The job connection to the machine copied from, kept open between questions: a new one
/// every few seconds for hours would mean a handshake and a journal line each time.
struct Link {
    node: String,
    channel: Channel,
}

async fn fetch(
    peer: &PeerContext,
    link: &mut Option<Link>,
    part: &JobPart,
    after: i64,
    group_dir: &Path,
) -> Result<Option<i64>, String> {
    let open = match link {
        Some(open) if open.node == part.node => open,
        _ => {
            *link = None;
            let address = peer
                .fleet
                .members()
                .into_iter()
                .find(|m| m.node_id == part.node && m.online)
                .and_then(|m| m.address)
                .ok_or("the machine is offline")?;
            let channel = remote::connect(peer, address, &part.node).await?;
            link.insert(Link {
                node: part.node.clone(),
                channel,
            })
        }
    };
    let asked = ask(&mut open.channel, part, after, group_dir).await;
    if asked.is_err() {
        // The connection may be anywhere in a transfer: the next question dials again.
        *link = None;
    }
    asked
}

async fn ask(
    channel: &mut Channel,
    part: &JobPart,
    after: i64,
    group_dir: &Path,
) -> Result<Option<i64>, String> {
    let request = JobRequest::Checkpoint {
        job: part.job.clone(),
        after_step: after,
    };
    remote::send_request(channel, &request).await?;
    let answer = remote::answer(channel).await?;
    if !answer.ok {
        return Err(answer.error.unwrap_or_else(|| "it said no".into()));
    }
    let Some(shipped) = answer.checkpoint else {
        return Ok(None);
    };
    if shipped.step <= after || shipped.artifact.size > MAX_CHECKPOINT_BYTES {
        return Err(format!(
            "it offered step {} of {} bytes",
            shipped.step, shipped.artifact.size
        ));
    }
    let place = place_of(group_dir, &shipped)?;
    receive_file(channel, &shipped.artifact, &place).await?;
    keep(group_dir, &shipped).map(Some)
}

/// Where the copy of `shipped` goes (its step's directory, created).
pub(super) fn place_of(group_dir: &Path, shipped: &ShippedCheckpoint) -> Result<PathBuf, String> {
    check_name(&shipped.artifact.name).map_err(|e| e.to_string())?;
    let dir = group_dir.join(DIR).join(format!("step-{}", shipped.step));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir.join(&shipped.artifact.name))
}

/// Makes `shipped` (in place already) the held copy, then drops the older ones.
pub(super) fn keep(group_dir: &Path, shipped: &ShippedCheckpoint) -> Result<i64, String> {
    let dir = group_dir.join(DIR);
    let temporary = dir.join(format!("{HELD}.part"));
    fs::write(&temporary, serde_json::to_vec(shipped).unwrap_or_default())
        .and_then(|()| fs::rename(&temporary, dir.join(HELD)))
        .map_err(|e| e.to_string())?;
    let current = format!("step-{}", shipped.step);
    for old in fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = old.file_name();
        if name.to_string_lossy().starts_with("step-") && name != current.as_str() {
            let _ = fs::remove_dir_all(old.path());
        }
    }
    Ok(shipped.step)
}
