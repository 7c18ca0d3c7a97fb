// SPDX-License-Identifier: GPL-3.0-or-later
//! The security journal's event: what happened, how bad, from where.
//!
//! Events never carry a room code or a key; the service builds their messages from fixed
//! sentences and addresses only.

use serde::{Deserialize, Serialize};

/// How much an event matters to the machine's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing (a new machine pinned).
    Info,
    /// Someone did something wrong (a wrong room code).
    Warning,
    /// An attack or a broken promise (a pinned key changed, a ban).
    Critical,
}

impl Severity {
    /// The D-Bus and JSON form.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }

    /// Parses [`Self::as_str`]'s form.
    #[must_use]
    pub fn from_wire(wire: &str) -> Option<Self> {
        [Self::Info, Self::Warning, Self::Critical]
            .into_iter()
            .find(|severity| severity.as_str() == wire)
    }
}

/// One entry of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecurityEvent {
    /// Position in the journal, strictly increasing, never reused.
    pub seq: u64,
    /// When it happened (the last occurrence when `count > 1`), milliseconds since the epoch.
    pub time_unix_ms: u64,
    /// How much it matters.
    pub severity: Severity,
    /// Machine-readable kind, e.g. `wrong-code` (the list is in docs/security-journal.md).
    pub kind: String,
    /// Remote address, or empty for local events.
    pub source: String,
    /// Node id of the remote machine when it is known, else empty.
    pub node_id: String,
    /// One sentence for humans.
    pub message: String,
    /// How many occurrences this entry stands for (floods are summarised, not repeated).
    pub count: u32,
}
