// SPDX-License-Identifier: GPL-3.0-or-later
//! `Security1`: read access to the security journal.
//!
//! Reading is open to every local user (the journal holds addresses and event kinds, never a
//! secret), so the owner can see what happened without a password.

use std::sync::{Arc, Mutex};

use zbus::object_server::SignalEmitter;

use crate::journal::SecurityJournal;

/// An event on the bus: (seq, time ms, severity, kind, source, node id, message, count).
pub type WireEvent = (u64, u64, String, String, String, String, String, u32);

/// The `Security1` object.
pub struct SecurityIface {
    journal: Arc<Mutex<SecurityJournal>>,
}

impl SecurityIface {
    /// An object over `journal`.
    #[must_use]
    pub fn new(journal: Arc<Mutex<SecurityJournal>>) -> Self {
        Self { journal }
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, SecurityJournal> {
        self.journal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[zbus::interface(name = "org.partagpu.PartaGPU.Daemon.Security1")]
impl SecurityIface {
    #[zbus(property)]
    fn last_event(&self) -> u64 {
        self.journal().last_seq()
    }

    #[zbus(out_args("events"))]
    fn list_events(&self, after: u64, max: u32) -> Vec<WireEvent> {
        self.journal()
            .list(after, usize::try_from(max).unwrap_or(usize::MAX))
            .into_iter()
            .map(|e| {
                (
                    e.seq,
                    e.time_unix_ms,
                    e.severity.as_str().to_owned(),
                    e.kind,
                    e.source,
                    e.node_id,
                    e.message,
                    e.count,
                )
            })
            .collect()
    }

    /// Sent for each new event.
    #[zbus(signal)]
    pub async fn event_recorded(
        emitter: &SignalEmitter<'_>,
        seq: u64,
        severity: &str,
        kind: &str,
    ) -> zbus::Result<()>;
}
