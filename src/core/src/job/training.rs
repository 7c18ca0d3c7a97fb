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
/// Most machines counted in [`TrainingReport::slowest_counts`].
pub const MAX_MACHINES: usize = 256;

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
    /// In how many windows each machine was the slowest.
    #[serde(default)]
    pub slowest_counts: BTreeMap<String, u32>,
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
        }
    }
    Ok(Some(update))
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
            } => {
                self.steps = step;
                self.step_s = Some(step_s);
                self.world_size = Some(world_size);
                self.strategy = Some(strategy);
                self.windows = self.windows.saturating_add(1);
                if let Some(s) = &slowest {
                    let known = self.slowest_counts.contains_key(&s.machine);
                    if known || self.slowest_counts.len() < MAX_MACHINES {
                        *self.slowest_counts.entry(s.machine.clone()).or_insert(0) += 1;
                    }
                }
                self.slowest = slowest;
            }
        }
    }

    /// The machine that was slowest most often, with its count.
    #[must_use]
    pub fn usual_straggler(&self) -> Option<(&str, u32)> {
        self.slowest_counts
            .iter()
            .max_by_key(|(name, count)| (**count, std::cmp::Reverse(name.as_str())))
            .map(|(name, count)| (name.as_str(), *count))
    }
}

#[cfg(test)]
mod tests;
