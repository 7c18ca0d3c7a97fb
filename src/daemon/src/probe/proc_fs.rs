// SPDX-License-Identifier: GPL-3.0-or-later
//! Readers of `/proc/{cpuinfo,stat,meminfo,loadavg}` under an injectable root.

use std::path::{Path, PathBuf};

use partagpu_core::{CpuInfo, LoadAverage, MemoryInfo};

/// A `/proc` file that could not be read or understood.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file did not have the expected shape.
    #[error("unexpected content in {path}: {what}")]
    Parse {
        /// Which file.
        path: PathBuf,
        /// What was missing.
        what: &'static str,
    },
}

/// Aggregate CPU time counters from the first line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    busy: u64,
    total: u64,
}

impl CpuTimes {
    /// Busy share of all CPUs between `previous` and `self`, 0–100.
    #[must_use]
    pub fn busy_percent_since(&self, previous: &Self) -> f64 {
        let total = self.total.saturating_sub(previous.total);
        if total == 0 {
            return 0.0;
        }
        let busy = self.busy.saturating_sub(previous.busy);
        (busy as f64 * 100.0 / total as f64).clamp(0.0, 100.0)
    }
}

/// `/proc` rooted at a directory (`/` in production, a fixture tree in tests).
#[derive(Debug, Clone)]
pub struct ProcFs {
    root: PathBuf,
}

impl ProcFs {
    /// `/proc` under `root` (so `root` = `/` reads the real one).
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn read(&self, name: &str) -> Result<(PathBuf, String), ProcError> {
        let path = self.root.join("proc").join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok((path, text)),
            Err(source) => Err(ProcError::Read { path, source }),
        }
    }

    /// CPU model and logical core count (`usage_percent` left at 0).
    ///
    /// # Errors
    /// When `cpuinfo` cannot be read or lists no processor.
    pub fn cpu_info(&self) -> Result<CpuInfo, ProcError> {
        let (path, text) = self.read("cpuinfo")?;
        let mut cores = 0u32;
        let mut model = String::new();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            match key.trim() {
                "processor" => cores += 1,
                // x86 says "model name", some ARM kernels only "Hardware" or "Model".
                "model name" | "Model" | "Hardware" if model.is_empty() => {
                    value.trim().clone_into(&mut model);
                }
                _ => {}
            }
        }
        if cores == 0 {
            return Err(ProcError::Parse {
                path,
                what: "no processor entry",
            });
        }
        Ok(CpuInfo {
            model,
            cores,
            usage_percent: 0.0,
        })
    }

    /// Aggregate CPU counters.
    ///
    /// # Errors
    /// When `stat` cannot be read or has no `cpu` line.
    pub fn cpu_times(&self) -> Result<CpuTimes, ProcError> {
        let (path, text) = self.read("stat")?;
        let line = text
            .lines()
            .find(|line| line.starts_with("cpu "))
            .ok_or(ProcError::Parse {
                path: path.clone(),
                what: "no aggregate cpu line",
            })?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map_while(|field| field.parse().ok())
            .collect();
        if fields.len() < 4 {
            return Err(ProcError::Parse {
                path,
                what: "fewer than 4 cpu counters",
            });
        }
        // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        // already counted in user/nice, so it is left out of the total.
        let counted = &fields[..fields.len().min(8)];
        let total: u64 = counted.iter().sum();
        let idle = fields[3] + fields.get(4).copied().unwrap_or(0);
        Ok(CpuTimes {
            busy: total - idle,
            total,
        })
    }

    /// `MemTotal` and `MemAvailable`.
    ///
    /// # Errors
    /// When `meminfo` cannot be read or lacks either field.
    pub fn memory(&self) -> Result<MemoryInfo, ProcError> {
        let (path, text) = self.read("meminfo")?;
        let field = |name: &'static str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|rest| rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
                .map(|kib| kib * 1024)
                .ok_or(ProcError::Parse {
                    path: path.clone(),
                    what: name,
                })
        };
        Ok(MemoryInfo {
            total_bytes: field("MemTotal")?,
            available_bytes: field("MemAvailable")?,
        })
    }

    /// The three load averages.
    ///
    /// # Errors
    /// When `loadavg` cannot be read or has fewer than three numbers.
    pub fn load_average(&self) -> Result<LoadAverage, ProcError> {
        let (path, text) = self.read("loadavg")?;
        let mut numbers = text.split_whitespace().map(str::parse::<f64>);
        let mut next = || match numbers.next() {
            Some(Ok(value)) => Ok(value),
            _ => Err(ProcError::Parse {
                path: path.clone(),
                what: "three load averages",
            }),
        };
        Ok(LoadAverage {
            one: next()?,
            five: next()?,
            fifteen: next()?,
        })
    }

    /// The root this reader was made with.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }
}
