// SPDX-License-Identifier: GPL-3.0-or-later
//! Named Python runtimes the admin offers to jobs (`[[jobs.runtimes]]` in the config).
//!
//! Each runtime is probed once at start: the interpreter itself says its version, where it
//! lives and which torch/CUDA it has, so the room can match jobs to machines and the sandbox
//! knows which directories to bind for the interpreter to work.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Prints one JSON line describing the interpreter. `-I` (isolated) makes it ignore
/// `PYTHON*` variables, the user site and the current directory. A torch that fails to
/// import for any reason is reported as absent rather than failing the probe.
const PROBE_SCRIPT: &str = r#"import json, sys
torch_version = cuda = None
try:
    import torch
    torch_version = str(torch.__version__)
    cuda = torch.version.cuda
except Exception:
    pass
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix,
    "base_prefix": sys.base_prefix, "executable": sys.executable,
    "torch": torch_version, "cuda": cuda}))
"#;

/// A runtime as the admin configures it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Name jobs ask for, e.g. "torch".
    pub name: String,
    /// Absolute path of the interpreter, e.g. `/opt/venv/bin/python`.
    pub python: PathBuf,
}

/// A probed runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Runtime {
    /// Name from the config.
    pub name: String,
    /// Interpreter path from the config (what the sandbox runs).
    pub python: PathBuf,
    /// `major.minor.micro`.
    pub python_version: String,
    /// `torch.__version__`, if torch imports.
    pub torch_version: Option<String>,
    /// `torch.version.cuda` (None for a CPU build or without torch).
    pub cuda: Option<String>,
    /// Directories bound read-only at the same path in the sandbox (never `/`, nothing under
    /// `/usr`, which is bound anyway).
    pub binds: Vec<PathBuf>,
}

/// Why a runtime could not be probed. Each message names the runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The interpreter could not be started.
    #[error("The runtime \"{name}\" could not start {}: {source}.", python.display())]
    Start {
        /// Runtime name.
        name: String,
        /// Configured interpreter.
        python: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The probe took longer than allowed.
    #[error("The runtime \"{name}\" did not answer within {} s.", timeout.as_secs_f32())]
    Timeout {
        /// Runtime name.
        name: String,
        /// The limit.
        timeout: Duration,
    },
    /// The interpreter ran but did not print what the probe expects.
    #[error("The runtime \"{name}\" gave an unexpected answer to the probe: {reason}.")]
    BadOutput {
        /// Runtime name.
        name: String,
        /// What was wrong (exit status, JSON error).
        reason: String,
    },
}

/// The interpreter of the host, offered when the admin configures none.
pub fn default_runtime() -> RuntimeConfig {
    RuntimeConfig {
        name: "system".into(),
        python: PathBuf::from("/usr/bin/python3"),
    }
}

/// Runs the probe script with `config.python` (as the service, in `/`, with an empty
/// environment) and describes the result. The child is killed if `timeout` passes first.
pub async fn probe(config: &RuntimeConfig, timeout: Duration) -> Result<Runtime, RuntimeError> {
    let start = |source| RuntimeError::Start {
        name: config.name.clone(),
        python: config.python.clone(),
        source,
    };
    if !config.python.is_absolute() {
        return Err(start(std::io::Error::other("the path is not absolute")));
    }
    let child = tokio::process::Command::new(&config.python)
        .args(["-I", "-c", PROBE_SCRIPT])
        .env_clear()
        .env("LANG", "C.UTF-8")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(start)?;
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| RuntimeError::Timeout {
            name: config.name.clone(),
            timeout,
        })?
        .map_err(start)?;
    if !output.status.success() {
        return Err(bad(config, format!("it exited with {}", output.status)));
    }
    let report = parse_report(config, &String::from_utf8_lossy(&output.stdout))?;
    let real_dir = std::fs::canonicalize(&report.executable)
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_owned));
    Ok(Runtime {
        name: config.name.clone(),
        python: config.python.clone(),
        binds: binds(&report.prefix, &report.base_prefix, real_dir.as_deref()),
        python_version: report.version,
        torch_version: report.torch,
        cuda: report.cuda,
    })
}

/// What the probe script prints.
#[derive(Debug, Deserialize, PartialEq, Eq)]
struct Report {
    version: String,
    prefix: PathBuf,
    base_prefix: PathBuf,
    executable: PathBuf,
    torch: Option<String>,
    cuda: Option<String>,
}

fn bad(config: &RuntimeConfig, reason: String) -> RuntimeError {
    RuntimeError::BadOutput {
        name: config.name.clone(),
        reason,
    }
}

/// Parses the last non-empty line of stdout (an import may print before it).
fn parse_report(config: &RuntimeConfig, stdout: &str) -> Result<Report, RuntimeError> {
    let line = stdout
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("");
    let report: Report = serde_json::from_str(line).map_err(|e| bad(config, e.to_string()))?;
    if !report.prefix.is_absolute() || !report.base_prefix.is_absolute() {
        return Err(bad(config, "the prefixes are not absolute paths".into()));
    }
    Ok(report)
}

/// The directories the interpreter needs: its prefixes and, when it is a symlink into some
/// other place, the real directory of its binary. `/` and anything under `/usr`, `/bin`,
/// `/lib`, `/lib64` or `/sbin` are left out (the sandbox has those already, as binds or
/// symlinks into `/usr`; binding `/` would defeat the sandbox), and so is a directory inside
/// another one already listed.
fn binds(prefix: &Path, base_prefix: &Path, real_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut candidates: Vec<&Path> = vec![prefix, base_prefix];
    candidates.extend(real_dir);
    let mut out: Vec<PathBuf> = Vec::new();
    for path in candidates {
        let system = ["/usr", "/bin", "/lib", "/lib64", "/sbin"]
            .iter()
            .any(|dir| path.starts_with(dir));
        let relevant = path.is_absolute() && path != Path::new("/") && !system;
        if relevant && !out.iter().any(|kept| path.starts_with(kept)) {
            out.retain(|kept| !kept.starts_with(path));
            out.push(path.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests;
