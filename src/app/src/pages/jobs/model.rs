// SPDX-License-Identifier: GPL-3.0-or-later
//! The My jobs page without widgets: which jobs are mine, which one is open, and its log
//! as it grows.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use partagpu_client::LogChunk;
use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::state::JobState;

use crate::format::{self, short_id};
use crate::i18n::{i18n, i18n_f, ni18n_f};

/// Most log text kept on screen; older text is dropped from the top.
pub const MAX_LOG_CHARS: usize = 1 << 20;

/// What to do after a log chunk arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextRead {
    /// More is there: read again at once.
    Now,
    /// Nothing new yet: read again after a pause.
    Later,
    /// The job ended and everything was read.
    Done,
    /// The chunk was for a job no longer open.
    Stale,
}

/// The page's state.
#[derive(Debug, Default)]
pub struct JobsModel {
    mine: Vec<JobRecord>,
    selected: Option<String>,
    log: String,
    next_offset: u64,
    generation: u64,
}

impl JobsModel {
    /// Every job known here; the page keeps those submitted from here. A training's parts
    /// are left out: the training's own row has their machines, joined output, artifacts and
    /// cancel, and a student who started one training should see one job.
    pub fn set_jobs(&mut self, jobs: Vec<JobRecord>) {
        let parts: HashSet<String> = jobs
            .iter()
            .filter(|job| job.role == JobRole::Group)
            .flat_map(|group| group.parts.iter().map(|part| part.job.clone()))
            .collect();
        self.mine = jobs
            .into_iter()
            .filter(|job| matches!(job.role, JobRole::Submitted | JobRole::Both | JobRole::Group))
            .filter(|job| !parts.contains(&job.job))
            .collect();
    }

    /// The jobs submitted from here, newest first.
    #[must_use]
    pub fn mine(&self) -> &[JobRecord] {
        &self.mine
    }

    /// The open job's record.
    #[must_use]
    pub fn selected(&self) -> Option<&JobRecord> {
        let handle = self.selected.as_ref()?;
        self.mine.iter().find(|job| &job.job == handle)
    }

    /// Opens `job`: its log starts from the beginning. Returns the generation its reads carry.
    pub fn select(&mut self, job: Option<String>) -> u64 {
        self.selected = job;
        self.log.clear();
        self.next_offset = 0;
        self.generation += 1;
        self.generation
    }

    /// The open job's handle, the offset to read from and the generation, when a read is due.
    #[must_use]
    pub fn read_position(&self) -> Option<(String, u64, u64)> {
        Some((self.selected.clone()?, self.next_offset, self.generation))
    }

    /// A chunk of the log of the job opened at `generation`.
    pub fn log_arrived(&mut self, generation: u64, chunk: &LogChunk) -> NextRead {
        if generation != self.generation {
            return NextRead::Stale;
        }
        self.log.push_str(&String::from_utf8_lossy(&chunk.data));
        if self.log.len() > MAX_LOG_CHARS {
            let mut cut = self.log.len() - MAX_LOG_CHARS;
            while !self.log.is_char_boundary(cut) {
                cut += 1;
            }
            self.log.drain(..cut);
        }
        self.next_offset = chunk.next;
        match (chunk.complete, chunk.data.is_empty()) {
            (true, _) => NextRead::Done,
            (false, false) => NextRead::Now,
            (false, true) => NextRead::Later,
        }
    }

    /// The open job's log so far.
    #[must_use]
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The generation of the open job (the view redraws the log when it changes).
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// Whether a job can still be cancelled.
#[must_use]
pub fn can_cancel(record: &JobRecord) -> bool {
    !record.state.is_terminal()
}

/// Where a job's artifacts are saved: `<downloads>/PartaGPU/<first 8 hex of its id>`.
#[must_use]
pub fn artifacts_dir(downloads: &Path, record: &JobRecord) -> PathBuf {
    downloads.join("PartaGPU").join(short_id(&record.id))
}

/// Below this much slower than the median, no machine is called slow (`SLOW_MARGIN` of
/// python/partagpu/stragglers.py).
const SLOW_MARGIN: &str = "10 %";

/// A sentence the training said (not translated: it comes from the job), when not empty.
fn said(text: Option<&String>) -> Option<String> {
    text.map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// What the planner predicted before launch: "predicted 2.7× on 3 machines with …".
#[must_use]
pub fn prediction_text(record: &JobRecord) -> Option<String> {
    said(record.training.as_ref()?.prediction.as_ref())
}

/// What was measured at the end: "measured 2.4× on 3 machines (efficiency 81 % …".
#[must_use]
pub fn measured_text(record: &JobRecord) -> Option<String> {
    said(record.training.as_ref()?.measured.as_ref())
}

/// "20 optimizer steps, 0.84 s each lately (3 processes, strategy accumulate8)", once a
/// window of steps was reported.
#[must_use]
pub fn steps_text(record: &JobRecord) -> Option<String> {
    let training = record.training.as_ref()?;
    let (step_s, world_size) = (training.step_s?, training.world_size?);
    let count = u32::try_from(training.steps).unwrap_or(u32::MAX);
    let steps = ni18n_f(
        "{} optimizer step",
        "{} optimizer steps",
        count,
        &[&training.steps.to_string()],
    );
    let seconds = format::decimal(step_s, 2);
    let processes = ni18n_f(
        "{} process",
        "{} processes",
        world_size,
        &[&world_size.to_string()],
    );
    Some(match training.strategy.as_deref().filter(|s| !s.is_empty()) {
        Some(strategy) => i18n_f(
            "{}, {} s each lately ({}, strategy {})",
            &[&steps, &seconds, &processes, strategy],
        ),
        None => i18n_f("{}, {} s each lately ({})", &[&steps, &seconds, &processes]),
    })
}

/// "lab-3 lately, 31 % slower than the median (forward pass) — slowed 17 of 20 steps", or
/// that none was slow lately or slowed most steps, once a window of steps was reported.
#[must_use]
pub fn slowest_text(record: &JobRecord) -> Option<String> {
    let training = record.training.as_ref()?;
    if training.windows == 0 {
        return None;
    }
    // The `%` goes in the arguments: xgettext takes "% s" or "% o" for a C format.
    let now = match &training.slowest {
        Some(slow) => i18n_f(
            "{} lately, {} slower than the median ({})",
            &[
                &slow.machine,
                &format!("{} %", slow.excess_percent),
                &compared_text(&slow.compared),
            ],
        ),
        None => i18n_f(
            "None lately: every machine is within {} of the median",
            &[SLOW_MARGIN],
        ),
    };
    if training.compared_steps == 0 {
        return Some(now);
    }
    let compared = u32::try_from(training.compared_steps).unwrap_or(u32::MAX);
    let total = training.compared_steps.to_string();
    let Some((usual, count)) = training.usual_straggler() else {
        return Some(if training.slowed_ranking().is_empty() {
            ni18n_f(
                "{} — no machine slowed the {} step compared",
                "{} — no machine slowed any of the {} steps compared",
                compared,
                &[&now, &total],
            )
        } else {
            // Every step is a little late somewhere: naming the one most often late would
            // make a straggler of noise (`partagpuctl job show` gives every count).
            ni18n_f(
                "{} — no machine slowed most of the {} step compared",
                "{} — no machine slowed most of the {} steps compared",
                compared,
                &[&now, &total],
            )
        });
    };
    let count = count.to_string();
    Some(
        if training
            .slowest
            .as_ref()
            .is_some_and(|slow| slow.machine == usual)
        {
            ni18n_f(
                "{} — slowed {} of {} step",
                "{} — slowed {} of {} steps",
                compared,
                &[&now, &count, &total],
            )
        } else {
            ni18n_f(
                "{} — {} slowed {} of {} step",
                "{} — {} slowed {} of {} steps",
                compared,
                &[&now, usual, &count, &total],
            )
        },
    )
}

/// What the helper compared, in the user's language: it sends one of two English phrases
/// (`partagpu/stragglers.py`); anything else is shown as it came.
fn compared_text(compared: &str) -> String {
    match compared {
        "forward pass" => i18n("forward pass"),
        "compute of a micro-step" => i18n("compute of a micro-step"),
        other => other.to_owned(),
    }
}

/// A group job's machines with the parts that were lost or preempted marked:
/// "lab-1, lab-2, lab-3 (lost)"; `None` when no part was.
#[must_use]
pub fn machines_text(record: &JobRecord) -> Option<String> {
    let gone = |state| matches!(state, JobState::Lost | JobState::Preempted);
    if !record.parts.iter().any(|part| gone(part.state)) {
        return None;
    }
    let parts: Vec<String> = record
        .parts
        .iter()
        .map(|part| {
            let name = format::machine(&part.node_name, &part.node);
            if gone(part.state) {
                i18n_f("{} ({})", &[&name, &format::job_state(part.state)])
            } else {
                name
            }
        })
        .collect();
    Some(parts.join(", "))
}

#[cfg(test)]
#[path = "model_tests.rs"]
pub(crate) mod tests;
