// SPDX-License-Identifier: GPL-3.0-or-later
//! The My jobs page without widgets: which jobs are mine, which one is open, and its log
//! as it grows.

use std::path::{Path, PathBuf};

use partagpu_client::LogChunk;
use partagpu_core::job::record::{JobRecord, JobRole};

use crate::format::short_id;

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
    /// Every job known here; the page keeps those submitted from here.
    pub fn set_jobs(&mut self, jobs: Vec<JobRecord>) {
        self.mine = jobs
            .into_iter()
            .filter(|job| matches!(job.role, JobRole::Submitted | JobRole::Both | JobRole::Group))
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

#[cfg(test)]
#[path = "model_tests.rs"]
pub(crate) mod tests;
