// SPDX-License-Identifier: GPL-3.0-or-later
//! The security journal: bounded, append-only on disk (`security.jsonl`, one event a line,
//! fsync'd), and queryable by sequence number.
//!
//! A torn last line (power cut mid-write) or a damaged line is skipped with a warning; the
//! rest of the journal stays readable. The file is compacted to the in-memory window when it
//! grows past twice the bound.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use partagpu_core::journal::{SecurityEvent, Severity};

use crate::store::{self, StoreError};

/// File name of the journal inside the state directory.
pub const JOURNAL_FILE: &str = "security.jsonl";

/// What a caller records; the journal adds sequence number and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// How much it matters.
    pub severity: Severity,
    /// Machine-readable kind.
    pub kind: String,
    /// Remote address or empty.
    pub source: String,
    /// Remote node id or empty.
    pub node_id: String,
    /// One sentence, never containing a secret.
    pub message: String,
    /// Occurrences this entry stands for (1, or more for a flood summary).
    pub count: u32,
}

/// The journal of one machine.
pub struct SecurityJournal {
    path: PathBuf,
    max_events: usize,
    events: VecDeque<SecurityEvent>,
    lines_in_file: usize,
    last_seq: u64,
}

impl SecurityJournal {
    /// Opens (or creates) the journal in `state_dir`, keeping at most `max_events`.
    ///
    /// # Errors
    /// When the file exists but cannot be read.
    pub fn open(state_dir: &Path, max_events: usize) -> Result<Self, StoreError> {
        let path = state_dir.join(JOURNAL_FILE);
        let max_events = max_events.max(1);
        let mut journal = Self {
            path,
            max_events,
            events: VecDeque::new(),
            lines_in_file: 0,
            last_seq: 0,
        };
        let file = match File::open(&journal.path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(journal),
            Err(source) => {
                return Err(StoreError {
                    path: journal.path,
                    source,
                })
            }
        };
        let mut skipped = 0usize;
        for line in BufReader::new(file).split(b'\n') {
            let line = line.map_err(|source| StoreError {
                path: journal.path.clone(),
                source,
            })?;
            journal.lines_in_file += 1;
            match serde_json::from_slice::<SecurityEvent>(&line) {
                // Sequence numbers only grow: an older one is a damaged line.
                Ok(event) if event.seq > journal.last_seq => journal.push(event),
                _ => skipped += 1,
            }
        }
        if skipped > 0 {
            tracing::warn!(skipped, path = %journal.path.display(), "damaged security journal lines skipped");
            // Rewrite now: appending after a torn line would glue the next event onto it.
            journal.compact()?;
        }
        Ok(journal)
    }

    fn push(&mut self, event: SecurityEvent) {
        self.last_seq = event.seq;
        self.events.push_back(event);
        while self.events.len() > self.max_events {
            self.events.pop_front();
        }
    }

    /// Appends an event, durably, and returns it as stored.
    ///
    /// # Errors
    /// When it cannot be written; the journal in memory is then unchanged.
    pub fn record(&mut self, event: NewEvent, time_unix_ms: u64) -> Result<SecurityEvent, StoreError> {
        let event = SecurityEvent {
            seq: self.last_seq + 1,
            time_unix_ms,
            severity: event.severity,
            kind: event.kind,
            source: event.source,
            node_id: event.node_id,
            message: event.message,
            count: event.count.max(1),
        };
        let mut line = serde_json::to_vec(&event).unwrap_or_default();
        line.push(b'\n');
        self.append(&line).map_err(|source| StoreError {
            path: self.path.clone(),
            source,
        })?;
        self.lines_in_file += 1;
        self.push(event.clone());
        if self.lines_in_file > 2 * self.max_events {
            self.compact()?;
        }
        Ok(event)
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        file.write_all(line)?;
        file.sync_data()
    }

    fn compact(&mut self) -> Result<(), StoreError> {
        let mut bytes = Vec::new();
        for event in &self.events {
            bytes.extend(serde_json::to_vec(event).unwrap_or_default());
            bytes.push(b'\n');
        }
        store::write_atomic(&self.path, &bytes, 0o600)?;
        self.lines_in_file = self.events.len();
        Ok(())
    }

    /// Events with `seq > after`, oldest first, at most `max` (0 = all).
    #[must_use]
    pub fn list(&self, after: u64, max: usize) -> Vec<SecurityEvent> {
        let max = if max == 0 { usize::MAX } else { max };
        self.events
            .iter()
            .filter(|event| event.seq > after)
            .take(max)
            .cloned()
            .collect()
    }

    /// Sequence number of the newest event, 0 when none was ever recorded.
    #[must_use]
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str) -> NewEvent {
        NewEvent {
            severity: Severity::Warning,
            kind: kind.into(),
            source: "10.98.0.2".into(),
            node_id: String::new(),
            message: "A machine tried a wrong room code.".into(),
            count: 1,
        }
    }

    #[test]
    fn events_persist_and_are_listed_after_a_sequence_number() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = SecurityJournal::open(dir.path(), 100).unwrap();
        assert_eq!(journal.last_seq(), 0);
        for (i, kind) in ["a", "b", "c"].into_iter().enumerate() {
            let stored = journal.record(event(kind), 1000 + i as u64).unwrap();
            assert_eq!((stored.seq, stored.count), (i as u64 + 1, 1));
        }
        let reopened = SecurityJournal::open(dir.path(), 100).unwrap();
        let kinds: Vec<_> = reopened.list(1, 0).into_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, ["b", "c"]);
        assert_eq!(reopened.list(0, 1).len(), 1);
        assert_eq!(reopened.last_seq(), 3);
    }

    #[test]
    fn the_journal_is_bounded_in_memory_and_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = SecurityJournal::open(dir.path(), 5).unwrap();
        for i in 0..23 {
            journal.record(event(&format!("k{i}")), i).unwrap();
        }
        let listed = journal.list(0, 0);
        assert_eq!(listed.len(), 5);
        assert_eq!(listed[0].seq, 19);
        let lines = std::fs::read_to_string(dir.path().join(JOURNAL_FILE))
            .unwrap()
            .lines()
            .count();
        assert!(lines <= 10, "{lines} lines on disk");
        let reopened = SecurityJournal::open(dir.path(), 5).unwrap();
        assert_eq!(reopened.list(0, 0), listed);
        assert_eq!(reopened.last_seq(), 23);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_numbering_continues() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = SecurityJournal::open(dir.path(), 100).unwrap();
        journal.record(event("a"), 1).unwrap();
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.path().join(JOURNAL_FILE))
            .unwrap();
        file.write_all(b"{\"seq\":2,\"time_un").unwrap();
        drop(file);
        let mut reopened = SecurityJournal::open(dir.path(), 100).unwrap();
        assert_eq!(reopened.list(0, 0).len(), 1);
        assert_eq!(reopened.record(event("b"), 2).unwrap().seq, 2);
        assert_eq!(
            SecurityJournal::open(dir.path(), 100).unwrap().list(0, 0).len(),
            2
        );
    }
}
