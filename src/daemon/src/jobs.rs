// SPDX-License-Identifier: GPL-3.0-or-later
//! Jobs run on this machine for members of the room: their cgroups, their sandbox, their
//! network, their artifacts, and the durable record of their states.

pub mod artifacts;
pub mod cgroup;
pub mod checkpoint;
pub mod exec;
pub mod gpu;
pub mod group;
pub mod inbox;
pub mod launch;
pub mod manager;
pub mod netfilter;
pub mod remote;
pub mod runner;
pub mod runtime;
pub mod sandbox;
pub mod spool;
pub mod store;
pub mod user;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::time::Duration;

use partagpu_core::size::parse_size;

use crate::config::JobsConfig;
use exec::{Executor, JobSettings};

/// How long probing one runtime may take (importing torch is slow on a cold disk).
const RUNTIME_PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds the executor from the admin's `[jobs]`: cgroups, job user, probed runtimes. What
/// is missing is logged once and makes jobs refused with that reason; the service runs on.
pub async fn executor(
    config: &JobsConfig,
    runtime_dir: &Path,
    cores: u32,
    gpus: Vec<u32>,
    fake_gpus: bool,
    node_id: &str,
) -> Executor {
    let mut settings = JobSettings::default();
    if let Some(seconds) = config.pause_grace_s {
        settings.pause_grace = Duration::from_secs(seconds);
    }
    if let Some(size) = config.workspace_size.as_deref().and_then(|s| parse_size(s).ok()) {
        settings.scratch_bytes = size;
    }
    if let Some(size) = config.tmp_size.as_deref().and_then(|s| parse_size(s).ok()) {
        settings.tmp_bytes = size;
    }
    if let Some(count) = config.max_processes {
        settings.pids_max = count;
    }
    let root = config.cgroup_root.as_deref().unwrap_or("partagpu");
    let cgroups = cgroup::detect(Path::new("/sys/fs/cgroup"), root).map_err(|e| e.to_string());
    match &cgroups {
        Ok(backend) => tracing::info!(cgroups = %backend.describe(), "jobs: cgroups"),
        Err(error) => tracing::warn!(%error, "jobs cannot run here: no cgroups"),
    }
    // Without a usable bubblewrap no job may start; the reason travels with the user check.
    let user = sandbox::check_bwrap()
        .map_err(|e| e.to_string())
        .and_then(|version| {
            tracing::info!(version, "jobs: bubblewrap");
            user::resolve(config.user.as_deref().unwrap_or(user::DEFAULT_JOB_USER)).map_err(|e| e.to_string())
        });
    if let Err(error) = &user {
        tracing::warn!(%error, "jobs cannot run here");
    }
    let declared = if config.runtimes.is_empty() {
        vec![runtime::default_runtime()]
    } else {
        config.runtimes.clone()
    };
    let mut runtimes = Vec::new();
    for declared in &declared {
        match runtime::probe(declared, RUNTIME_PROBE_TIMEOUT).await {
            Ok(found) => {
                tracing::info!(name = found.name, python = found.python_version, torch = ?found.torch_version, "jobs: runtime");
                runtimes.push(found);
            }
            Err(error) => tracing::warn!(name = declared.name, %error, "a runtime is not usable"),
        }
    }
    let unified = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        PathBuf::from("/sys/fs/cgroup")
    } else {
        PathBuf::from("/sys/fs/cgroup/unified")
    };
    Executor {
        settings,
        cgroups,
        user,
        runtimes,
        // The running binary itself, even once a package upgrade replaced (unlinked) the file:
        // a launcher from the path would be the new version, or missing until a restart.
        launcher: if Path::new("/proc/self/exe").exists() {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/usr/libexec/partagpud"))
        },
        unified_mount: unified,
        run_dir: runtime_dir.join("jobs"),
        cores,
        gpus,
        mps: gpu::mps_for(fake_gpus, &runtime_dir.join("mps")),
        hostname: format!("pg-{}", node_id.get(..12).unwrap_or(node_id)),
    }
}
