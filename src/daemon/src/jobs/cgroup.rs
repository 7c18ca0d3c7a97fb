// SPDX-License-Identifier: GPL-3.0-or-later
//! The cgroup of each job, behind one interface with two backends (design/sandbox.md §5):
//!
//! * v2 ([`v2`]): a pure cgroup2 hierarchy (the labs, production).
//! * v1 ([`v1`]): the Debian 12 hybrid layout of this machine and CI, where cpu, cpuacct,
//!   memory, pids and freezer are v1 controllers and the cgroup2 mount at `unified` has no
//!   resource controllers. The job is placed there too, because nftables `socket cgroupv2`
//!   matches that path.
//!
//! Each job gets a fresh cgroup; the launcher writes "0" into every [`JobCgroup::procs_files`]
//! before exec, so the job starts inside it and is never moved afterwards.

use std::path::{Path, PathBuf};

mod detect;
mod fs;
pub mod v1;
pub mod v2;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_v1;

pub use detect::{detect, detect_in, HostView};

/// The default CFS period in microseconds.
pub const CPU_PERIOD_US: u64 = 100_000;
/// The smallest quota written, in microseconds: the kernel refuses less than 1 ms.
pub const MIN_CPU_QUOTA_US: u64 = 1_000;
/// The longest a job name may be.
pub const MAX_JOB_NAME: usize = 64;

/// The resources one job may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLimits {
    /// CPU time per period, in microseconds, summed over all cores.
    pub cpu_quota_us: u64,
    /// The CFS period, in microseconds.
    pub cpu_period_us: u64,
    /// Memory cap in bytes (RAM; swap is off for jobs).
    pub memory_bytes: u64,
    /// The most tasks (processes and threads) at once.
    pub pids: u64,
}

impl CgroupLimits {
    /// Limits from a share of the WHOLE machine: `cpu_percent` of all `cores` together, so
    /// 50 % of 4 cores is two cores' worth: quota = period * cores * pct / 100, at least 1 ms.
    pub fn from_share(cpu_percent: u32, cores: u32, memory_bytes: u64, pids: u64) -> Self {
        let quota = CPU_PERIOD_US
            .saturating_mul(u64::from(cores.max(1)))
            .saturating_mul(u64::from(cpu_percent))
            / 100;
        CgroupLimits {
            cpu_quota_us: quota.max(MIN_CPU_QUOTA_US),
            cpu_period_us: CPU_PERIOD_US,
            memory_bytes,
            pids,
        }
    }
}

/// What can go wrong with a job's cgroup.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// Neither a usable cgroup2 nor a usable v1 layout was found.
    #[error("no usable cgroup hierarchy: {0}.")]
    NoHierarchy(String),
    /// The caller gave a name that is not `[0-9a-f-]+` of at most 64 characters.
    #[error("invalid job name {0:?}: it must be 1 to 64 characters of 0-9, a-f and '-'.")]
    InvalidName(String),
    /// The service root name is not a plain directory name.
    #[error("invalid cgroup root {0:?}: it must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-', not starting with '.'.")]
    InvalidRoot(String),
    /// `create` found the job's cgroup already there.
    #[error("the cgroup {} already exists.", path.display())]
    Exists {
        /// The directory that exists.
        path: PathBuf,
    },
    /// A control file or directory could not be read, written, created or removed.
    #[error("cannot {action} {}: {source}.", path.display())]
    Io {
        /// What was being done ("write \"max\" to", "read", "create", "remove").
        action: String,
        /// Which file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A control file held something this code does not understand.
    #[error("cannot understand {}: {detail}.", path.display())]
    Parse {
        /// Which file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// A task of the job could not be signalled (other than it being gone already).
    #[error("cannot signal process {pid} of the cgroup {}: {source}.", path.display())]
    Signal {
        /// The task.
        pid: i32,
        /// The cgroup it was in.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `kill_all` gave up with tasks still in the cgroup.
    #[error("the cgroup {} still holds {remaining} task(s) after killing for {waited_ms} ms.", path.display())]
    NotEmpty {
        /// The cgroup.
        path: PathBuf,
        /// How many tasks were left.
        remaining: usize,
        /// How long it tried.
        waited_ms: u64,
    },
}

/// One way of making job cgroups (cgroup v2, or v1 with the unified mount).
pub trait CgroupBackend: Send + Sync + std::fmt::Debug {
    /// One line for logs and `partagpu status`, naming the hierarchy and the service root.
    fn describe(&self) -> String;
    /// Creates the cgroup of `job` with `limits`; fails if it already exists.
    fn create(&self, job: &str, limits: &CgroupLimits) -> Result<Box<dyn JobCgroup>, CgroupError>;
    /// The existing cgroup of `job` (after a service restart), or `None`.
    fn open(&self, job: &str) -> Option<Box<dyn JobCgroup>>;
    /// Names of the job cgroups under this service's root only.
    fn list(&self) -> Vec<String>;
    /// What all jobs use together now, read from the service root (the kernel sums its
    /// children there).
    fn usage(&self) -> Result<CgroupUsage, CgroupError>;
}

/// What the jobs of this machine use together, as counters for the prober.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupUsage {
    /// CPU time of every job so far, µs (grows; the prober makes a rate of it).
    pub cpu_usage_us: u64,
    /// Memory charged to jobs now, bytes.
    pub memory_bytes: u64,
}

/// The cgroup of one job.
pub trait JobCgroup: Send + Sync + std::fmt::Debug {
    /// The job name.
    fn name(&self) -> &str;
    /// Every `cgroup.procs` the launcher writes "0" into before exec (v1: each controller and
    /// the unified hierarchy).
    fn procs_files(&self) -> Vec<PathBuf>;
    /// The path relative to the cgroup2 root (e.g. "partagpu/abc"), for nft `socket cgroupv2`.
    fn unified_path(&self) -> Option<String>;
    /// Changes the limits of a live job.
    fn set_limits(&self, limits: &CgroupLimits) -> Result<(), CgroupError>;
    /// Stops every task.
    fn freeze(&self) -> Result<(), CgroupError>;
    /// Lets every task run again.
    fn thaw(&self) -> Result<(), CgroupError>;
    /// Whether freezing has completed (v1 "FREEZING" is not yet frozen).
    fn is_frozen(&self) -> Result<bool, CgroupError>;
    /// The processes in the cgroup.
    fn pids(&self) -> Result<Vec<i32>, CgroupError>;
    /// Sends `signal` to every process; ones already gone are ignored.
    fn signal_all(&self, signal: rustix::process::Signal) -> Result<(), CgroupError>;
    /// Kills every task and waits (about 2 s at most) until the cgroup is empty.
    fn kill_all(&self) -> Result<(), CgroupError>;
    /// Whether no task is left.
    fn is_empty(&self) -> Result<bool, CgroupError>;
    /// How many times the kernel OOM killer struck in this cgroup.
    fn oom_kills(&self) -> Result<u64, CgroupError>;
    /// How many forks failed on the pids limit.
    fn pids_limit_hits(&self) -> Result<u64, CgroupError>;
    /// CPU time used by all tasks, in microseconds.
    fn cpu_usage_us(&self) -> Result<u64, CgroupError>;
    /// The highest memory use seen, in bytes.
    fn memory_peak_bytes(&self) -> Result<u64, CgroupError>;
    /// Removes every directory (killing the tasks first if needed); removing twice is fine.
    fn remove(&self) -> Result<(), CgroupError>;
}

/// Refuses names that are not `[0-9a-f-]+` of at most 64 characters, so a name can never
/// climb out of the service's root ("..", "/") or collide with a control file.
pub fn validate_name(job: &str) -> Result<(), CgroupError> {
    let ok = !job.is_empty()
        && job.len() <= MAX_JOB_NAME
        && job
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(CgroupError::InvalidName(job.to_owned()))
    }
}

/// Job names among the subdirectories of `dir` (the service root of one hierarchy).
fn list_jobs(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| validate_name(n).is_ok())
        .collect();
    names.sort();
    names
}
