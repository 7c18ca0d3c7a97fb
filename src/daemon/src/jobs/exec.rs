// SPDX-License-Identifier: GPL-3.0-or-later
//! What the service needs to run a job on this machine, and the preparation of one run:
//! scratch tmpfs with the workspace, cgroup with the owner's limits, network rules, then the
//! launcher that puts bubblewrap inside the cgroup as the job user.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use partagpu_core::job::spec::{JobSpec, NetworkMode};
use partagpu_core::job::workspace::WorkspaceEntry;
use partagpu_core::Limits;

use super::cgroup::{CgroupBackend, CgroupLimits, JobCgroup};
use super::gpu::{device_nodes, MpsControl};
use super::launch::launcher_command;
use super::netfilter;
use super::runtime::Runtime;
use super::sandbox::{bwrap_args, bwrap_path, SandboxPlan};
use super::spool::Spool;
use super::store::files;
use super::user::JobUser;
use super::workspace::{mount_scratch, place_file, release_scratch, write_workspace};

/// The admin's settings for jobs (`[jobs]` of the config file).
#[derive(Debug, Clone)]
pub struct JobSettings {
    /// How long a pause may last before the machine's jobs are stopped (`preempted`).
    pub pause_grace: Duration,
    /// Size of a job's /workspace tmpfs (the workspace plus what the job writes there).
    pub scratch_bytes: u64,
    /// Size of a job's /tmp tmpfs.
    pub tmp_bytes: u64,
    /// Most tasks (processes and threads) of one job.
    pub pids_max: u64,
    /// Grace between SIGINT, SIGTERM and SIGKILL when a job is cancelled.
    pub stop_grace: Duration,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            pause_grace: Duration::from_secs(300),
            scratch_bytes: 2 << 30,
            tmp_bytes: 1 << 30,
            pids_max: 1024,
            stop_grace: Duration::from_secs(2),
        }
    }
}

/// Everything fixed for the life of the service that running jobs needs.
#[derive(Debug)]
pub struct Executor {
    /// Admin settings.
    pub settings: JobSettings,
    /// Job cgroups; `None` when this machine has no usable hierarchy (then jobs are refused).
    pub cgroups: Result<Box<dyn CgroupBackend>, String>,
    /// The job user; an error when it is missing (then jobs are refused).
    pub user: Result<JobUser, String>,
    /// Runtimes declared by the admin, probed at start.
    pub runtimes: Vec<Runtime>,
    /// This executable, for the launcher stage.
    pub launcher: PathBuf,
    /// Where the cgroup2 hierarchy is mounted (for nft rules).
    pub unified_mount: PathBuf,
    /// Where scratch mounts go: a directory the job user can traverse (0711 parents).
    pub run_dir: PathBuf,
    /// Cores of this machine, for CPU shares.
    pub cores: u32,
    /// Indices of the GPUs this machine has (a job with `gpus: n` gets the first n).
    pub gpus: Vec<u32>,
    /// The MPS control daemon that caps a job's share of each GPU.
    pub mps: Box<dyn MpsControl>,
    /// The host name jobs see: one per machine (`pg-<node id prefix>`), because torchrun's
    /// rendezvous tells nodes apart by host name and pid, and every sandbox's pid is 2.
    pub hostname: String,
}

/// This machine's address among a peers-mode job's peers, if it is one of them.
fn lan_address(spec: &JobSpec) -> Option<std::net::Ipv4Addr> {
    let NetworkMode::Peers { peers } = &spec.network else {
        return None;
    };
    let local: Vec<std::net::IpAddr> = if_addrs::get_if_addrs()
        .ok()?
        .into_iter()
        .map(|i| i.ip())
        .collect();
    peers
        .iter()
        .map(|p| p.address)
        .find(|a| local.contains(&std::net::IpAddr::V4(*a)))
}

/// What a job's GPUs add to its sandbox.
struct GpuAccess {
    env: std::collections::BTreeMap<String, String>,
    devices: Vec<PathBuf>,
    ro_binds: Vec<PathBuf>,
}

/// A job started: its cgroup, its process, where its output goes.
pub struct Started {
    /// The job's cgroup.
    pub cgroup: Box<dyn JobCgroup>,
    /// The launcher, become bubblewrap.
    pub child: tokio::process::Child,
    /// The output reader.
    pub spool: Spool,
    /// The nft table, when the job may reach peers.
    pub table: Option<String>,
}

impl Executor {
    /// An executor that refuses every job with `why` (tests, and machines that run none).
    #[must_use]
    pub fn disabled(run_dir: PathBuf, why: &str) -> Self {
        Self {
            settings: JobSettings::default(),
            cgroups: Err(why.to_owned()),
            user: Err(why.to_owned()),
            runtimes: Vec::new(),
            launcher: PathBuf::from("/nonexistent"),
            unified_mount: PathBuf::from("/nonexistent"),
            run_dir,
            cores: 1,
            gpus: Vec::new(),
            mps: super::gpu::mps_for(true, Path::new("/nonexistent")),
            hostname: "pg-none".into(),
        }
    }

    /// Why jobs cannot run here at all, if they cannot.
    #[must_use]
    pub fn unavailable(&self) -> Option<String> {
        if let Err(why) = &self.cgroups {
            return Some(why.clone());
        }
        self.user.as_ref().err().cloned()
    }

    /// The runtime called `name` (`None`: the first one declared, else "system").
    #[must_use]
    pub fn runtime(&self, name: Option<&str>) -> Option<&Runtime> {
        match name {
            Some(name) => self.runtimes.iter().find(|r| r.name == name),
            None => self.runtimes.first(),
        }
    }

    /// The scratch directory (the job's /workspace) of job `handle`.
    #[must_use]
    pub fn scratch_dir(&self, handle: &str) -> PathBuf {
        self.run_dir.join(handle).join("workspace")
    }

    /// The limits a job gets: what it asked for within what the owner lends now.
    #[must_use]
    pub fn limits_for(&self, spec: &JobSpec, lent: &Limits) -> CgroupLimits {
        let cpu = match spec.resources.cpu_percent {
            0 => lent.cpu_percent,
            asked => asked.min(lent.cpu_percent),
        };
        let ram = match spec.resources.ram_bytes {
            0 => lent.ram_bytes,
            asked => asked.min(lent.ram_bytes),
        };
        CgroupLimits::from_share(cpu, self.cores, ram, self.settings.pids_max)
    }

    /// Prepares and starts job `handle` (its directory is `dir`). On error everything made
    /// so far is undone.
    ///
    /// # Errors
    /// A sentence for the job's `failed` reason.
    pub fn start(
        &self,
        handle: &str,
        dir: &Path,
        spec: &JobSpec,
        workspace: (&[u8], &[WorkspaceEntry]),
        lent: &Limits,
    ) -> Result<Started, String> {
        let (Ok(cgroups), Ok(user)) = (&self.cgroups, &self.user) else {
            return Err(self.unavailable().unwrap_or_default());
        };
        let runtime = self.runtime(spec.runtime.as_deref()).ok_or_else(|| {
            format!(
                "this machine has no runtime {:?}",
                spec.runtime.as_deref().unwrap_or("")
            )
        })?;
        let scratch = self.scratch_dir(handle);
        let cleanup = |cgroup: Option<&dyn JobCgroup>| {
            if let Some(cgroup) = cgroup {
                let _ = cgroup.remove();
            }
            let _ = release_scratch(&scratch);
            let _ = fs::remove_dir_all(self.run_dir.join(handle));
        };
        mount_scratch(&scratch, self.settings.scratch_bytes, user).map_err(|e| {
            cleanup(None);
            format!("the workspace could not be prepared: {e}")
        })?;
        if let Err(error) = write_workspace(&scratch, workspace.0, workspace.1, user) {
            cleanup(None);
            return Err(format!("the workspace could not be written: {error}"));
        }
        if let Some(checkpoint) = &spec.resume_checkpoint {
            let held = dir.join(files::RESUME_CHECKPOINT);
            if let Err(error) = place_file(&scratch, &checkpoint.name, &held, user) {
                cleanup(None);
                return Err(format!(
                    "the checkpoint to start from could not be written: {error}"
                ));
            }
        }
        let etc = self.run_dir.join(handle).join("etc");
        let made = fs::DirBuilder::new()
            .mode(0o755)
            .create(&etc)
            .and_then(|()| super::sandbox::write_etc(&etc, user, &self.hostname, lan_address(spec)));
        if let Err(error) = made {
            cleanup(None);
            return Err(format!("the sandbox's /etc could not be written: {error}"));
        }
        let cgroup = cgroups
            .create(handle, &self.limits_for(spec, lent))
            .map_err(|e| {
                cleanup(None);
                format!("the job's cgroup could not be made: {e}")
            })?;
        let fail = |why: String, cgroup: &dyn JobCgroup| {
            cleanup(Some(cgroup));
            why
        };
        let mut table = None;
        if let NetworkMode::Peers { peers } = &spec.network {
            let Some(path) = cgroup.unified_path() else {
                return Err(fail(
                    "this machine cannot limit a job's network to its peers (no cgroup2 hierarchy)".into(),
                    cgroup.as_ref(),
                ));
            };
            let name = netfilter::table_name(handle).map_err(|e| e.to_string());
            let installed = name.and_then(|name| {
                netfilter::install(&name, &path, peers, &self.unified_mount)
                    .map(|()| name)
                    .map_err(|e| e.to_string())
            });
            match installed {
                Ok(name) => table = Some(name),
                Err(why) => {
                    return Err(fail(
                        format!("the job's network rules could not be set: {why}"),
                        cgroup.as_ref(),
                    ))
                }
            }
        }
        let remove_table = |table: &Option<String>| {
            if let Some(name) = table {
                let _ = netfilter::remove(name);
            }
        };
        let (spool, output) = match Spool::create(dir) {
            Ok(pair) => pair,
            Err(error) => {
                remove_table(&table);
                return Err(fail(
                    format!("the job's output file could not be made: {error}"),
                    cgroup.as_ref(),
                ));
            }
        };
        let gpu = match self.gpu_access(spec, lent) {
            Ok(gpu) => gpu,
            Err(why) => {
                remove_table(&table);
                return Err(fail(why, cgroup.as_ref()));
            }
        };
        let plan = SandboxPlan {
            argv: &spec.argv,
            env: &gpu.env,
            workspace: &scratch,
            runtime: Some(runtime),
            user,
            share_net: table.is_some(),
            tmp_bytes: self.settings.tmp_bytes,
            devices: &gpu.devices,
            ro_binds: &gpu.ro_binds,
            hostname: &self.hostname,
            etc_dir: &etc,
        };
        let args: Vec<OsString> = bwrap_args(&plan);
        let mut command = launcher_command(
            &self.launcher,
            user.uid,
            user.gid,
            &cgroup.procs_files(),
            &bwrap_path(),
            &args,
        );
        let stderr = output.try_clone();
        command.stdin(Stdio::null()).stdout(output);
        match stderr {
            Ok(stderr) => drop(command.stderr(stderr)),
            Err(error) => {
                remove_table(&table);
                return Err(fail(
                    format!("the job's output file could not be shared: {error}"),
                    cgroup.as_ref(),
                ));
            }
        }
        // Spawned from the runtime's own thread: bubblewrap's --die-with-parent follows the
        // thread that forked it, and a blocking-pool thread may exit while the job lives.
        let child = match tokio::process::Command::from(command).kill_on_drop(false).spawn() {
            Ok(child) => child,
            Err(error) => {
                remove_table(&table);
                return Err(fail(
                    format!("the sandbox could not start: {error}"),
                    cgroup.as_ref(),
                ));
            }
        };
        Ok(Started {
            cgroup,
            child,
            spool,
            table,
        })
    }

    /// The device nodes, binds and environment a job's GPUs need, with its share enforced by
    /// the MPS control daemon (the job's own environment could not enforce it).
    fn gpu_access(&self, spec: &JobSpec, lent: &Limits) -> Result<GpuAccess, String> {
        let mut access = GpuAccess {
            env: spec.env.clone(),
            devices: Vec::new(),
            ro_binds: Vec::new(),
        };
        let wanted = usize::try_from(spec.resources.gpus).unwrap_or(usize::MAX);
        if wanted == 0 {
            return Ok(access);
        }
        let Some(indices) = self.gpus.get(..wanted) else {
            return Err(format!(
                "this machine has {} GPU(s), the job asked for {wanted}",
                self.gpus.len()
            ));
        };
        access.devices = device_nodes(Path::new("/dev"), indices);
        self.mps
            .ensure_running()
            .and_then(|()| self.mps.set_active_thread_percentage(lent.gpu_percent.max(1)))
            .map_err(|e| format!("the GPU share could not be enforced: {e}"))?;
        if let Some(pipe) = self.mps.pipe_dir() {
            access
                .env
                .insert("CUDA_MPS_PIPE_DIRECTORY".into(), pipe.display().to_string());
            access.ro_binds.push(pipe);
        }
        Ok(access)
    }

    /// Removes what a job left on the host: network rules, cgroup, scratch mount.
    pub fn clean_up(&self, handle: &str, cgroup: Option<&dyn JobCgroup>) {
        if let Ok(name) = netfilter::table_name(handle) {
            let _ = netfilter::remove(&name);
        }
        if let Some(cgroup) = cgroup {
            if let Err(error) = cgroup.remove() {
                tracing::error!(job = handle, %error, "a job's cgroup could not be removed");
            }
        } else if let Ok(cgroups) = &self.cgroups {
            if let Some(cgroup) = cgroups.open(handle) {
                let _ = cgroup.kill_all();
                let _ = cgroup.remove();
            }
        }
        if let Err(error) = release_scratch(&self.scratch_dir(handle)) {
            tracing::error!(job = handle, %error, "a job's workspace could not be released");
        }
        let _ = fs::remove_dir_all(self.run_dir.join(handle));
    }
}
