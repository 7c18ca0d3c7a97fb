// SPDX-License-Identifier: GPL-3.0-or-later
//! The Security page without widgets: the severity filter and what each kind of event means.

use partagpu_core::journal::{SecurityEvent, Severity};

use crate::i18n::i18n;

/// Which events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeverityFilter {
    /// Every event.
    #[default]
    All,
    /// Warnings and critical events.
    Warnings,
    /// Critical events only.
    Critical,
}

impl SeverityFilter {
    /// Whether an event of `severity` passes.
    #[must_use]
    pub fn admits(self, severity: Severity) -> bool {
        match self {
            SeverityFilter::All => true,
            SeverityFilter::Warnings => severity >= Severity::Warning,
            SeverityFilter::Critical => severity == Severity::Critical,
        }
    }
}

/// The events to show, newest first.
#[must_use]
pub fn visible(events: &[SecurityEvent], filter: SeverityFilter) -> Vec<&SecurityEvent> {
    events
        .iter()
        .rev()
        .filter(|e| filter.admits(e.severity))
        .collect()
}

/// The word for a severity.
#[must_use]
pub fn severity_label(severity: Severity) -> String {
    match severity {
        Severity::Info => i18n("information"),
        Severity::Warning => i18n("warning"),
        Severity::Critical => i18n("critical"),
    }
}

/// What an event kind means for the owner, and what to do (docs/security.md).
#[must_use]
pub fn explanation(kind: &str) -> String {
    match kind {
        "wrong-code" => i18n("A machine tried a wrong room code, or an old one from before a code change. Nothing was shared with it. If it is one of yours, join again with the current code."),
        "ban" => i18n("An address failed the room code 5 times in 10 minutes: it is refused for a while. Someone may be guessing the code; changing it is safe."),
        "guess-flood" => i18n("Many wrong codes reached this machine within an hour: unknown addresses are slowed down to one attempt every 10 seconds."),
        "refused" => i18n("A banned or slowed-down address tried again and was closed before any work."),
        "connection-flood" => i18n("Too many connections were opened at once; the extra ones were closed."),
        "deadline" => i18n("A machine connected but did not speak the protocol in time; the connection was closed."),
        "malformed" => i18n("Bytes that are not PartaGPU's protocol, or a message that failed its authentication (tampered, replayed or reordered). It was refused."),
        "oversize" => i18n("A message with an impossible length was refused."),
        "bad-identity" => i18n("A machine's proof of identity did not verify; it was refused."),
        "key-changed" => i18n("A machine at a known address showed another identity key. It was refused: it may be a reinstalled machine, or someone impersonating it. Check with its owner."),
        "new-machine" => i18n("A machine was seen for the first time; its key is now remembered. Its fingerprint lets you check it is the one you expect."),
        "config-room" => i18n("This machine joined, created or moved into the room named in the administrator's configuration file, or could not use that room: a room with its name refused the code, or discovery is off."),
        "config-code-refused" => i18n("The configuration file holds a room code but other users may read it, so the code is not used. An administrator must make the file root's, readable by root only."),
        "copied-state" => i18n("This machine's PartaGPU files were made on another machine, as on a copied disk image. It took its own identity key and its own name, and kept the room and what it lends."),
        "same-identity" => i18n("Two machines have one identity key: a disk was copied with its machine id. One of them was refused. An administrator must give one of them a new machine id and restart its service."),
        _ => i18n("An event this version of the app does not know yet; its message says what happened."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, severity: Severity) -> SecurityEvent {
        SecurityEvent {
            seq,
            time_unix_ms: 0,
            severity,
            kind: "wrong-code".into(),
            source: String::new(),
            node_id: String::new(),
            message: String::new(),
            count: 1,
        }
    }

    #[test]
    fn the_filter_keeps_the_worse_events_newest_first() {
        let events = [
            event(1, Severity::Info),
            event(2, Severity::Warning),
            event(3, Severity::Critical),
        ];
        let seqs = |filter| visible(&events, filter).iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(SeverityFilter::All), [3, 2, 1]);
        assert_eq!(seqs(SeverityFilter::Warnings), [3, 2]);
        assert_eq!(seqs(SeverityFilter::Critical), [3]);
    }

    #[test]
    fn every_documented_kind_is_explained() {
        // The kinds of the table in docs/security.md, so that a new kind cannot be missed.
        let doc = include_str!("../../../../../docs/security.md");
        let table = doc.split("## The security journal's kinds").nth(1).unwrap();
        let kinds: Vec<&str> = table
            .lines()
            .skip_while(|line| !line.starts_with('|'))
            .take_while(|line| line.starts_with('|'))
            .filter_map(|line| line.split('`').nth(1))
            .collect();
        assert!(kinds.len() >= 15 && kinds.contains(&"same-identity"), "{kinds:?}");
        let unknown = explanation("something-new");
        for kind in kinds {
            assert_ne!(explanation(kind), unknown, "{kind}");
        }
    }
}
