// SPDX-License-Identifier: GPL-3.0-or-later
//! The coordinator of a training: every [`TICK`] it copies the parts' new output into the
//! group's log (taking out the training reports), follows their states, goes on without a
//! part that left an elastic training and sends it again when its machine returns, starts
//! the training again on the others when node 0 left it, stops them all when one fails or
//! on request, and ends the group in one terminal state.

use std::collections::BTreeMap;
use std::fs;
use std::sync::Arc;

use partagpu_core::job::record::JobPart;
use partagpu_core::job::state::JobState;
use partagpu_core::job::training::{self, TrainingReport, TrainingUpdate};

use super::super::manager::{JobEntry, JobManager, Stop};
use super::super::spool::{append_log, read_log};
use super::super::store::files;
use super::ending::finish;
use super::{elastic, rejoin, relaunch, shipping, TICK};
use crate::peer::PeerContext;

/// Where each part's output has been copied up to, beside the group's log (not synced: after
/// a restart of this service at worst a few lines repeat).
const OFFSETS: &str = "parts.offsets";

/// Follows the parts until the group ends (also after a restart of this service).
pub async fn coordinate(jobs: JobManager, peer: Arc<PeerContext>, group: Arc<JobEntry>) {
    let shared = Arc::clone(&jobs.shared);
    let dir = shared.submitted.dir(group.handle());
    let mut offsets: BTreeMap<String, u64> = fs::read(dir.join(OFFSETS))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut partial: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut failure: Option<String> = None;
    let mut stop_sent = false;
    let mut returns = rejoin::Returns::default();
    let mut losses = elastic::Losses::new(shared.submitted.spec(group.handle()).and_then(|s| s.min_nodes));
    let mut launches = relaunch::Launches::load(&dir);
    let watcher = peer.fleet.watcher();
    // The parts the checkpoint is no longer copied from: lost, or of an earlier launch.
    let (gone, gone_seen) = tokio::sync::watch::channel(std::collections::BTreeSet::new());
    let shipper = tokio::spawn(shipping::ship(
        jobs.clone(),
        Arc::clone(&peer),
        Arc::clone(&group),
        gone_seen,
    ));
    loop {
        let record = group.record();
        let stop = group.stop.borrow().clone();
        let mut states = Vec::new();
        for part in &record.parts {
            let Ok(entry) = shared.find(&part.job) else {
                states.push((
                    part.clone(),
                    JobState::Lost,
                    Some("its record is gone".to_owned()),
                ));
                continue;
            };
            let copied = copy_output(&jobs, &entry, part, &dir, &mut offsets, &mut partial);
            if copied.logged {
                shared.note_output(&group, fs::metadata(dir.join(files::LOG)).map_or(0, |m| m.len()));
            }
            if !copied.reports.is_empty() {
                shared.commit(&group, |r| {
                    let training = r.training.get_or_insert_with(TrainingReport::default);
                    for update in copied.reports {
                        training.apply(update);
                    }
                });
            }
            let now = entry.record();
            states.push((part.clone(), now.state, now.reason.clone()));
        }
        let _ = fs::write(
            dir.join(OFFSETS),
            serde_json::to_vec(&offsets).unwrap_or_default(),
        );
        // Decisions are about the current launch; earlier ones' parts only end (relaunch.rs).
        let current = launches.current(&states);
        // Its link gives up after a shorter silence than PGR/1's (fleet/watched.rs).
        watcher.set(losses.watched(&current, &shared.node_id));
        if failure.is_none() {
            failure = launches.interrupted(&states);
        }
        if failure.is_none() && !launches.pending() {
            let mut departed: Vec<(JobPart, elastic::Departure)> =
                vanished(&peer, &shared.node_id, &current, &losses)
                    .into_iter()
                    .map(|part| (part, elastic::Departure::Vanished))
                    .collect();
            if losses.elastic() {
                // Without elasticity a preempted part is a failure like any other (below).
                departed.extend(
                    current
                        .iter()
                        .filter(|(p, s, _)| *s == JobState::Preempted && !losses.is_lost(&p.job))
                        .map(|(p, _, _)| (p.clone(), elastic::Departure::Preempted)),
                );
            }
            failure = match leave_behind(&mut losses, departed, &current, &dir, group.handle()) {
                Left::Stays => None,
                Left::Ends(why) => Some(why),
                Left::NodeZero(what) => match launches.begin(&what, &current, &dir) {
                    Ok(running) => {
                        for job in running {
                            if let Ok(entry) = shared.find(&job) {
                                jobs.cancel(&entry, "the training, to start again without its node 0");
                            }
                        }
                        None
                    }
                    Err(why) => Some(why),
                },
            };
            if !launches.pending() {
                failure = failure.or_else(|| first_failure(&shared, &current, &losses));
            }
        }
        let mut launched = false;
        if failure.is_none() && stop.is_none() && launches.pending() {
            match launches.go_on(&jobs, &peer, &group, &dir, &states).await {
                Ok(made) => launched = made,
                Err(why) => failure = Some(why),
            }
        }
        if launched {
            // The new parts are followed from the next look on; the machines of the new
            // launch may leave and come back in their turn.
            returns = rejoin::Returns::default();
            tokio::time::sleep(TICK).await;
            continue;
        }
        gone.send_if_modified(|gone| {
            let before = gone.len();
            gone.extend(
                states
                    .iter()
                    .map(|(p, _, _)| &p.job)
                    .filter(|job| losses.is_lost(job) || launches.is_retired(job))
                    .cloned(),
            );
            gone.len() != before
        });
        if failure.is_none()
            && stop.is_none()
            && !launches.pending()
            && (current.iter().any(|(p, _, _)| losses.is_lost(&p.job))
                || !rejoin::absent(&states, &current).is_empty())
        {
            rejoin::bring_back(
                &jobs,
                &peer,
                &group,
                &dir,
                (&states, &current),
                &losses,
                &mut returns,
            )
            .await;
        }
        if (failure.is_some() || stop.is_some()) && !stop_sent {
            stop_sent = true;
            let by = match &stop {
                Some(Stop::Cancelled(by)) => by.clone(),
                _ => "the training, because a part ended".to_owned(),
            };
            for (part, state, _) in &states {
                if let (false, Ok(entry)) = (state.is_terminal(), shared.find(&part.job)) {
                    jobs.cancel(&entry, &by);
                }
            }
        }
        if states.iter().any(|(p, s, _)| p.state != *s) {
            shared.commit(&group, |r| {
                for (part, (_, state, _)) in r.parts.iter_mut().zip(&states) {
                    part.state = *state;
                }
            });
        }
        // A part on a machine that went offline cannot report its end any more; once the
        // others have stopped, the training ends without waiting for its follower to give up.
        let offline: Vec<&str> = if failure.is_some() {
            offline_nodes(&peer, &shared.node_id, &states)
        } else {
            Vec::new()
        };
        let waiting = launches.pending() && failure.is_none() && stop.is_none();
        if !waiting
            && states.iter().all(|(p, s, _)| {
                s.is_terminal() || offline.contains(&p.node.as_str()) || losses.is_lost(&p.job)
            })
        {
            let mut states = states;
            losses.mark(&mut states);
            for (job, rest) in std::mem::take(&mut partial)
                .into_iter()
                .filter(|(_, rest)| !rest.is_empty())
            {
                if let Some(part) = record.parts.iter().find(|p| p.job == job) {
                    let _ = append_log(&dir, &prefixed(part, &rest));
                }
            }
            // No copy may land once the end is being written.
            shipper.abort();
            let _ = shipper.await;
            finish(&jobs, &group, &states, &launches, stop, failure);
            return;
        }
        tokio::time::sleep(TICK).await;
    }
}

/// Parts whose machine left the room's links while they ran (and not given up on yet): unless
/// the training is elastic it cannot go on, and the others' errors (a broken collective) would
/// hide which machine it was.
fn vanished(
    peer: &PeerContext,
    own: &str,
    states: &[(JobPart, JobState, Option<String>)],
    losses: &elastic::Losses,
) -> Vec<JobPart> {
    let members = peer.fleet.members();
    states
        .iter()
        .filter(|(part, state, _)| {
            let online = part.node == own || members.iter().any(|m| m.node_id == part.node && m.online);
            !online && !state.is_terminal() && !losses.is_lost(&part.job)
        })
        .map(|(part, _, _)| part.clone())
        .collect()
}

/// What the parts that left mean for the training.
enum Left {
    /// It goes on with the others (or none left).
    Stays,
    /// It must end; why.
    Ends(String),
    /// Node 0 left, and enough others remain to start it again (relaunch.rs); what happened.
    NodeZero(String),
}

/// Parts that left: an elastic training goes on without them while it can (said in its log);
/// otherwise the reason it must end, or node 0's departure.
fn leave_behind(
    losses: &mut elastic::Losses,
    departed: Vec<(JobPart, elastic::Departure)>,
    states: &[(JobPart, JobState, Option<String>)],
    dir: &std::path::Path,
    handle: &str,
) -> Left {
    for (part, how) in departed {
        match losses.left(&part, states, how) {
            elastic::Verdict::GoesOn(line) => {
                tracing::warn!(group = handle, part = part.job, "{}", line.trim_end());
                let _ = append_log(dir, line.as_bytes());
            }
            elastic::Verdict::Ends(why) => return Left::Ends(why),
            elastic::Verdict::StartsAgain(what) => return Left::NodeZero(what),
        }
    }
    Left::Stays
}

/// Nodes of unfinished parts that are offline now.
fn offline_nodes<'a>(
    peer: &PeerContext,
    own: &str,
    states: &'a [(JobPart, JobState, Option<String>)],
) -> Vec<&'a str> {
    let members = peer.fleet.members();
    states
        .iter()
        .filter(|(p, s, _)| {
            !s.is_terminal() && p.node != own && !members.iter().any(|m| m.node_id == p.node && m.online)
        })
        .map(|(p, _, _)| p.node.as_str())
        .collect()
}

/// The part that failed first (the others usually fail because of it).
fn first_failure(
    shared: &super::super::manager::Shared,
    states: &[(JobPart, JobState, Option<String>)],
    losses: &elastic::Losses,
) -> Option<String> {
    states
        .iter()
        .filter(|(p, s, _)| s.is_terminal() && *s != JobState::Succeeded && !losses.is_lost(&p.job))
        .min_by_key(|(part, _, _)| {
            shared
                .find(&part.job)
                .ok()
                .and_then(|e| e.record().ended_ms)
                .unwrap_or(u64::MAX)
        })
        .map(|(p, s, why)| {
            format!(
                "{} (node {}) {}: {}",
                p.node_name,
                p.node_rank,
                s.as_str(),
                why.clone().unwrap_or_default()
            )
        })
}

fn prefixed(part: &JobPart, line: &[u8]) -> Vec<u8> {
    let mut out = format!("[{}/{}] ", part.node_name, part.node_rank).into_bytes();
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// What [`copy_output`] found.
struct Copied {
    /// Lines were added to the group's log.
    logged: bool,
    /// The training reports among the lines (kept out of the log: they are for the
    /// coordinator, and their sentences are also printed for people).
    reports: Vec<TrainingUpdate>,
}

/// Moves the complete lines a part wrote since last time into the group's log, and takes
/// out its training reports.
fn copy_output(
    jobs: &JobManager,
    entry: &JobEntry,
    part: &JobPart,
    dir: &std::path::Path,
    offsets: &mut BTreeMap<String, u64>,
    partial: &mut BTreeMap<String, Vec<u8>>,
) -> Copied {
    let mut copied = Copied {
        logged: false,
        reports: Vec::new(),
    };
    let record = entry.record();
    let part_dir = jobs.shared.store_of(&record).dir(&record.job);
    let offset = offsets.entry(part.job.clone()).or_insert(0);
    let Ok((data, next)) = read_log(&part_dir, *offset, 1 << 20) else {
        return copied;
    };
    *offset = next;
    let pending = partial.entry(part.job.clone()).or_default();
    pending.extend_from_slice(&data);
    let mut out = Vec::new();
    while let Some(end) = pending.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = pending.drain(..=end).collect();
        let text = String::from_utf8_lossy(&line[..line.len() - 1]);
        match training::parse_line(&text) {
            Ok(Some(update)) => copied.reports.push(update),
            Ok(None) => out.extend(prefixed(part, &line)),
            Err(why) => {
                tracing::debug!(part = part.job, "{why}");
                out.extend(prefixed(part, &line));
            }
        }
    }
    copied.logged = !out.is_empty() && append_log(dir, &out).is_ok();
    copied
}
