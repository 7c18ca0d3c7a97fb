// SPDX-License-Identifier: GPL-3.0-or-later
//! The NVIDIA MPS control daemon (nvidia-cuda-mps-control(1)) and a fake that records commands.
//!
//! Verified against NVIDIA's MPS documentation (not yet on a GPU node): `-d` daemonises;
//! without arguments the program is a client that reads commands on stdin and sends them to the
//! daemon found through `CUDA_MPS_PIPE_DIRECTORY`; `set_default_active_thread_percentage <p>`
//! only applies to servers started after it. Unverified (check with `scripts/gpu-check`): the
//! value syntax of `set_default_device_pinned_mem_limit <dev> <value>` (we send `<MiB>M`),
//! whether `<dev>` is the daemon's CUDA ordinal, and how a refused command is reported (we
//! treat a non-zero exit and any output line mentioning an error as a refusal).

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use super::{GpuError, MpsControl};

const PROGRAM: &str = "nvidia-cuda-mps-control";

/// The real control daemon, with its pipe and log directories under a directory of ours (the
/// unit has PrivateTmp, so the default /tmp/nvidia-mps would be invisible to jobs).
#[derive(Debug, Clone)]
pub struct NvidiaMps {
    run_dir: PathBuf,
    program: PathBuf,
}

impl NvidiaMps {
    /// A control daemon whose directories are `run_dir/pipe` and `run_dir/log`.
    pub fn new(run_dir: &Path) -> Self {
        Self::with_program(run_dir, Path::new(PROGRAM))
    }

    /// The same with another program, for tests that stand in a script for the real one.
    pub fn with_program(run_dir: &Path, program: &Path) -> Self {
        NvidiaMps {
            run_dir: run_dir.to_owned(),
            program: program.to_owned(),
        }
    }

    fn pipe(&self) -> PathBuf {
        self.run_dir.join("pipe")
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        // The daemon passes its environment to the MPS servers it starts: keep it minimal.
        cmd.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("CUDA_MPS_PIPE_DIRECTORY", self.pipe())
            .env("CUDA_MPS_LOG_DIRECTORY", self.run_dir.join("log"));
        cmd
    }

    /// Whether the daemon named in its pid file is alive.
    fn is_running(&self) -> bool {
        let Ok(pid) = std::fs::read_to_string(self.pipe().join("nvidia-cuda-mps-control.pid")) else {
            return false;
        };
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", pid.trim())).unwrap_or_default();
        // A stale pid file may name a recycled pid: check that it is the control daemon.
        comm.starts_with("nvidia-cuda-mps")
    }

    /// Sends one command through the client mode and returns what the daemon answered.
    fn send(&self, command: &str) -> Result<String, GpuError> {
        let spawn = |source| GpuError::Spawn {
            program: self.program.display().to_string(),
            source,
        };
        let mut child = self
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn)?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(format!("{command}\n").as_bytes())
                .map_err(spawn)?;
        }
        let out = child.wait_with_output().map_err(spawn)?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let error_line = text.lines().any(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("error") || l.contains("invalid") || l.contains("unknown")
        });
        if !out.status.success() || error_line {
            let detail = format!("{} ({}).", text.trim(), out.status);
            return Err(GpuError::Refused {
                command: command.to_owned(),
                detail,
            });
        }
        Ok(text)
    }
}

impl MpsControl for NvidiaMps {
    fn describe(&self) -> String {
        format!(
            "NVIDIA MPS control daemon, pipe directory {}",
            self.pipe().display()
        )
    }

    fn pipe_dir(&self) -> Option<PathBuf> {
        Some(self.pipe())
    }

    fn ensure_running(&self) -> Result<(), GpuError> {
        if self.is_running() {
            return Ok(());
        }
        // Job users must reach the pipes; only root reads the logs.
        for (dir, mode) in [
            (self.run_dir.clone(), 0o755),
            (self.pipe(), 0o755),
            (self.run_dir.join("log"), 0o700),
        ] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(&dir)
                .map_err(|source| GpuError::Directory {
                    path: dir.clone(),
                    source,
                })?;
        }
        let spawn = |source| GpuError::Spawn {
            program: self.program.display().to_string(),
            source,
        };
        // With -d the program forks the daemon and returns at once.
        let out = self
            .command()
            .arg("-d")
            .stdin(Stdio::null())
            .output()
            .map_err(spawn)?;
        if !out.status.success() {
            let detail = format!(
                "{} ({}).",
                String::from_utf8_lossy(&out.stderr).trim(),
                out.status
            );
            return Err(GpuError::Refused {
                command: "-d".to_owned(),
                detail,
            });
        }
        Ok(())
    }

    fn set_active_thread_percentage(&self, percent: u32) -> Result<(), GpuError> {
        if !(1..=100).contains(&percent) {
            return Err(GpuError::BadPercentage(percent));
        }
        self.send(&format!("set_default_active_thread_percentage {percent}"))
            .map(drop)
    }

    fn set_pinned_memory_limit(&self, gpu_index: u32, bytes: u64) -> Result<(), GpuError> {
        // Whole MiB, rounded down so the limit never grows; at least 1 MiB.
        let mib = (bytes >> 20).max(1);
        self.send(&format!("set_default_device_pinned_mem_limit {gpu_index} {mib}M"))
            .map(drop)
    }
}

/// A control daemon that only records what it was told, for tests and `--fake-gpus`.
#[derive(Debug, Default)]
pub struct FakeMps {
    commands: Mutex<Vec<String>>,
}

impl FakeMps {
    /// The commands received so far, in the control daemon's own syntax (`-d` for a start).
    pub fn commands(&self) -> Vec<String> {
        self.commands.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, command: String) {
        self.commands
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(command);
    }
}

impl MpsControl for FakeMps {
    fn describe(&self) -> String {
        "fake MPS control (no GPU)".to_owned()
    }

    fn pipe_dir(&self) -> Option<PathBuf> {
        None
    }

    fn ensure_running(&self) -> Result<(), GpuError> {
        let mut commands = self.commands.lock().unwrap_or_else(|e| e.into_inner());
        if !commands.iter().any(|c| c == "-d") {
            commands.push("-d".to_owned());
        }
        Ok(())
    }

    fn set_active_thread_percentage(&self, percent: u32) -> Result<(), GpuError> {
        if !(1..=100).contains(&percent) {
            return Err(GpuError::BadPercentage(percent));
        }
        self.record(format!("set_default_active_thread_percentage {percent}"));
        Ok(())
    }

    fn set_pinned_memory_limit(&self, gpu_index: u32, bytes: u64) -> Result<(), GpuError> {
        self.record(format!(
            "set_default_device_pinned_mem_limit {gpu_index} {}M",
            (bytes >> 20).max(1)
        ));
        Ok(())
    }
}

/// The control daemon for this service: the fake one with `--fake-gpus`, else NVIDIA's with its
/// directories under `run_dir` (e.g. /run/partagpu/mps).
pub fn mps_for(fake: bool, run_dir: &Path) -> Box<dyn MpsControl> {
    if fake {
        Box::new(FakeMps::default())
    } else {
        Box::new(NvidiaMps::new(run_dir))
    }
}

#[cfg(test)]
mod tests;
