// SPDX-License-Identifier: GPL-3.0-or-later
//! The rows of the job detail that a distributed training fills from its reports: the
//! prediction, the steps, the slowest machine and what was measured. A row the job has
//! nothing to say for is hidden.

use partagpu_core::job::record::JobRecord;
use relm4::adw;
use relm4::adw::prelude::*;

use super::model::{measured_text, prediction_text, slowest_text, steps_text};
use crate::i18n::i18n;
use crate::widgets;

/// The rows, in the order they are shown.
pub struct TrainingRows {
    prediction: adw::ActionRow,
    steps: adw::ActionRow,
    slowest: adw::ActionRow,
    measured: adw::ActionRow,
}

impl TrainingRows {
    /// The rows, hidden, added to `group`.
    pub fn new(group: &adw::PreferencesGroup) -> Self {
        let rows = Self {
            prediction: widgets::row(&i18n("Prediction"), ""),
            steps: widgets::row(&i18n("Steps"), ""),
            slowest: widgets::row(&i18n("Slowest machine"), ""),
            measured: widgets::row(&i18n("Measured"), ""),
        };
        for row in rows.all() {
            row.set_visible(false);
            group.add(row);
        }
        rows
    }

    fn all(&self) -> [&adw::ActionRow; 4] {
        [&self.prediction, &self.steps, &self.slowest, &self.measured]
    }

    /// Shows what `job` says, and hides the rest.
    pub fn show(&self, job: &JobRecord) {
        let texts = [
            prediction_text(job),
            steps_text(job),
            slowest_text(job),
            measured_text(job),
        ];
        for (row, text) in self.all().into_iter().zip(texts) {
            row.set_visible(text.is_some());
            row.set_subtitle(text.as_deref().unwrap_or(""));
        }
    }
}
