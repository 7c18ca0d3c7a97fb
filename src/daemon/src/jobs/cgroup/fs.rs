// SPDX-License-Identifier: GPL-3.0-or-later
//! Reading and writing cgroupfs control files, parsing their formats, and the kill loop both
//! backends share.

use std::io::{ErrorKind, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use super::{CgroupError, JobCgroup};

/// How long `kill_all` keeps trying before it reports the survivors.
pub(super) const KILL_DEADLINE: Duration = Duration::from_secs(2);

/// Writes `value` in ONE write call: cgroupfs parses each write on its own, so a value split
/// over two writes would be two (wrong) values.
pub(super) fn write_value(path: &Path, value: &str) -> Result<(), CgroupError> {
    let io = |source| CgroupError::Io {
        action: format!("write {value:?} to"),
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    let written = file.write(value.as_bytes()).map_err(io)?;
    if written != value.len() {
        return Err(io(std::io::Error::new(ErrorKind::WriteZero, "short write")));
    }
    Ok(())
}

/// Writes `value` when the file exists; a missing file (a kernel without that knob) is fine.
pub(super) fn write_if_exists(path: &Path, value: &str) -> Result<(), CgroupError> {
    if path.exists() {
        write_value(path, value)
    } else {
        Ok(())
    }
}

/// The whole content of a control file.
pub(super) fn read_value(path: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(path).map_err(|source| CgroupError::Io {
        action: "read".into(),
        path: path.to_owned(),
        source,
    })
}

/// A file holding one unsigned number ("max" is not accepted here).
pub(super) fn read_u64(path: &Path) -> Result<u64, CgroupError> {
    let text = read_value(path)?;
    text.trim().parse().map_err(|_| CgroupError::Parse {
        path: path.to_owned(),
        detail: format!("expected a number, found {:?}", text.trim()),
    })
}

/// The value of `key` in a flat-keyed file ("key value" lines: memory.events, cgroup.events,
/// memory.oom_control, pids.events, cpu.stat); `None` when the key is missing.
pub(super) fn keyed_value(text: &str, key: &str, path: &Path) -> Result<Option<u64>, CgroupError> {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some(key) {
            let value = words.next().unwrap_or("");
            return value.parse().map(Some).map_err(|_| CgroupError::Parse {
                path: path.to_owned(),
                detail: format!("the value of {key:?} is {value:?}, not a number"),
            });
        }
    }
    Ok(None)
}

/// `keyed_value` of a file.
pub(super) fn read_keyed(path: &Path, key: &str) -> Result<Option<u64>, CgroupError> {
    keyed_value(&read_value(path)?, key, path)
}

/// The ids listed in a `cgroup.procs` (one a line).
pub(super) fn read_pids(path: &Path) -> Result<Vec<i32>, CgroupError> {
    let text = read_value(path)?;
    text.split_whitespace()
        .map(|w| {
            w.parse().map_err(|_| CgroupError::Parse {
                path: path.to_owned(),
                detail: format!("{w:?} is not a process id"),
            })
        })
        .collect()
}

/// Creates one directory; `Exists` when it is already there.
pub(super) fn make_dir(path: &Path) -> Result<(), CgroupError> {
    match std::fs::create_dir(path) {
        Ok(()) => {
            #[cfg(test)]
            super::tests::fake_kernel::mkdir(path);
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(CgroupError::Exists {
            path: path.to_owned(),
        }),
        Err(source) => Err(CgroupError::Io {
            action: "create".into(),
            path: path.to_owned(),
            source,
        }),
    }
}

/// Creates a directory and its parents; being there already is fine.
pub(super) fn make_dir_all(path: &Path) -> Result<(), CgroupError> {
    if path.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(path).map_err(|source| CgroupError::Io {
        action: "create".into(),
        path: path.to_owned(),
        source,
    })?;
    #[cfg(test)]
    super::tests::fake_kernel::mkdir(path);
    Ok(())
}

/// Removes a cgroup directory; gone already is fine. EBUSY is retried for a moment because
/// killed tasks leave the cgroup shortly after they die, not at once.
pub(super) fn remove_dir(path: &Path) -> Result<(), CgroupError> {
    let start = Instant::now();
    #[cfg(test)]
    super::tests::fake_kernel::rmdir(path);
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e)
                if e.raw_os_error() == Some(rustix::io::Errno::BUSY.raw_os_error())
                    && start.elapsed() < Duration::from_secs(1) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(source) => {
                return Err(CgroupError::Io {
                    action: "remove".into(),
                    path: path.to_owned(),
                    source,
                })
            }
        }
    }
}

/// Sends `signal` to each pid; a pid that is gone (ESRCH) is not an error.
pub(super) fn signal_pids(pids: &[i32], signal: Signal, cgroup: &Path) -> Result<(), CgroupError> {
    for &pid in pids {
        let Some(p) = Pid::from_raw(pid) else { continue };
        match kill_process(p, signal) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(e) => {
                return Err(CgroupError::Signal {
                    pid,
                    path: cgroup.to_owned(),
                    source: e.into(),
                })
            }
        }
    }
    Ok(())
}

/// What the freeze-kill loop needs from a cgroup.
/// Freeze, SIGKILL every task, thaw, until empty or the deadline: freezing first means no task
/// can fork a new one between reading the list and signalling it.
/// `dir` is the directory named in errors.
pub(super) fn freeze_kill_loop(cg: &dyn JobCgroup, dir: &Path) -> Result<(), CgroupError> {
    let start = Instant::now();
    loop {
        let tasks = cg.pids()?;
        if tasks.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= KILL_DEADLINE {
            return Err(CgroupError::NotEmpty {
                path: dir.to_owned(),
                remaining: tasks.len(),
                waited_ms: start.elapsed().as_millis() as u64,
            });
        }
        cg.freeze()?;
        // A task in uninterruptible sleep delays freezing; kill anyway after a short wait,
        // the next round catches whatever it forked.
        let freeze_start = Instant::now();
        while !cg.is_frozen()? && freeze_start.elapsed() < Duration::from_millis(200) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let result = signal_pids(&cg.pids()?, Signal::KILL, dir);
        // Thaw even when signalling failed: a frozen task never handles its SIGKILL.
        cg.thaw()?;
        result?;
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `empty` says so or the deadline passes.
pub(super) fn wait_empty(
    dir: &Path,
    empty: impl Fn() -> Result<bool, CgroupError>,
    count: impl Fn() -> usize,
) -> Result<(), CgroupError> {
    let start = Instant::now();
    while !empty()? {
        if start.elapsed() >= KILL_DEADLINE {
            return Err(CgroupError::NotEmpty {
                path: dir.to_owned(),
                remaining: count(),
                waited_ms: start.elapsed().as_millis() as u64,
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
