// SPDX-License-Identifier: GPL-3.0-or-later
//! The GPU side of a job (sandbox.md §7): which NVIDIA device nodes its sandbox may see, and the
//! MPS control daemon through which its share of a GPU is enforced.
//!
//! `CUDA_VISIBLE_DEVICES` and the `CUDA_MPS_*` variables live in the job's own environment, so
//! they only advise; the set of device nodes and the control daemon's limits are what bind.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

mod mps;

pub use mps::{mps_for, FakeMps, NvidiaMps};

/// Why the MPS control daemon could not be started or told a limit.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// A program (the control daemon or its client mode) could not be started.
    #[error("Could not run {program}: {source}.")]
    Spawn { program: String, source: std::io::Error },
    /// The control daemon's directories could not be made.
    #[error("Could not prepare the MPS directory {path}: {source}.")]
    Directory { path: PathBuf, source: std::io::Error },
    /// The control daemon exited with an error or answered a command with one.
    #[error("The MPS control daemon refused {command:?}: {detail}")]
    Refused { command: String, detail: String },
    /// An active thread percentage outside 1..=100 was asked for.
    #[error("The active thread percentage {0} is not between 1 and 100.")]
    BadPercentage(u32),
}

/// The MPS control daemon, seen from the service: starting it and setting the limits that
/// clients cannot raise themselves.
pub trait MpsControl: Send + Sync + std::fmt::Debug {
    /// A short human description, for logs and `status`.
    fn describe(&self) -> String;
    /// The pipe directory clients connect through, which the sandbox must show the job;
    /// `None` when there is nothing to show (fake GPUs).
    fn pipe_dir(&self) -> Option<PathBuf>;
    /// Starts the control daemon unless it already runs.
    fn ensure_running(&self) -> Result<(), GpuError>;
    /// The share of SMs every MPS server started from now on may use (1 to 100).
    fn set_active_thread_percentage(&self, percent: u32) -> Result<(), GpuError>;
    /// The device memory every client may pin on GPU `gpu_index`, for servers started from now on.
    fn set_pinned_memory_limit(&self, gpu_index: u32, bytes: u64) -> Result<(), GpuError>;
}

/// The device nodes a job with GPUs `gpu_indices` needs, under `dev` (normally `/dev`): the
/// control nodes, its own `nvidiaN`, and the MIG capability nodes; only character devices
/// that exist. Never `nvidia-uvm-tools` (profiling of other processes' memory).
pub fn device_nodes(dev: &Path, gpu_indices: &[u32]) -> Vec<PathBuf> {
    select_nodes(dev, gpu_indices, |p| {
        // symlink_metadata: a link planted in /dev must not lead the sandbox elsewhere.
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
    })
}

/// [`device_nodes`] with the "is a character device" test given by the caller, so that the
/// selection can be tested on plain files (tests cannot mknod).
pub fn select_nodes(dev: &Path, gpu_indices: &[u32], is_char_device: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut wanted: Vec<PathBuf> = ["nvidiactl", "nvidia-uvm", "nvidia-modeset"]
        .iter()
        .map(|n| dev.join(n))
        .collect();
    let mut indices = gpu_indices.to_vec();
    indices.sort_unstable();
    indices.dedup();
    wanted.extend(indices.iter().map(|i| dev.join(format!("nvidia{i}"))));
    // The capability nodes gate MIG instances; without MIG the directory is absent.
    if let Ok(entries) = std::fs::read_dir(dev.join("nvidia-caps")) {
        let mut caps: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        caps.sort();
        wanted.extend(caps);
    }
    wanted.into_iter().filter(|p| is_char_device(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for name in names {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"").unwrap();
        }
        dir
    }

    fn names(dev: &Path, nodes: &[PathBuf]) -> Vec<String> {
        nodes
            .iter()
            .map(|p| p.strip_prefix(dev).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn only_assigned_gpus_and_control_nodes() {
        let all = [
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-uvm-tools",
            "nvidia-modeset",
            "nvidia0",
            "nvidia1",
            "nvidia2",
            "nvidia-caps/nvidia-cap1",
            "nvidia-caps/nvidia-cap2",
        ];
        let dev = fixture(&all);
        let nodes = select_nodes(dev.path(), &[2, 0, 2], Path::exists);
        let expected = [
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-modeset",
            "nvidia0",
            "nvidia2",
            "nvidia-caps/nvidia-cap1",
            "nvidia-caps/nvidia-cap2",
        ];
        assert_eq!(names(dev.path(), &nodes), expected);
    }

    #[test]
    fn missing_and_non_device_nodes_are_left_out() {
        let dev = fixture(&["nvidiactl", "nvidia-uvm", "nvidia0"]);
        let nodes = select_nodes(dev.path(), &[0, 1], Path::exists);
        assert_eq!(names(dev.path(), &nodes), ["nvidiactl", "nvidia-uvm", "nvidia0"]);
        // The real check wants character devices: plain files are not.
        assert!(device_nodes(dev.path(), &[0]).is_empty());
    }

    #[test]
    fn links_to_devices_are_refused() {
        let dev = tempfile::tempdir().unwrap();
        // /dev/null is a character device, but a link to it is not one in /dev.
        std::os::unix::fs::symlink("/dev/null", dev.path().join("nvidiactl")).unwrap();
        assert!(device_nodes(dev.path(), &[]).is_empty());
        assert!(std::fs::metadata(dev.path().join("nvidiactl"))
            .unwrap()
            .file_type()
            .is_char_device());
    }
}
