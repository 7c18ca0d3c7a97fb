// SPDX-License-Identifier: GPL-3.0-or-later
//! How a training ends: in one terminal state, with rank 0's artifacts when it succeeded
//! (every rank's when asked), or with the last checkpoint the coordinator holds when not.

use std::fs;

use partagpu_core::job::checkpoint::ShippedCheckpoint;
use partagpu_core::job::record::JobPart;
use partagpu_core::job::state::JobState;

use super::super::manager::{JobEntry, JobManager, Stop};
use super::super::runner::end;
use super::super::spool::append_log;
use super::super::store::files;
use super::{rejoin, relaunch, shipping};

/// The name a part's artifact gets in its training: rank 0's keep theirs (`model.pt`), the
/// other ranks' go under `rank-N/` (only when every rank's were asked for).
fn artifact_in_group(node_rank: u32, name: &str) -> String {
    if node_rank == 0 {
        name.to_owned()
    } else {
        format!("rank-{node_rank}/{name}")
    }
}

/// What the log says of a checkpoint left to the submitter.
fn kept_line(shipped: &ShippedCheckpoint) -> String {
    format!(
        "[partagpu] its last checkpoint (step {}) is kept: {}. Pass it as resume_from (--resume-from) to go on from there.\n",
        shipped.step, shipped.artifact.name
    )
}

/// A training that did not succeed leaves the newest checkpoint copied to this machine as
/// its artifact, said in its log.
fn last_checkpoint(dir: &std::path::Path) -> Option<partagpu_core::job::state::ArtifactInfo> {
    let (shipped, path) = shipping::held(dir)?;
    let to = dir.join(files::ARTIFACTS).join(&shipped.artifact.name);
    fs::create_dir_all(dir.join(files::ARTIFACTS)).ok()?;
    fs::rename(&path, &to).ok()?;
    let line = kept_line(&shipped);
    let _ = append_log(dir, line.as_bytes());
    Some(shipped.artifact)
}

/// The group's one terminal state, with rank 0's artifacts when it succeeded (every rank's
/// when the spec asked), or its last checkpoint when it did not.
pub(super) fn finish(
    jobs: &JobManager,
    group: &JobEntry,
    states: &[(JobPart, JobState, Option<String>)],
    launches: &relaunch::Launches,
    stop: Option<Stop>,
    failure: Option<String>,
) {
    let shared = &jobs.shared;
    let dir = shared.submitted.dir(group.handle());
    // No machine rejoins an ended training.
    let _ = fs::remove_file(dir.join(rejoin::WORKSPACE));
    let _ = fs::remove_file(dir.join(rejoin::CHECKPOINT));
    let _ = fs::remove_file(dir.join(rejoin::LAUNCH));
    let mut artifacts = Vec::new();
    let (state, reason) = match (&stop, failure) {
        (Some(Stop::Cancelled(by)), _) => {
            artifacts.extend(last_checkpoint(&dir));
            (JobState::Cancelled, Some(format!("cancelled by {by}")))
        }
        (_, Some(why)) => {
            artifacts.extend(last_checkpoint(&dir));
            (JobState::Failed, Some(why))
        }
        _ => {
            // Parts other than rank 0 only collected artifacts if every rank's were asked;
            // those of an earlier launch were stopped before their end.
            for (part, _, _) in states.iter().filter(|(p, _, _)| !launches.is_retired(&p.job)) {
                let Ok(entry) = shared.find(&part.job) else {
                    continue;
                };
                let record = entry.record();
                let from = shared.store_of(&record).dir(&record.job).join(files::ARTIFACTS);
                for info in &record.artifacts {
                    let name = artifact_in_group(part.node_rank, &info.name);
                    let to = dir.join(files::ARTIFACTS).join(&name);
                    let copied = to
                        .parent()
                        .map_or(Ok(()), fs::create_dir_all)
                        .and_then(|()| fs::copy(from.join(&info.name), &to));
                    if copied.is_ok() {
                        let mut info = info.clone();
                        info.name = name;
                        artifacts.push(info);
                    }
                }
            }
            (JobState::Succeeded, None)
        }
    };
    let _ = fs::remove_dir_all(dir.join(shipping::DIR));
    let log_len = fs::metadata(dir.join(files::LOG)).map_or(0, |m| m.len());
    shared.commit(group, |r| {
        end(r, state, reason, None);
        r.artifacts = artifacts;
        r.log_bytes = log_len;
        for (part, (_, s, _)) in r.parts.iter_mut().zip(states) {
            part.state = *s;
        }
    });
}
