// SPDX-License-Identifier: GPL-3.0-or-later
//! One job's life on this machine, from the accepted record to its one terminal state:
//! start, follow the owner (pause freezes within a second, limits apply live, a pause past
//! the grace preempts), stop on request (SIGINT, SIGTERM, SIGKILL of the whole cgroup),
//! then collect artifacts, clean up, and journal the end before anyone is told.

use std::sync::Arc;
use std::time::{Duration, Instant};

use partagpu_core::job::artifacts::{MAX_ARTIFACT_FILES, MAX_ARTIFACT_TOTAL};
use partagpu_core::job::spec::JobSpec;
use partagpu_core::job::state::JobState;
use partagpu_core::job::workspace::WorkspaceEntry;
use partagpu_core::size::format_size;
use rustix::process::Signal;

use super::artifacts::collect;
use super::cgroup::JobCgroup;
use super::exec::Started;
use super::manager::{now_ms, JobEntry, Shared, Stop};
use super::spool::append_log;
use super::store::files;

/// How often output is moved to the log and limits are checked.
const TICK: Duration = Duration::from_millis(100);
/// How long a freeze may take before it is reported as failed.
const FREEZE_WITHIN: Duration = Duration::from_secs(1);

/// Where a stop request is in its escalation.
struct Stopping {
    cause: Stop,
    next: Option<(Instant, Signal)>,
}

/// Runs job `entry` to its end. `workspace` is the checked tar and its plan.
pub async fn run(
    shared: Arc<Shared>,
    entry: Arc<JobEntry>,
    spec: JobSpec,
    workspace: (Vec<u8>, Vec<WorkspaceEntry>),
) {
    let handle = entry.handle().to_owned();
    let dir = shared.jobs.dir(&handle);
    let mut stop_requests = entry.stop.subscribe();
    let mut policy_changes = shared.sharing.subscribe();
    let policy = shared.sharing.policy();
    let started = shared
        .exec
        .start(&handle, &dir, &spec, (&workspace.0, &workspace.1), &policy.limits);
    drop(workspace);
    // In the workspace now, or the start failed: either way no longer needed on disk.
    let _ = std::fs::remove_file(dir.join(super::store::files::RESUME_CHECKPOINT));
    let Started {
        cgroup,
        mut child,
        mut spool,
        ..
    } = match started {
        Ok(started) => started,
        Err(why) => {
            shared.commit(&entry, |r| end(r, JobState::Failed, Some(why), None));
            return;
        }
    };
    shared.commit(&entry, |r| {
        r.state = JobState::Running;
        r.started_ms = Some(now_ms());
    });
    let deadline = Instant::now() + Duration::from_secs(spec.time_limit_s);
    let mut paused_since = None::<Instant>;
    let mut stopping = None::<Stopping>;
    let mut oom_handled = false;
    let mut tick = tokio::time::interval(TICK);
    let initial = stop_requests.borrow_and_update().clone();
    if let Some(cause) = initial {
        stopping = Some(begin_stop(cause, cgroup.as_ref(), &shared));
    } else if shared.sharing.policy().paused {
        // The owner paused between acceptance and start: the change is already seen.
        paused_since = Some(Instant::now());
        freeze(&shared, &entry, cgroup.as_ref()).await;
    }
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = tick.tick() => {
                if let Ok(added) = spool.pump(now_ms()) {
                    if added > 0 {
                        shared.note_output(&entry, spool.log_len());
                    }
                }
                // cgroup v1 has no group OOM kill: the kernel kills one process, the
                // service the rest, so a half-dead job does not linger.
                if !oom_handled && cgroup.oom_kills().unwrap_or(0) > 0 {
                    oom_handled = true;
                    let _ = cgroup.kill_all();
                }
                let now = Instant::now();
                if stopping.is_none() && now >= deadline {
                    stopping = Some(begin_stop(Stop::TimeLimit, cgroup.as_ref(), &shared));
                }
                if stopping.is_none()
                    && paused_since.is_some_and(|since| now.duration_since(since) >= shared.exec.settings.pause_grace)
                {
                    stopping = Some(begin_stop(Stop::Preempted, cgroup.as_ref(), &shared));
                }
                if let Some(Stopping { next: Some((at, signal)), .. }) = &mut stopping {
                    if now >= *at {
                        escalate(cgroup.as_ref(), *signal, &shared, stopping.as_mut());
                    }
                }
            }
            Ok(()) = stop_requests.changed(), if stopping.is_none() => {
                if let Some(cause) = stop_requests.borrow_and_update().clone() {
                    stopping = Some(begin_stop(cause, cgroup.as_ref(), &shared));
                }
            }
            Ok(()) = policy_changes.changed() => {
                let policy = shared.sharing.policy();
                let _ = cgroup.set_limits(&shared.exec.limits_for(&spec, &policy.limits));
                if policy.paused && paused_since.is_none() && stopping.is_none() {
                    paused_since = Some(Instant::now());
                    freeze(&shared, &entry, cgroup.as_ref()).await;
                } else if !policy.paused && paused_since.is_some() {
                    paused_since = None;
                    if cgroup.thaw().is_ok() {
                        shared.commit(&entry, |r| r.state = JobState::Running);
                    }
                }
            }
        }
    };
    let _ = spool.finish(now_ms());
    let oom = cgroup.oom_kills().unwrap_or(0) > 0;
    let pids_hit = cgroup.pids_limit_hits().unwrap_or(0) > 0;
    let memory_peak = cgroup.memory_peak_bytes().ok();
    let cpu = cgroup.cpu_usage_us().ok();
    let _ = cgroup.kill_all();
    let artifacts = gather_artifacts(&shared, &handle, &spec, &dir);
    let ram_limit = shared
        .exec
        .limits_for(&spec, &shared.sharing.policy().limits)
        .memory_bytes;
    let code = status.ok().and_then(|s| s.code());
    let (state, reason) = outcome(
        stopping.map(|s| s.cause),
        oom,
        pids_hit,
        code,
        ram_limit,
        spec.time_limit_s,
    );
    shared.exec.clean_up(&handle, Some(cgroup.as_ref()));
    let log_len = std::fs::metadata(dir.join(files::LOG)).map_or(0, |m| m.len());
    shared.commit(&entry, |r| {
        end(r, state, reason, code);
        r.artifacts = artifacts;
        r.memory_peak_bytes = memory_peak;
        r.cpu_usage_us = cpu;
        r.log_bytes = log_len;
    });
}

/// Marks a record ended.
pub fn end(
    record: &mut partagpu_core::job::record::JobRecord,
    state: JobState,
    reason: Option<String>,
    code: Option<i32>,
) {
    record.state = state;
    record.reason = reason;
    record.exit_code = code;
    record.ended_ms = Some(now_ms());
}

/// Freezes the job and journals `paused` once the freeze has completed (within a second).
async fn freeze(shared: &Shared, entry: &JobEntry, cgroup: &dyn JobCgroup) {
    if let Err(error) = cgroup.freeze() {
        tracing::error!(job = entry.handle(), %error, "cannot freeze a job");
        return;
    }
    let started = Instant::now();
    while started.elapsed() < FREEZE_WITHIN {
        if cgroup.is_frozen().unwrap_or(false) {
            tracing::info!(
                job = entry.handle(),
                ms = started.elapsed().as_millis() as u64,
                "job frozen"
            );
            shared.commit(entry, |r| r.state = JobState::Paused);
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tracing::error!(job = entry.handle(), "a job did not freeze within 1 s");
}

/// Starts stopping: a cancel asks the job to stop (SIGINT, a KeyboardInterrupt in Python),
/// the others do not wait for it.
fn begin_stop(cause: Stop, cgroup: &dyn JobCgroup, shared: &Shared) -> Stopping {
    let grace = shared.exec.settings.stop_grace;
    let _ = cgroup.thaw();
    let first = match cause {
        Stop::Cancelled(_) => Some(Signal::INT),
        Stop::TimeLimit => Some(Signal::TERM),
        Stop::Preempted | Stop::Shutdown => None,
    };
    let next = match first {
        Some(signal) => {
            signal_job(cgroup, signal);
            let after = if signal == Signal::INT {
                Signal::TERM
            } else {
                Signal::KILL
            };
            Some((Instant::now() + grace, after))
        }
        None => {
            let _ = cgroup.kill_all();
            None
        }
    };
    Stopping { cause, next }
}

/// Signals the job's own processes, not bubblewrap: the outer bwrap dies of SIGINT or SIGTERM
/// and takes the sandbox with it (--die-with-parent), which would kill the job before it
/// could act on the signal (write its last lines, save a checkpoint). SIGKILL, later, is
/// for everything.
fn signal_job(cgroup: &dyn JobCgroup, signal: Signal) {
    for pid in cgroup.pids().unwrap_or_default() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() == "bwrap" {
            continue;
        }
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

fn escalate(cgroup: &dyn JobCgroup, signal: Signal, shared: &Shared, stopping: Option<&mut Stopping>) {
    let next = if signal == Signal::KILL {
        let _ = cgroup.kill_all();
        None
    } else {
        signal_job(cgroup, signal);
        Some((Instant::now() + shared.exec.settings.stop_grace, Signal::KILL))
    };
    if let Some(stopping) = stopping {
        stopping.next = next;
    }
}

fn gather_artifacts(
    shared: &Shared,
    handle: &str,
    spec: &JobSpec,
    dir: &std::path::Path,
) -> Vec<partagpu_core::job::state::ArtifactInfo> {
    if spec.artifacts.is_empty() {
        return Vec::new();
    }
    let scratch = shared.exec.scratch_dir(handle);
    let mut notes = String::new();
    let kept = match collect(
        &scratch,
        &spec.artifacts,
        &dir.join(files::ARTIFACTS),
        MAX_ARTIFACT_TOTAL,
        MAX_ARTIFACT_FILES,
    ) {
        Ok(collection) => {
            for (path, why) in &collection.refused {
                notes.push_str(&format!("[partagpu: artifact {path} refused: {why}]\n"));
            }
            for pattern in &spec.artifacts {
                if !collection
                    .artifacts
                    .iter()
                    .any(|a| partagpu_core::job::artifacts::matches(pattern, &a.info.name))
                {
                    notes.push_str(&format!("[partagpu: no artifact matched {pattern}]\n"));
                }
            }
            collection.artifacts.into_iter().map(|a| a.info).collect()
        }
        Err(error) => {
            notes.push_str(&format!("[partagpu: artifacts not collected: {error}]\n"));
            Vec::new()
        }
    };
    if !notes.is_empty() {
        let _ = append_log(dir, notes.as_bytes());
    }
    kept
}

/// The terminal state and its reason.
fn outcome(
    stop: Option<Stop>,
    oom: bool,
    pids_hit: bool,
    code: Option<i32>,
    ram_limit: u64,
    time_limit_s: u64,
) -> (JobState, Option<String>) {
    match stop {
        Some(Stop::Cancelled(by)) => return (JobState::Cancelled, Some(format!("cancelled by {by}"))),
        Some(Stop::Preempted) => {
            return (
                JobState::Preempted,
                Some("the owner paused the machine for longer than the grace period".into()),
            )
        }
        Some(Stop::Shutdown) => {
            return (
                JobState::Lost,
                Some("the service on the executing machine stopped".into()),
            )
        }
        Some(Stop::TimeLimit) => {
            return (
                JobState::Failed,
                Some(format!("it ran past its time limit of {time_limit_s} s")),
            )
        }
        None => {}
    }
    if oom {
        return (
            JobState::Failed,
            Some(format!(
                "out of memory: the job needed more than its RAM limit of {}",
                format_size(ram_limit)
            )),
        );
    }
    match code {
        Some(0) => (JobState::Succeeded, None),
        Some(code) => {
            let mut why = format!("the command exited with status {code}");
            if code == i32::from(super::launch::LAUNCH_FAILED) {
                why.push_str(" (not found, or the sandbox could not start: see the log)");
            }
            if pids_hit {
                why.push_str("; it reached its limit of processes");
            }
            (JobState::Failed, Some(why))
        }
        None => (JobState::Failed, Some("the sandbox was killed".into())),
    }
}

#[cfg(test)]
mod tests;
