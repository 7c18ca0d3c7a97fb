// SPDX-License-Identifier: GPL-3.0-or-later
//! What a distributed training tells about itself while it runs: the in-job helper
//! (`partagpu.ddp`) prints one [`REPORT_PREFIX`] line now and then on its rank 0, and the
//! coordinator folds them into the group's [`TrainingReport`], which the CLI, the Python
//! summary and the app show: the prediction, the steps so far, and which machine slows them.
//!
//! The lines come from a job, so they are bounded and checked like any input from a member;
//! a line that does not parse is kept in the log as it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The start of a report line in a part's output (followed by one JSON [`TrainingUpdate`]).
pub const REPORT_PREFIX: &str = "partagpu-report ";
/// Longest report line read, bytes.
pub const MAX_REPORT_LINE: usize = 4 << 10;
/// Longest sentence or name kept from a report, characters.
pub const MAX_REPORT_TEXT: usize = 400;
/// Most machines counted in [`TrainingReport::slowed_steps`].
pub const MAX_MACHINES: usize = 256;
/// Most optimizer steps one window may compare.
pub const MAX_WINDOW_STEPS: u32 = 100_000;

/// The machine that slowed the steps of one report window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowest {
    /// Its display name.
    pub machine: String,
    /// How much slower than the median machine, percent.
    pub excess_percent: u32,
    /// What was compared ("forward pass", "compute of a micro-step").
    pub compared: String,
}

/// One report line's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrainingUpdate {
    /// The planner's prediction, one sentence, said once before the first step.
    Plan {
        /// "predicted 2.7× on 3 machines with …".
        text: String,
    },
    /// Every few optimizer steps: where the training is and who held it back.
    Window {
        /// Optimizer steps done so far (in this run of the workers).
        step: u64,
        /// Median seconds of a recent optimizer step on rank 0 (waits included).
        step_s: f64,
        /// Processes training now.
        world_size: u32,
        /// The strategy ("fp16+accumulate8").
        strategy: String,
        /// The slowest machine of the window, when one is more than 10 % slower.
        #[serde(default)]
        slowest: Option<Slowest>,
        /// The window's optimizer steps whose ranks' own work was compared one by one.
        #[serde(default)]
        compared_steps: u32,
        /// Of those, how many each machine slowed: its own work of the step more than 10 %
        /// over that step's median (a step where every machine kept up counts for none).
        #[serde(default)]
        slowed_steps: BTreeMap<String, u32>,
    },
    /// The measured result, one sentence, said at the end.
    Measured {
        /// "measured 2.4× on 3 machines (efficiency 81 % …".
        text: String,
    },
}

/// A training as its reports describe it so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainingReport {
    /// The prediction made before launch.
    #[serde(default)]
    pub prediction: Option<String>,
    /// The measured result, once said.
    #[serde(default)]
    pub measured: Option<String>,
    /// The strategy of the last window.
    #[serde(default)]
    pub strategy: Option<String>,
    /// Processes of the last window.
    #[serde(default)]
    pub world_size: Option<u32>,
    /// Optimizer steps of the last window.
    #[serde(default)]
    pub steps: u64,
    /// Median seconds of an optimizer step in the last window.
    #[serde(default)]
    pub step_s: Option<f64>,
    /// Windows reported.
    #[serde(default)]
    pub windows: u32,
    /// The last window's slowest machine (none: every machine kept up).
    #[serde(default)]
    pub slowest: Option<Slowest>,
    /// Optimizer steps compared one by one, over every window.
    #[serde(default)]
    pub compared_steps: u64,
    /// Of those, how many each machine slowed.
    #[serde(default)]
    pub slowed_steps: BTreeMap<String, u64>,
}

/// Why a report line was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// Longer than [`MAX_REPORT_LINE`].
    #[error("a training report longer than {MAX_REPORT_LINE} bytes")]
    TooLong,
    /// Not a report.
    #[error("not a training report: {0}")]
    Malformed(String),
    /// A value out of its bounds.
    #[error("a training report with {0} out of bounds")]
    OutOfBounds(&'static str),
}

fn short(text: &str, what: &'static str) -> Result<(), ReportError> {
    if text.chars().count() > MAX_REPORT_TEXT || text.chars().any(char::is_control) {
        return Err(ReportError::OutOfBounds(what));
    }
    Ok(())
}

/// The update in a line of output (without its end of line), `Ok(None)` when the line is
/// not a report at all.
///
/// # Errors
/// [`ReportError`] for a line that starts like a report but is not a valid one.
pub fn parse_line(line: &str) -> Result<Option<TrainingUpdate>, ReportError> {
    let Some(body) = line.strip_prefix(REPORT_PREFIX) else {
        return Ok(None);
    };
    if line.len() > MAX_REPORT_LINE {
        return Err(ReportError::TooLong);
    }
    let update: TrainingUpdate =
        serde_json::from_str(body.trim_end()).map_err(|e| ReportError::Malformed(e.to_string()))?;
    match &update {
        TrainingUpdate::Plan { text } | TrainingUpdate::Measured { text } => short(text, "text")?,
        TrainingUpdate::Window {
            step_s,
            world_size,
            strategy,
            slowest,
            compared_steps,
            slowed_steps,
            ..
        } => {
            if !step_s.is_finite() || *step_s < 0.0 || *step_s > 1e7 {
                return Err(ReportError::OutOfBounds("step_s"));
            }
            if *world_size == 0 || *world_size > 1 << 16 {
                return Err(ReportError::OutOfBounds("world_size"));
            }
            short(strategy, "strategy")?;
            if let Some(s) = slowest {
                short(&s.machine, "machine")?;
                short(&s.compared, "compared")?;
                if s.machine.is_empty() || s.excess_percent > 100_000 {
                    return Err(ReportError::OutOfBounds("slowest"));
                }
            }
            check_slowed_steps(*compared_steps, slowed_steps)?;
        }
    }
    Ok(Some(update))
}

/// Counts that name a machine each and add up to at most the steps compared.
fn check_slowed_steps(compared: u32, slowed: &BTreeMap<String, u32>) -> Result<(), ReportError> {
    if compared > MAX_WINDOW_STEPS {
        return Err(ReportError::OutOfBounds("compared_steps"));
    }
    for machine in slowed.keys() {
        short(machine, "slowed_steps")?;
    }
    let total: u64 = slowed.values().map(|&count| u64::from(count)).sum();
    if slowed.keys().any(String::is_empty) || total > u64::from(compared) {
        return Err(ReportError::OutOfBounds("slowed_steps"));
    }
    Ok(())
}

impl TrainingReport {
    /// Folds one (checked) update in.
    pub fn apply(&mut self, update: TrainingUpdate) {
        match update {
            TrainingUpdate::Plan { text } => self.prediction = Some(text),
            TrainingUpdate::Measured { text } => self.measured = Some(text),
            TrainingUpdate::Window {
                step,
                step_s,
                world_size,
                strategy,
                slowest,
                compared_steps,
                slowed_steps,
            } => {
                self.steps = step;
                self.step_s = Some(step_s);
                self.world_size = Some(world_size);
                self.strategy = Some(strategy);
                self.windows = self.windows.saturating_add(1);
                self.slowest = slowest;
                self.compared_steps = self.compared_steps.saturating_add(compared_steps.into());
                for (machine, count) in slowed_steps {
                    let known = self.slowed_steps.contains_key(&machine);
                    if known || self.slowed_steps.len() < MAX_MACHINES {
                        let kept = self.slowed_steps.entry(machine).or_insert(0);
                        *kept = kept.saturating_add(count.into());
                    }
                }
            }
        }
    }

    /// The machines that slowed steps, most steps first (then by name), with their counts.
    #[must_use]
    pub fn slowed_ranking(&self) -> Vec<(&str, u64)> {
        let mut ranking: Vec<(&str, u64)> = self
            .slowed_steps
            .iter()
            .filter(|(_, count)| **count > 0)
            .map(|(name, count)| (name.as_str(), *count))
            .collect();
        ranking.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        ranking
    }

    /// The machine that slowed most of the steps compared (more than half), with their
    /// count. On even machines every step is a little late somewhere: none is then named.
    #[must_use]
    pub fn usual_straggler(&self) -> Option<(&str, u64)> {
        self.slowed_ranking()
            .first()
            .copied()
            .filter(|(_, count)| count.saturating_mul(2) > self.compared_steps)
    }
}

#[cfg(test)]
mod tests;
