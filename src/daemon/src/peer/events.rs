// SPDX-License-Identifier: GPL-3.0-or-later
//! Security events of the peer port: written to the journal, logged without secrets, and
//! signalled on D-Bus. A flood is summarised: the first event of a kind from one source in a
//! minute is written at once, the rest are counted and written as one entry with `count`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use partagpu_core::ids::OBJECT_PATH;
use partagpu_core::journal::Severity;

use super::now_ms;
use crate::journal::{NewEvent, SecurityJournal};
use crate::service::SecurityIface;

/// How long occurrences of one kind from one source are folded into one entry.
pub const SUMMARY_WINDOW: Duration = Duration::from_secs(60);

/// Event kinds (the list is in docs/security.md).
pub mod kinds {
    /// A PAKE failed key confirmation: a wrong code or an old epoch (§7.4).
    pub const WRONG_CODE: &str = "wrong-code";
    /// A source address was banned after repeated wrong codes (§9).
    pub const BAN: &str = "ban";
    /// A banned or slowed source tried again and was refused before any work.
    pub const REFUSED: &str = "refused";
    /// Many wrong codes from everywhere: the machine is under a guessing attack (§9).
    pub const GUESS_FLOOD: &str = "guess-flood";
    /// A machine's pinned key changed (§5.3).
    pub const KEY_CHANGED: &str = "key-changed";
    /// A NODE_AUTH record that does not verify.
    pub const BAD_IDENTITY: &str = "bad-identity";
    /// A machine seen for the first time, pinned.
    pub const NEW_MACHINE: &str = "new-machine";
    /// Bytes that are not PGR/1, or a record out of state.
    pub const MALFORMED: &str = "malformed";
    /// A record whose length is out of range.
    pub const OVERSIZE: &str = "oversize";
    /// A peer that did not finish a step in time (slow-loris).
    pub const DEADLINE: &str = "deadline";
    /// Connection caps reached (§9).
    pub const CONNECTION_FLOOD: &str = "connection-flood";
    /// The state directory was made on another machine (a copied disk image): this machine
    /// took a new identity.
    pub const COPIED_STATE: &str = "copied-state";
    /// Another machine shows this machine's identity key (its disk was copied with its
    /// machine id): refused.
    pub const SAME_IDENTITY: &str = "same-identity";
}

type Key = (&'static str, String);

struct Pending {
    window_start: Instant,
    suppressed: u32,
    last: NewEvent,
}

/// Folds repeated events (pure; the clock is passed in).
#[derive(Default)]
pub struct FloodGate {
    open: HashMap<Key, Pending>,
}

impl FloodGate {
    /// Whether `event` should be written now; otherwise it is counted for the summary.
    pub fn admit(&mut self, kind: &'static str, event: &NewEvent, now: Instant) -> bool {
        let key = (kind, event.source.clone());
        match self.open.get_mut(&key) {
            Some(pending) if now.duration_since(pending.window_start) < SUMMARY_WINDOW => {
                pending.suppressed = pending.suppressed.saturating_add(1);
                pending.last = event.clone();
                false
            }
            _ => {
                self.open.insert(
                    key,
                    Pending {
                        window_start: now,
                        suppressed: 0,
                        last: event.clone(),
                    },
                );
                true
            }
        }
    }

    /// Summaries of windows that ended: one event each, carrying the count of the folded ones.
    pub fn due(&mut self, now: Instant) -> Vec<NewEvent> {
        let mut summaries = Vec::new();
        self.open.retain(|_, pending| {
            if now.duration_since(pending.window_start) < SUMMARY_WINDOW {
                return true;
            }
            if pending.suppressed > 0 {
                let mut summary = pending.last.clone();
                summary.count = pending.suppressed;
                summary.message = format!(
                    "{} (repeated {} more times within a minute)",
                    summary.message, pending.suppressed
                );
                summaries.push(summary);
            }
            false
        });
        summaries
    }
}

/// Writes the peer port's security events.
pub struct Reporter {
    journal: Arc<Mutex<SecurityJournal>>,
    gate: Mutex<FloodGate>,
    signals: Mutex<Option<zbus::Connection>>,
}

impl Reporter {
    /// A reporter writing into `journal`.
    #[must_use]
    pub fn new(journal: Arc<Mutex<SecurityJournal>>) -> Self {
        Self {
            journal,
            gate: Mutex::default(),
            signals: Mutex::new(None),
        }
    }

    /// From now on, also emit `Security1.EventRecorded` on this connection.
    pub fn signal_on(&self, connection: zbus::Connection) {
        *self.signals.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection);
    }

    /// Reports one event. `message` is a fixed sentence plus addresses, never a secret.
    pub fn report(
        &self,
        severity: Severity,
        kind: &'static str,
        source: &str,
        node_id: &str,
        message: String,
    ) {
        let event = one_event(severity, kind, source, node_id, message);
        let admitted =
            self.gate
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .admit(kind, &event, Instant::now());
        if admitted {
            self.write(event);
        } else {
            tracing::debug!(kind, source, "security event folded into the next summary");
        }
    }

    /// Reports one event this machine caused itself and that is rare by construction (the
    /// room of the configuration file: a few per start), so never folded: folding would hide a
    /// move into another room behind an earlier join through the same machine.
    pub fn report_own(&self, severity: Severity, kind: &'static str, source: &str, message: String) {
        self.write(one_event(severity, kind, source, "", message));
    }

    /// Writes the summaries whose window ended; called on a timer.
    pub fn flush(&self) {
        let due = self
            .gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .due(Instant::now());
        for event in due {
            self.write(event);
        }
    }

    fn write(&self, event: NewEvent) {
        match event.severity {
            Severity::Critical => {
                tracing::error!(kind = %event.kind, source = %event.source, node = %event.node_id, count = event.count, "{}", event.message);
            }
            Severity::Warning => {
                tracing::warn!(kind = %event.kind, source = %event.source, node = %event.node_id, count = event.count, "{}", event.message);
            }
            Severity::Info => {
                tracing::info!(kind = %event.kind, source = %event.source, node = %event.node_id, "{}", event.message);
            }
        }
        let stored = self
            .journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(event, now_ms());
        let stored = match stored {
            Ok(stored) => stored,
            Err(error) => {
                tracing::error!(%error, "cannot write the security journal");
                return;
            }
        };
        let connection = self
            .signals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(connection) = connection {
            tokio::spawn(async move {
                let Ok(object) = connection
                    .object_server()
                    .interface::<_, SecurityIface>(OBJECT_PATH)
                    .await
                else {
                    return;
                };
                let emitter = object.signal_emitter();
                let _ = SecurityIface::event_recorded(
                    emitter,
                    stored.seq,
                    stored.severity.as_str(),
                    &stored.kind,
                )
                .await;
            });
        }
    }
}

fn one_event(severity: Severity, kind: &str, source: &str, node_id: &str, message: String) -> NewEvent {
    NewEvent {
        severity,
        kind: kind.to_owned(),
        source: source.to_owned(),
        node_id: node_id.to_owned(),
        message,
        count: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(source: &str) -> NewEvent {
        NewEvent {
            severity: Severity::Warning,
            kind: kinds::WRONG_CODE.into(),
            source: source.into(),
            node_id: String::new(),
            message: "A machine tried a wrong room code.".into(),
            count: 1,
        }
    }

    #[test]
    fn a_flood_from_one_source_becomes_one_event_and_one_summary() {
        let mut gate = FloodGate::default();
        let start = Instant::now();
        assert!(gate.admit(kinds::WRONG_CODE, &event("10.98.0.2"), start));
        for i in 1..=40 {
            let now = start + Duration::from_millis(i * 100);
            assert!(!gate.admit(kinds::WRONG_CODE, &event("10.98.0.2"), now));
        }
        assert!(
            gate.admit(kinds::WRONG_CODE, &event("10.98.0.3"), start),
            "other source"
        );
        assert!(
            gate.admit(kinds::MALFORMED, &event("10.98.0.2"), start),
            "other kind"
        );
        assert!(gate.due(start + Duration::from_secs(30)).is_empty());
        let summaries = gate.due(start + SUMMARY_WINDOW);
        assert_eq!(summaries.len(), 1);
        assert_eq!(summaries[0].count, 40);
        assert!(summaries[0].message.contains("40 more times"));
        let later = start + SUMMARY_WINDOW * 2;
        assert!(
            gate.admit(kinds::WRONG_CODE, &event("10.98.0.2"), later),
            "a new window"
        );
    }

    #[test]
    fn the_machines_own_room_events_are_never_folded_but_a_peers_flood_is() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Arc::new(Mutex::new(SecurityJournal::open(dir.path(), 100).unwrap()));
        let reporter = Reporter::new(Arc::clone(&journal));
        for message in ["Joined the room A.", "Moved from the room A to the room B."] {
            reporter.report_own(Severity::Info, "config-room", "10.98.0.3", message.into());
        }
        for _ in 0..2 {
            let flood = event("10.98.0.3");
            reporter.report(
                Severity::Warning,
                kinds::WRONG_CODE,
                &flood.source,
                "",
                flood.message,
            );
        }
        let written: Vec<_> = journal.lock().unwrap().list(0, 10);
        let kinds: Vec<&str> = written.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["config-room", "config-room", kinds::WRONG_CODE]);
        assert!(written[1].message.starts_with("Moved"));
    }
}
