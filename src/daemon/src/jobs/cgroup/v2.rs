// SPDX-License-Identifier: GPL-3.0-or-later
//! The cgroup v2 backend: one directory per job under the service root of a pure cgroup2
//! hierarchy, with cpu, memory and pids enabled for it.

use std::path::{Path, PathBuf};

use rustix::process::Signal;

use super::fs;
use super::{list_jobs, validate_name, CgroupBackend, CgroupError, CgroupLimits, CgroupUsage, JobCgroup};

/// The controllers every job needs; enabled in the parent's and the root's subtree_control.
pub const CONTROLLERS: [&str; 3] = ["cpu", "memory", "pids"];

/// Job cgroups under `<cgroup_fs>/<root>` of a cgroup2 hierarchy.
#[derive(Debug)]
pub struct V2Backend {
    cgroup_fs: PathBuf,
    /// The service root, relative to `cgroup_fs` ("partagpu", or
    /// "system.slice/partagpud.service/jobs" under systemd delegation).
    root: String,
}

impl V2Backend {
    /// Prepares `<cgroup_fs>/<root>`: enables the controllers in its parent (`parent`, relative
    /// to `cgroup_fs`, "" for the hierarchy root), creates it and enables them in it too. The
    /// root then never holds processes, as the no-internal-process rule requires.
    pub fn setup(cgroup_fs: &Path, parent: &str, root: &str) -> Result<Self, CgroupError> {
        let enable = CONTROLLERS.map(|c| format!("+{c}")).join(" ");
        fs::write_value(&cgroup_fs.join(parent).join("cgroup.subtree_control"), &enable)?;
        let root_dir = cgroup_fs.join(root);
        fs::make_dir_all(&root_dir)?;
        fs::write_value(&root_dir.join("cgroup.subtree_control"), &enable)?;
        Ok(V2Backend {
            cgroup_fs: cgroup_fs.to_owned(),
            root: root.to_owned(),
        })
    }

    fn job(&self, job: &str) -> V2Job {
        let rel = format!("{}/{job}", self.root);
        V2Job {
            name: job.to_owned(),
            dir: self.cgroup_fs.join(&rel),
            rel,
        }
    }
}

impl CgroupBackend for V2Backend {
    fn describe(&self) -> String {
        format!(
            "cgroup v2 ({}) {}",
            CONTROLLERS.join(", "),
            self.cgroup_fs.join(&self.root).display()
        )
    }

    fn create(&self, job: &str, limits: &CgroupLimits) -> Result<Box<dyn JobCgroup>, CgroupError> {
        validate_name(job)?;
        let cg = self.job(job);
        fs::make_dir(&cg.dir)?;
        if let Err(e) = cg.set_limits(limits) {
            // A half-configured cgroup must not be left for a later `create` to trip over.
            let _ = fs::remove_dir(&cg.dir);
            return Err(e);
        }
        Ok(Box::new(cg))
    }

    fn open(&self, job: &str) -> Option<Box<dyn JobCgroup>> {
        validate_name(job).ok()?;
        let cg = self.job(job);
        cg.dir.is_dir().then(|| Box::new(cg) as Box<dyn JobCgroup>)
    }

    fn list(&self) -> Vec<String> {
        list_jobs(&self.cgroup_fs.join(&self.root))
    }

    fn usage(&self) -> Result<CgroupUsage, CgroupError> {
        let root = self.cgroup_fs.join(&self.root);
        let stat = root.join("cpu.stat");
        Ok(CgroupUsage {
            cpu_usage_us: fs::read_keyed(&stat, "usage_usec")?.ok_or_else(|| CgroupError::Parse {
                path: stat,
                detail: "no usage_usec line".into(),
            })?,
            memory_bytes: fs::read_u64(&root.join("memory.current"))?,
        })
    }
}

/// One job's cgroup2 directory.
#[derive(Debug)]
pub struct V2Job {
    name: String,
    dir: PathBuf,
    rel: String,
}

impl V2Job {
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl JobCgroup for V2Job {
    fn name(&self) -> &str {
        &self.name
    }

    fn procs_files(&self) -> Vec<PathBuf> {
        vec![self.file("cgroup.procs")]
    }

    fn unified_path(&self) -> Option<String> {
        Some(self.rel.clone())
    }

    fn set_limits(&self, limits: &CgroupLimits) -> Result<(), CgroupError> {
        let cpu = format!("{} {}", limits.cpu_quota_us, limits.cpu_period_us);
        fs::write_value(&self.file("cpu.max"), &cpu)?;
        fs::write_value(&self.file("memory.max"), &limits.memory_bytes.to_string())?;
        // Without swap accounting (or swap) the file is absent and there is nothing to stop.
        fs::write_if_exists(&self.file("memory.swap.max"), "0")?;
        // One OOM kill takes the whole job: a half-killed job is worse than a dead one.
        fs::write_value(&self.file("memory.oom.group"), "1")?;
        fs::write_value(&self.file("pids.max"), &limits.pids.to_string())
    }

    fn freeze(&self) -> Result<(), CgroupError> {
        fs::write_value(&self.file("cgroup.freeze"), "1")
    }

    fn thaw(&self) -> Result<(), CgroupError> {
        fs::write_value(&self.file("cgroup.freeze"), "0")
    }

    fn is_frozen(&self) -> Result<bool, CgroupError> {
        Ok(fs::read_keyed(&self.file("cgroup.events"), "frozen")? == Some(1))
    }

    fn pids(&self) -> Result<Vec<i32>, CgroupError> {
        fs::read_pids(&self.file("cgroup.procs"))
    }

    fn signal_all(&self, signal: Signal) -> Result<(), CgroupError> {
        fs::signal_pids(&self.pids()?, signal, &self.dir)
    }

    fn kill_all(&self) -> Result<(), CgroupError> {
        let kill = self.file("cgroup.kill");
        if !kill.exists() {
            // Kernels before 5.14 have no cgroup.kill; cgroup.freeze (5.2) does the same job.
            return fs::freeze_kill_loop(self, &self.dir);
        }
        fs::write_value(&kill, "1")?;
        fs::wait_empty(
            &self.dir,
            || self.is_empty(),
            || self.pids().map(|p| p.len()).unwrap_or(0),
        )
    }

    fn is_empty(&self) -> Result<bool, CgroupError> {
        // "populated" also counts descendants, which cgroup.procs alone would miss.
        match fs::read_keyed(&self.file("cgroup.events"), "populated")? {
            Some(populated) => Ok(populated == 0),
            None => Ok(self.pids()?.is_empty()),
        }
    }

    fn oom_kills(&self) -> Result<u64, CgroupError> {
        Ok(fs::read_keyed(&self.file("memory.events"), "oom_kill")?.unwrap_or(0))
    }

    fn pids_limit_hits(&self) -> Result<u64, CgroupError> {
        Ok(fs::read_keyed(&self.file("pids.events"), "max")?.unwrap_or(0))
    }

    fn cpu_usage_us(&self) -> Result<u64, CgroupError> {
        let path = self.file("cpu.stat");
        fs::read_keyed(&path, "usage_usec")?.ok_or_else(|| CgroupError::Parse {
            path,
            detail: "no usage_usec line".into(),
        })
    }

    fn memory_peak_bytes(&self) -> Result<u64, CgroupError> {
        // memory.peak exists since Linux 5.19; before that the current use is the best there is.
        let peak = self.file("memory.peak");
        if peak.exists() {
            fs::read_u64(&peak)
        } else {
            fs::read_u64(&self.file("memory.current"))
        }
    }

    fn remove(&self) -> Result<(), CgroupError> {
        if !self.dir.is_dir() {
            return Ok(());
        }
        if !self.is_empty()? {
            self.kill_all()?;
        }
        fs::remove_dir(&self.dir)
    }
}
