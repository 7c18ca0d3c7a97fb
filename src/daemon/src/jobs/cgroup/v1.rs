// SPDX-License-Identifier: GPL-3.0-or-later
//! The cgroup v1 backend for the hybrid layout (Debian 12, CI): one directory per job in each
//! of the memory, cpu, cpuacct, pids and freezer hierarchies, plus one in the unified cgroup2
//! mount (no controllers there) so that nftables `socket cgroupv2` can match the job.

use std::path::{Path, PathBuf};

use rustix::process::Signal;

use super::fs;
use super::{list_jobs, validate_name, CgroupBackend, CgroupError, CgroupLimits, CgroupUsage, JobCgroup};

/// The mount directories of the hierarchies a job lives in, symlinks resolved (Debian's
/// `cpu` and `cpuacct` may both point at `cpu,cpuacct`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Mounts {
    /// The memory controller.
    pub memory: PathBuf,
    /// The cpu controller (CFS quota).
    pub cpu: PathBuf,
    /// The cpuacct controller; the same as `cpu` when they are co-mounted.
    pub cpuacct: PathBuf,
    /// The pids controller.
    pub pids: PathBuf,
    /// The freezer controller.
    pub freezer: PathBuf,
    /// The cgroup2 mount without controllers, when there is one.
    pub unified: Option<PathBuf>,
}

impl V1Mounts {
    /// Every hierarchy once, in the order the launcher joins them.
    fn all(&self) -> Vec<&Path> {
        let mut dirs: Vec<&Path> = vec![&self.memory, &self.cpu];
        dirs.extend([self.cpuacct.as_path(), &self.pids, &self.freezer]);
        dirs.extend(self.unified.as_deref());
        let mut unique: Vec<&Path> = Vec::new();
        for d in dirs {
            if !unique.contains(&d) {
                unique.push(d);
            }
        }
        unique
    }
}

/// Job cgroups under `<hierarchy>/<root>` of every v1 hierarchy (and the unified one).
#[derive(Debug)]
pub struct V1Backend {
    mounts: V1Mounts,
    root: String,
}

impl V1Backend {
    /// Creates `<hierarchy>/<root>` in every hierarchy (being there already is fine).
    pub fn setup(mounts: V1Mounts, root: &str) -> Result<Self, CgroupError> {
        for dir in mounts.all() {
            fs::make_dir_all(&dir.join(root))?;
        }
        Ok(V1Backend {
            mounts,
            root: root.to_owned(),
        })
    }

    fn job(&self, job: &str) -> V1Job {
        let at = |m: &Path| m.join(&self.root).join(job);
        V1Job {
            name: job.to_owned(),
            dirs: self.mounts.all().into_iter().map(at).collect(),
            memory: at(&self.mounts.memory),
            cpu: at(&self.mounts.cpu),
            cpuacct: at(&self.mounts.cpuacct),
            pids: at(&self.mounts.pids),
            freezer: at(&self.mounts.freezer),
            unified: self
                .mounts
                .unified
                .as_ref()
                .map(|_| format!("{}/{job}", self.root)),
        }
    }
}

impl CgroupBackend for V1Backend {
    fn describe(&self) -> String {
        let mut line = "cgroup v1 (cpu, cpuacct, memory, pids, freezer)".to_owned();
        match &self.mounts.unified {
            Some(u) => line.push_str(&format!(" + unified {}", u.join(&self.root).display())),
            None => line.push_str(" without a unified hierarchy"),
        }
        line
    }

    fn create(&self, job: &str, limits: &CgroupLimits) -> Result<Box<dyn JobCgroup>, CgroupError> {
        validate_name(job)?;
        let cg = self.job(job);
        let mut made: Vec<&Path> = Vec::new();
        let result = cg
            .dirs
            .iter()
            .try_for_each(|d| fs::make_dir(d).map(|()| made.push(d)));
        let result = result.and_then(|()| cg.set_limits(limits));
        if let Err(e) = result {
            // Only what this call made: an `Exists` must not delete another job's cgroup.
            for d in made.iter().rev() {
                let _ = fs::remove_dir(d);
            }
            return Err(e);
        }
        Ok(Box::new(cg))
    }

    fn open(&self, job: &str) -> Option<Box<dyn JobCgroup>> {
        validate_name(job).ok()?;
        let cg = self.job(job);
        cg.memory.is_dir().then(|| Box::new(cg) as Box<dyn JobCgroup>)
    }

    fn list(&self) -> Vec<String> {
        list_jobs(&self.mounts.memory.join(&self.root))
    }

    fn usage(&self) -> Result<CgroupUsage, CgroupError> {
        Ok(CgroupUsage {
            // cpuacct.usage is in nanoseconds.
            cpu_usage_us: fs::read_u64(&self.mounts.cpuacct.join(&self.root).join("cpuacct.usage"))? / 1000,
            memory_bytes: fs::read_u64(&self.mounts.memory.join(&self.root).join("memory.usage_in_bytes"))?,
        })
    }
}

/// In which order to write the two memory limits, so that memsw >= limit holds after each
/// write (the kernel refuses a limit above memsw, and memsw below the limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryOrder {
    /// Lowering: memory.limit_in_bytes first, then memory.memsw.limit_in_bytes.
    LimitFirst,
    /// Raising: memory.memsw.limit_in_bytes first, then memory.limit_in_bytes.
    MemswFirst,
}

/// The order for going from the current limit to `new`.
pub fn memory_order(current: u64, new: u64) -> MemoryOrder {
    if new < current {
        MemoryOrder::LimitFirst
    } else {
        MemoryOrder::MemswFirst
    }
}

/// One job's directories in the v1 hierarchies.
#[derive(Debug)]
pub struct V1Job {
    name: String,
    dirs: Vec<PathBuf>,
    memory: PathBuf,
    cpu: PathBuf,
    cpuacct: PathBuf,
    pids: PathBuf,
    freezer: PathBuf,
    unified: Option<String>,
}

impl V1Job {
    fn set_memory(&self, bytes: u64) -> Result<(), CgroupError> {
        let limit = self.memory.join("memory.limit_in_bytes");
        let memsw = self.memory.join("memory.memsw.limit_in_bytes");
        let value = bytes.to_string();
        if !memsw.exists() {
            return fs::write_value(&limit, &value);
        }
        match memory_order(fs::read_u64(&limit)?, bytes) {
            MemoryOrder::LimitFirst => {
                fs::write_value(&limit, &value)?;
                fs::write_value(&memsw, &value)
            }
            MemoryOrder::MemswFirst => {
                fs::write_value(&memsw, &value)?;
                fs::write_value(&limit, &value)
            }
        }
    }
}

impl JobCgroup for V1Job {
    fn name(&self) -> &str {
        &self.name
    }

    fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    fn unified_path(&self) -> Option<String> {
        self.unified.clone()
    }

    fn set_limits(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        // Period first: the quota is checked against the period in force.
        fs::write_value(
            &self.cpu.join("cpu.cfs_period_us"),
            &limits.cpu_period_us.to_string(),
        )?;
        fs::write_value(
            &self.cpu.join("cpu.cfs_quota_us"),
            &limits.cpu_quota_us.to_string(),
        )?;
        self.set_memory(limits.memory_bytes)?;
        // Best effort: the root cgroup, or a kernel using hierarchical swappiness, refuses it,
        // and memsw (or having no swap) already keeps the job off swap.
        let _ = fs::write_value(&self.memory.join("memory.swappiness"), "0");
        fs::write_value(&self.pids.join("pids.max"), &limits.pids.to_string())
    }

    fn freeze(&self) -> Result<(), CgroupError> {
        fs::write_value(&self.freezer.join("freezer.state"), "FROZEN")
    }

    fn thaw(&self) -> Result<(), CgroupError> {
        fs::write_value(&self.freezer.join("freezer.state"), "THAWED")
    }

    fn is_frozen(&self) -> Result<bool, CgroupError> {
        Ok(fs::read_value(&self.freezer.join("freezer.state"))?.trim() == "FROZEN")
    }

    fn pids(&self) -> Result<Vec<i32>, CgroupError> {
        let mut pids = Vec::new();
        // A directory already removed (a `remove` that failed half-way) holds nobody.
        for dir in [&self.freezer, &self.pids].into_iter().filter(|d| d.is_dir()) {
            pids.extend(fs::read_pids(&dir.join("cgroup.procs"))?);
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }

    fn signal_all(&self, signal: Signal) -> Result<(), CgroupError> {
        fs::signal_pids(&self.pids()?, signal, &self.freezer)
    }

    fn kill_all(&self) -> Result<(), CgroupError> {
        fs::freeze_kill_loop(self, &self.freezer)
    }

    fn is_empty(&self) -> Result<bool, CgroupError> {
        Ok(self.pids()?.is_empty())
    }

    fn oom_kills(&self) -> Result<u64, CgroupError> {
        Ok(fs::read_keyed(&self.memory.join("memory.oom_control"), "oom_kill")?.unwrap_or(0))
    }

    fn pids_limit_hits(&self) -> Result<u64, CgroupError> {
        Ok(fs::read_keyed(&self.pids.join("pids.events"), "max")?.unwrap_or(0))
    }

    fn cpu_usage_us(&self) -> Result<u64, CgroupError> {
        // cpuacct.usage is in nanoseconds.
        Ok(fs::read_u64(&self.cpuacct.join("cpuacct.usage"))? / 1000)
    }

    fn memory_peak_bytes(&self) -> Result<u64, CgroupError> {
        fs::read_u64(&self.memory.join("memory.max_usage_in_bytes"))
    }

    fn remove(&self) -> Result<(), CgroupError> {
        if !self.is_empty()? {
            self.kill_all()?;
        }
        // Every directory even if one fails, then report the first failure.
        let mut first = None;
        for d in &self.dirs {
            if let Err(e) = fs::remove_dir(d) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}
