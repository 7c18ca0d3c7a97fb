// SPDX-License-Identifier: GPL-3.0-or-later
//! Choosing the backend from what the kernel offers.
//!
//! v2 when `cgroup_fs` is a cgroup2 mount whose parent cgroup offers cpu, memory and pids.
//! Layout chosen on v2:
//!
//! * If this process's own cgroup is delegated to it (systemd `Delegate=yes` marks it with the
//!   `trusted.delegate` / `user.delegate` xattr, "1"), e.g. `/system.slice/partagpud.service`:
//!   the service moves itself (and any other process there) into `<that>/supervisor` and puts
//!   jobs under `<that>/jobs`, because a cgroup that enables controllers for its children may
//!   not hold processes itself (no-internal-process rule). `root` is not used then: the unit's
//!   cgroup already belongs to this service alone.
//! * Otherwise jobs go under `<cgroup_fs>/<root>`, a child of the hierarchy root (exempt from
//!   the rule); several services on one kernel use distinct roots.
//!
//! v1 when the memory, cpu, pids and freezer hierarchies exist under `cgroup_fs`; the job then
//! also gets a cgroup in `<cgroup_fs>/unified` when that is a cgroup2 mount.

use std::path::{Path, PathBuf};

use super::v1::{V1Backend, V1Mounts};
use super::v2::{V2Backend, CONTROLLERS};
use super::{fs, CgroupBackend, CgroupError};

/// What detection reads about this process and the mounts; injectable so that fixture trees
/// can stand in for /sys/fs/cgroup in tests.
#[derive(Debug, Clone, Default)]
pub struct HostView {
    /// `/proc/self/mountinfo`; `None`: a directory counts as cgroup2 when it has a
    /// `cgroup.controllers` file.
    pub mountinfo: Option<String>,
    /// `/proc/self/cgroup`; `None`: this process is taken to be in the hierarchy root.
    pub self_cgroup: Option<String>,
    /// Whether this process's cgroup is delegated; `None`: read systemd's xattr.
    pub delegated: Option<bool>,
}

impl HostView {
    /// The view of the running process.
    pub fn current() -> Self {
        HostView {
            mountinfo: std::fs::read_to_string("/proc/self/mountinfo").ok(),
            self_cgroup: std::fs::read_to_string("/proc/self/cgroup").ok(),
            delegated: None,
        }
    }
}

/// Chooses and prepares the backend for the real host (see the module documentation).
pub fn detect(cgroup_fs: &Path, root: &str) -> Result<Box<dyn CgroupBackend>, CgroupError> {
    detect_in(cgroup_fs, root, &HostView::current())
}

/// [`detect`] with an explicit view of the host.
pub fn detect_in(
    cgroup_fs: &Path,
    root: &str,
    host: &HostView,
) -> Result<Box<dyn CgroupBackend>, CgroupError> {
    validate_root(root)?;
    let mut reasons = Vec::new();
    if is_cgroup2(cgroup_fs, host) {
        let (parent, service_root, supervisor) = v2_layout(cgroup_fs, root, host);
        let available = fs::read_value(&cgroup_fs.join(&parent).join("cgroup.controllers"))?;
        let missing: Vec<&str> = CONTROLLERS
            .into_iter()
            .filter(|c| !available.split_whitespace().any(|a| a == *c))
            .collect();
        if missing.is_empty() {
            if let Some(supervisor) = supervisor {
                move_into_supervisor(&cgroup_fs.join(&parent), &supervisor)?;
            }
            return Ok(Box::new(V2Backend::setup(cgroup_fs, &parent, &service_root)?));
        }
        reasons.push(format!(
            "the cgroup2 mount {} does not offer {} to /{parent}",
            cgroup_fs.display(),
            missing.join(", ")
        ));
    } else {
        reasons.push(format!("{} is not a cgroup2 mount", cgroup_fs.display()));
    }
    match v1_mounts(cgroup_fs, host) {
        Ok(mounts) => Ok(Box::new(V1Backend::setup(mounts, root)?)),
        Err(why) => {
            reasons.push(why);
            Err(CgroupError::NoHierarchy(reasons.join("; ")))
        }
    }
}

/// The service root is one plain directory name.
fn validate_root(root: &str) -> Result<(), CgroupError> {
    let ok = !root.is_empty()
        && root.len() <= super::MAX_JOB_NAME
        && !root.starts_with('.')
        && root
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(CgroupError::InvalidRoot(root.to_owned()))
    }
}

/// Whether `dir` is a cgroup2 mount point.
fn is_cgroup2(dir: &Path, host: &HostView) -> bool {
    let Some(mountinfo) = &host.mountinfo else {
        return dir.join("cgroup.controllers").is_file();
    };
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    mountinfo.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let fstype = fields
            .iter()
            .position(|f| *f == "-")
            .and_then(|i| fields.get(i + 1));
        let point = fields.get(4).map(Path::new);
        fstype == Some(&"cgroup2") && (point == Some(dir) || point == Some(canonical.as_path()))
    })
}

/// (parent, service root, supervisor cgroup to move into), relative to `cgroup_fs`.
fn v2_layout(cgroup_fs: &Path, root: &str, host: &HostView) -> (String, String, Option<String>) {
    let own = host
        .self_cgroup
        .as_deref()
        .and_then(unified_line)
        .unwrap_or_default();
    let own = own.trim_matches('/');
    // Already moved (a second detection in this process) or still to move.
    let base = own
        .strip_suffix("/supervisor")
        .filter(|b| is_delegated(&cgroup_fs.join(b), host));
    let base = base.or_else(|| (!own.is_empty() && is_delegated(&cgroup_fs.join(own), host)).then_some(own));
    match base {
        Some(base) => {
            let supervisor = format!("{base}/supervisor");
            let to_move = (own != supervisor).then(|| supervisor.clone());
            (base.to_owned(), format!("{base}/jobs"), to_move)
        }
        None => (String::new(), root.to_owned(), None),
    }
}

/// The path of the "0::" line of /proc/self/cgroup.
fn unified_line(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// systemd (≥ 251) marks a cgroup it delegated with the xattr `trusted.delegate` (or
/// `user.delegate`) = "1".
fn is_delegated(dir: &Path, host: &HostView) -> bool {
    if let Some(delegated) = host.delegated {
        return delegated;
    }
    ["trusted.delegate", "user.delegate"].into_iter().any(|name| {
        let mut value = [0u8; 8];
        matches!(rustix::fs::getxattr(dir, name, &mut value[..]), Ok(n) if value[..n] == *b"1")
    })
}

/// Moves this process, then anything else left in `parent`, into `cgroup_fs/<supervisor>`.
fn move_into_supervisor(parent: &Path, supervisor: &str) -> Result<(), CgroupError> {
    let name = supervisor.rsplit('/').next().unwrap_or(supervisor);
    let dir = parent.join(name);
    fs::make_dir_all(&dir)?;
    let procs = dir.join("cgroup.procs");
    fs::write_value(&procs, "0")?;
    for pid in fs::read_pids(&parent.join("cgroup.procs"))? {
        match fs::write_value(&procs, &pid.to_string()) {
            // Gone in the meantime.
            Err(CgroupError::Io { source, .. })
                if source.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error()) => {}
            other => other?,
        }
    }
    Ok(())
}

/// The v1 hierarchies under `cgroup_fs`, or why they are not usable.
fn v1_mounts(cgroup_fs: &Path, host: &HostView) -> Result<V1Mounts, String> {
    let controller = |name: &str| -> Result<PathBuf, String> {
        let dir = cgroup_fs.join(name);
        match dir.canonicalize() {
            Ok(real) if real.join("cgroup.procs").is_file() => Ok(real),
            _ => Err(format!("there is no v1 {name} hierarchy at {}", dir.display())),
        }
    };
    let cpu = controller("cpu")?;
    let unified = cgroup_fs.join("unified");
    Ok(V1Mounts {
        memory: controller("memory")?,
        cpuacct: controller("cpuacct").unwrap_or_else(|_| cpu.clone()),
        cpu,
        pids: controller("pids")?,
        freezer: controller("freezer")?,
        unified: is_cgroup2(&unified, host).then_some(unified),
    })
}
