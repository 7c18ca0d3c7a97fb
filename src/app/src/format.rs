// SPDX-License-Identifier: GPL-3.0-or-later
//! Translated renderings of durations, states and machines, shared by the pages.

use std::time::{SystemTime, UNIX_EPOCH};

use partagpu_core::job::record::{JobRecord, JobRole};
use partagpu_core::job::state::JobState;
use partagpu_core::size::format_size;
use partagpu_core::{Limits, SharingState};

use crate::i18n::{i18n, i18n_f};

/// Milliseconds since the epoch now.
#[must_use]
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// "12 s", "5 min", "3 h", "2 d".
#[must_use]
pub fn span(ms: u64) -> String {
    let seconds = ms / 1000;
    let n = |value: u64| value.to_string();
    match seconds {
        0..=59 => i18n_f("{} s", &[&n(seconds)]),
        60..=7199 => i18n_f("{} min", &[&n(seconds / 60)]),
        7200..=172_799 => i18n_f("{} h", &[&n(seconds / 3600)]),
        _ => i18n_f("{} d", &[&n(seconds / 86_400)]),
    }
}

/// The word for a machine's sharing state.
#[must_use]
pub fn sharing_state(state: SharingState) -> String {
    match state {
        SharingState::Sharing => i18n("sharing"),
        SharingState::Paused => i18n("paused"),
        SharingState::Off => i18n("off"),
    }
}

/// The word for a job's state.
#[must_use]
pub fn job_state(state: JobState) -> String {
    match state {
        JobState::Accepted => i18n("accepted"),
        JobState::Running => i18n("running"),
        JobState::Paused => i18n("paused"),
        JobState::Succeeded => i18n("succeeded"),
        JobState::Failed => i18n("failed"),
        JobState::Cancelled => i18n("cancelled"),
        JobState::Preempted => i18n("preempted"),
        JobState::Lost => i18n("lost"),
    }
}

/// Puts the UI language's decimal separator into a number written the Rust way ("0.69").
/// It follows the translation, not `LC_NUMERIC`: a desktop may set `LANGUAGE=fr` with an
/// English `LANG`, and "récemment 0.69 s" would then mix two languages in one sentence.
fn localized(number: &str) -> String {
    // Translators: the decimal separator, as in "0.69 s" or "8.0 GiB" (a comma in French).
    let separator = i18n(".");
    number.replacen('.', &separator, 1)
}

/// `value` with `places` decimals: "0.69", "0,69" in French.
#[must_use]
pub fn decimal(value: f64, places: usize) -> String {
    localized(&format!("{value:.places$}"))
}

/// A size in binary units: "8.0 GiB", "8,0 GiB" in French.
#[must_use]
pub fn size(bytes: u64) -> String {
    localized(&format_size(bytes))
}

/// "CPU 50 % · RAM 8.0 GiB · GPU 50 %".
#[must_use]
pub fn lends(limits: &Limits) -> String {
    i18n_f(
        "CPU {} % · RAM {} · GPU {} %",
        &[
            &limits.cpu_percent.to_string(),
            &size(limits.ram_bytes),
            &limits.gpu_percent.to_string(),
        ],
    )
}

/// A machine's display name, else the start of its node id.
#[must_use]
pub fn machine(name: &str, node_id: &str) -> String {
    if name.is_empty() {
        format!("{}…", node_id.get(..8).unwrap_or(node_id))
    } else {
        name.to_owned()
    }
}

/// Where a job runs, seen from here: "here", "lab-2", "lab-1, lab-2, lab-3".
#[must_use]
pub fn job_machines(record: &JobRecord) -> String {
    match record.role {
        JobRole::Both => i18n("this machine"),
        JobRole::Submitted | JobRole::Here => machine(&record.node_name, &record.node),
        JobRole::Group => record
            .parts
            .iter()
            .map(|part| machine(&part.node_name, &part.node))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The first 8 hex digits of a job id, as every message names a job.
#[must_use]
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// The command line, control characters made harmless.
#[must_use]
pub fn command_line(argv: &[String]) -> String {
    argv.join(" ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_pick_a_readable_unit() {
        assert_eq!(span(3_400), "3 s");
        assert_eq!(span(300_000), "5 min");
        assert_eq!(span(3 * 3_600_000), "3 h");
        assert_eq!(span(3 * 86_400_000), "3 d");
    }

    #[test]
    fn numbers_take_the_separator_of_the_language() {
        // No translation is bound in unit tests: English. French is in tests/test_app_ui.py.
        assert_eq!(decimal(0.694, 2), "0.69");
        assert_eq!(size(2 << 30), "2.0 GiB");
        assert_eq!(size(512), "512 B");
    }

    #[test]
    fn commands_cannot_drive_the_display() {
        assert_eq!(command_line(&["echo".into(), "a\nb\u{1b}".into()]), "echo a b ");
        assert_eq!(machine("", "0123456789abcdef"), "01234567…");
        assert_eq!(short_id("0123456789"), "01234567");
    }
}
