// SPDX-License-Identifier: GPL-3.0-or-later
//! A job's output: the job writes to a spool file it holds itself (never a pipe the service
//! must keep reading: a dead or busy service would block or SIGPIPE the job), and the
//! service turns it into the log users read: terminal escapes neutralised, rate and size
//! limited with explicit drop markers (core `job::logs`). Consumed parts of the spool are
//! punched out so a chatty job does not fill the disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use partagpu_core::job::logs::{
    LogLimiter, Neutraliser, DEFAULT_LOG_BURST, DEFAULT_LOG_CAP, DEFAULT_LOG_RATE,
};
use rustix::fs::{fallocate, FallocateFlags};

use super::store::files;

/// Disk blocks of consumed spool are freed in whole units of this many bytes.
const PUNCH_UNIT: u64 = 1 << 20;

/// Where the read position in the spool is noted.
const RAW_OFFSET: &str = "raw.offset";

/// Bytes read from the spool per pump at most (the rest waits for the next pump).
const PUMP_CHUNK: usize = 1 << 20;

/// The reading side of a job's output.
pub struct Spool {
    dir: std::path::PathBuf,
    raw: File,
    raw_offset: u64,
    punched: u64,
    log: File,
    log_len: u64,
    neutraliser: Neutraliser,
    limiter: LogLimiter,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("raw_offset", &self.raw_offset)
            .field("log_len", &self.log_len)
            .finish_non_exhaustive()
    }
}

impl Spool {
    /// Creates the spool and the log in `dir`; returns the spool and the file to give the
    /// job as its stdout and stderr (append mode).
    ///
    /// # Errors
    /// The files cannot be created.
    pub fn create(dir: &Path) -> io::Result<(Self, File)> {
        let writer = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(files::RAW))?;
        let spool = Self::reader(dir, 0)?;
        Ok((spool, writer))
    }

    /// Reopens the spool of a job whose service died, to move what the job wrote after the
    /// last pump into the log (the read position was noted beside the spool at each pump).
    ///
    /// # Errors
    /// The files cannot be opened.
    pub fn resume(dir: &Path) -> io::Result<Self> {
        let raw_offset = std::fs::read_to_string(dir.join(RAW_OFFSET))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        Self::reader(dir, raw_offset)
    }

    /// The reading side, from `raw_offset` of the spool (everything before it was consumed
    /// and may have been punched out).
    fn reader(dir: &Path, raw_offset: u64) -> io::Result<Self> {
        let log = open_log(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
            raw: File::open(dir.join(files::RAW))?,
            raw_offset,
            punched: raw_offset & !(PUNCH_UNIT - 1),
            log_len: log.metadata()?.len(),
            log,
            neutraliser: Neutraliser::new(),
            limiter: LogLimiter::new(DEFAULT_LOG_RATE, DEFAULT_LOG_BURST, DEFAULT_LOG_CAP),
        })
    }

    /// Bytes of log kept so far.
    #[must_use]
    pub fn log_len(&self) -> u64 {
        self.log_len
    }

    /// Bytes dropped so far (rate or cap).
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.limiter.dropped()
    }

    /// Moves what the job wrote since the last pump into the log. Returns the bytes added.
    ///
    /// # Errors
    /// Reading the spool or writing the log failed.
    pub fn pump(&mut self, now_ms: u64) -> io::Result<u64> {
        let mut chunk = vec![0; PUMP_CHUNK];
        let read = self.raw.read_at(&mut chunk, self.raw_offset)?;
        if read == 0 {
            return Ok(0);
        }
        self.raw_offset += read as u64;
        // Not synced: it only has to survive the service, not the machine (after a power
        // cut the whole job is lost anyway).
        let _ = std::fs::write(self.dir.join(RAW_OFFSET), self.raw_offset.to_string());
        let mut clean = Vec::with_capacity(read);
        self.neutraliser.feed(&chunk[..read], &mut clean);
        let mut kept = Vec::with_capacity(clean.len());
        self.limiter.offer(now_ms, &clean, &mut kept);
        let added = self.append(&kept)?;
        self.punch();
        Ok(added)
    }

    /// Pumps what is left and writes the final drop marker, then syncs the log.
    ///
    /// # Errors
    /// As [`Spool::pump`].
    pub fn finish(&mut self, now_ms: u64) -> io::Result<()> {
        while self.pump(now_ms)? > 0 || self.raw_offset < self.raw.metadata()?.len() {}
        let mut tail = Vec::new();
        self.limiter.finish(&mut tail);
        self.append(&tail)?;
        self.log.sync_all()
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        if bytes.is_empty() {
            return Ok(0);
        }
        self.log.write_all(bytes)?;
        self.log_len += bytes.len() as u64;
        Ok(bytes.len() as u64)
    }

    /// Frees the disk blocks of what was consumed, in whole MiB (best effort: a file system
    /// without hole punching just keeps them).
    fn punch(&mut self) {
        let upto = self.raw_offset & !(PUNCH_UNIT - 1);
        if upto > self.punched {
            let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            if fallocate(&self.raw, flags, self.punched, upto - self.punched).is_ok() {
                self.punched = upto;
            }
        }
    }
}

/// Reads at most `max` bytes of a job's log from `offset`; returns them and the next offset.
///
/// # Errors
/// The log cannot be read.
pub fn read_log(dir: &Path, offset: u64, max: usize) -> io::Result<(Vec<u8>, u64)> {
    let mut file = match File::open(dir.join(files::LOG)) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), offset)),
        Err(error) => return Err(error),
    };
    let len = file.metadata()?.len();
    if offset >= len {
        return Ok((Vec::new(), offset));
    }
    file.seek(SeekFrom::Start(offset))?;
    let mut data = Vec::with_capacity(max.min(usize::try_from(len - offset).unwrap_or(max)));
    file.take(max as u64).read_to_end(&mut data)?;
    let next = offset + data.len() as u64;
    Ok((data, next))
}

/// Appends bytes to a log directly (the submitting side mirrors a remote job's log).
///
/// # Errors
/// The log cannot be written.
pub fn append_log(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    open_log(dir)?.write_all(bytes)
}

/// The log of the job in `dir`, for appending (created when missing).
fn open_log(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(dir.join(files::LOG))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_neutralised_kept_in_order_and_readable_by_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, mut job_side) = Spool::create(dir.path()).unwrap();
        job_side
            .write_all(b"epoch 1\x1b[2J\x1b]0;title\x07 loss 0.5\r\n")
            .unwrap();
        assert!(spool.pump(0).unwrap() > 0);
        job_side.write_all(b"epoch 2\n").unwrap();
        spool.finish(10).unwrap();
        let (all, next) = read_log(dir.path(), 0, 1 << 20).unwrap();
        assert_eq!(String::from_utf8(all).unwrap(), "epoch 1 loss 0.5\nepoch 2\n");
        assert_eq!(next, spool.log_len());
        job_side.write_all(b"after the crash\n").unwrap();
        drop(spool);
        let mut resumed = Spool::resume(dir.path()).unwrap();
        resumed.finish(20).unwrap();
        let (all, _) = read_log(dir.path(), 0, 1 << 20).unwrap();
        assert_eq!(
            String::from_utf8(all).unwrap(),
            "epoch 1 loss 0.5\nepoch 2\nafter the crash\n",
            "nothing twice"
        );
        let (tail, _) = read_log(dir.path(), 8, 4).unwrap();
        assert_eq!(tail, b"loss");
        assert_eq!(read_log(dir.path(), 999, 4).unwrap(), (Vec::new(), 999));
    }
}
