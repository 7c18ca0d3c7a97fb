// SPDX-License-Identifier: GPL-3.0-or-later
//! The host side of a job's workspace: a size-capped tmpfs (sandbox.md §5 "Disk").
//!
//! The tmpfs is mounted by the service, filled from the checked plan, bound read-write at
//! `/workspace` in the sandbox, and outlives the sandbox so artifacts can be collected after
//! the job ended. Its pages are charged to the memory cgroup of whoever writes them, so what
//! the job writes counts against the job's memory limit; what we write before the start is
//! charged to the service: the workspace (at most 16 MiB, by the workspace checker) and the
//! checkpoint a new launch of a training starts from (at most 2 GiB, and never more than the
//! tmpfs holds). Copying that checkpoint from inside the job's cgroup would charge the job
//! instead, but needs a process there before the sandbox starts; a one-time charge as large
//! as the checkpoint was judged the smaller cost.

use std::fs::{self, DirBuilder, File};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use partagpu_core::job::workspace::{EntryKind, WorkspaceEntry};
use rustix::fs::{fchmod, fchown, mkdirat, openat, Gid, Mode, OFlags, Uid};
use rustix::mount::{mount, unmount, MountFlags, UnmountFlags};

use super::user::JobUser;

/// Most mounts [`release_scratch`] detaches from one directory (stacked or nested).
const MAX_UNMOUNTS: usize = 64;

/// Why a workspace could not be prepared or released.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceIoError {
    /// A file system operation failed.
    #[error("Could not {action} {path}: {source}.")]
    Io {
        /// What was being done ("mount a tmpfs on", "create", …).
        action: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Something is already mounted where a new workspace should go.
    #[error("{0} is already a mount point; release the old workspace first.")]
    AlreadyMounted(PathBuf),
    /// A plan entry that the checker should never have produced.
    #[error("The workspace entry \"{0}\" is not a plain relative path inside the archive.")]
    BadEntry(String),
}

/// Creates `dir` and mounts a tmpfs of at most `size_bytes` on it, owned by the job user,
/// mode 0700, `nosuid,nodev`. Missing parents are created 0711: the job user must be able to
/// traverse them, since bubblewrap resolves the bind source with the job user's rights.
pub fn mount_scratch(dir: &Path, size_bytes: u64, user: &JobUser) -> Result<(), WorkspaceIoError> {
    let io = |action, source| WorkspaceIoError::Io {
        action,
        path: dir.to_owned(),
        source,
    };
    if let Some(parent) = dir.parent() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o711)
            .create(parent)
            .map_err(|e| io("create", e))?;
    }
    match DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(io("create", e)),
        _ => {}
    }
    if is_mounted(dir) {
        return Err(WorkspaceIoError::AlreadyMounted(dir.to_owned()));
    }
    // No noexec: jobs may run scripts they brought. nosuid/nodev: nothing the job writes
    // can become a privilege on the host side, should the tmpfs ever be seen from there.
    let options = format!("size={size_bytes},mode=0700,uid={},gid={}", user.uid, user.gid);
    let options = std::ffi::CString::new(options).expect("formatted numbers contain no NUL");
    mount(
        "tmpfs",
        dir,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        options.as_c_str(),
    )
    .map_err(|e| io("mount a tmpfs on", e.into()))
}

/// Writes `plan` (the checked entries of `tar`) below `dir` and returns the bytes of file
/// content written. Nothing is ever followed: every component is opened with `O_NOFOLLOW`
/// relative to its parent and every file is created with `O_CREAT|O_EXCL`, so a symlink or
/// an existing file at any path is an error. Directories are 0755, files 0644 or 0755, all
/// owned by the job user.
pub fn write_workspace(
    dir: &Path,
    tar: &[u8],
    plan: &[WorkspaceEntry],
    user: &JobUser,
) -> Result<u64, WorkspaceIoError> {
    let root =
        openat(rustix::fs::CWD, dir, dir_flags(), Mode::empty()).map_err(|e| WorkspaceIoError::Io {
            action: "open",
            path: dir.to_owned(),
            source: e.into(),
        })?;
    let mut written = 0u64;
    for entry in plan {
        let bad = || WorkspaceIoError::BadEntry(entry.path.clone());
        let io = |action| {
            move |e: rustix::io::Errno| WorkspaceIoError::Io {
                action,
                path: dir.join(&entry.path),
                source: e.into(),
            }
        };
        let mut parts: Vec<&str> = entry.path.split('/').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\0'))
        {
            return Err(bad());
        }
        let name = parts.pop().ok_or_else(bad)?;
        let mut parent = None::<OwnedFd>;
        for part in parts {
            let next =
                open_or_make_dir(parent.as_ref().unwrap_or(&root), part, user).map_err(io("create"))?;
            parent = Some(next);
        }
        let parent = parent.as_ref().unwrap_or(&root);
        match &entry.kind {
            EntryKind::Directory => {
                open_or_make_dir(parent, name, user).map_err(io("create"))?;
            }
            EntryKind::File { data, executable } => {
                let content = tar.get(data.clone()).ok_or_else(bad)?;
                let flags =
                    OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let mode = Mode::from_raw_mode(if *executable { 0o755 } else { 0o644 });
                let fd = openat(parent, name, flags, Mode::RUSR | Mode::WUSR).map_err(io("create"))?;
                own(&fd, mode, user).map_err(io("change the owner of"))?;
                File::from(fd)
                    .write_all(content)
                    .map_err(|e| WorkspaceIoError::Io {
                        action: "write",
                        path: dir.join(&entry.path),
                        source: e,
                    })?;
                written += content.len() as u64;
            }
        }
    }
    Ok(written)
}

/// Copies the file at `source` to `name` at the top of `dir` (0644, job user), replacing a
/// plain file of that name the workspace may have brought; returns the bytes written.
/// `name` is one checked component; nothing is followed: a link at that name is replaced,
/// not written through, and a directory there is an error.
pub fn place_file(dir: &Path, name: &str, source: &Path, user: &JobUser) -> Result<u64, WorkspaceIoError> {
    let target = dir.join(name);
    let io = |action, e: io::Error| WorkspaceIoError::Io {
        action,
        path: target.clone(),
        source: e,
    };
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.contains('\0') {
        return Err(WorkspaceIoError::BadEntry(name.to_owned()));
    }
    let mut from = File::open(source).map_err(|e| WorkspaceIoError::Io {
        action: "open",
        path: source.to_owned(),
        source: e,
    })?;
    let root = openat(rustix::fs::CWD, dir, dir_flags(), Mode::empty()).map_err(|e| io("open", e.into()))?;
    match rustix::fs::unlinkat(&root, name, rustix::fs::AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(io("replace", e.into())),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(&root, name, flags, Mode::RUSR | Mode::WUSR).map_err(|e| io("create", e.into()))?;
    own(&fd, Mode::from_raw_mode(0o644), user).map_err(|e| io("change the owner of", e.into()))?;
    io::copy(&mut from, &mut File::from(fd)).map_err(|e| io("write", e))
}

/// Unmounts (detaching) whatever is mounted on or below `dir`, then removes it. A missing
/// directory is fine: this runs at cleanup and again after a restart.
pub fn release_scratch(dir: &Path) -> Result<(), WorkspaceIoError> {
    let io = |action, path: &Path, source| WorkspaceIoError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    for _ in 0..MAX_UNMOUNTS {
        // Deepest first, so nothing is detached while something is still mounted inside it.
        let Some(point) = mounts_at_or_below(dir)
            .into_iter()
            .max_by_key(|p| p.as_os_str().len())
        else {
            break;
        };
        unmount(&point, UnmountFlags::DETACH).map_err(|e| io("unmount", &point, e.into()))?;
    }
    if !mounts_at_or_below(dir).is_empty() {
        return Err(io("unmount", dir, io::Error::other("too many mounts")));
    }
    // std's remove_dir_all does not follow symlinks (CVE-2022-21658 was fixed in 1.58.1).
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io("remove", dir, e)),
        _ => Ok(()),
    }
}

/// Whether something is mounted exactly on `dir`, per `/proc/self/mountinfo`.
pub fn is_mounted(dir: &Path) -> bool {
    let dir = canonical(dir);
    mount_points().contains(&dir)
}

fn mounts_at_or_below(dir: &Path) -> Vec<PathBuf> {
    let dir = canonical(dir);
    mount_points()
        .into_iter()
        .filter(|point| point.starts_with(&dir))
        .collect()
}

/// `dir` as the kernel shows it in mountinfo (symlinks resolved), or as given if it is gone.
fn canonical(dir: &Path) -> PathBuf {
    fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned())
}

/// The mount points of this mount namespace (field 5 of mountinfo, octal escapes decoded).
fn mount_points() -> Vec<PathBuf> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape)
        .collect()
}

/// Decodes the `\ooo` escapes the kernel uses for space, tab, newline and backslash.
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(o)) => {
                out.push(o.iter().fold(0u8, |acc, b| acc.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Opens the directory `name` in `parent`, creating it (0755, job user) if missing. An
/// existing directory is reused (a file's parents may be listed after the file); anything
/// else at that name fails with ENOTDIR or ELOOP.
fn open_or_make_dir(parent: &OwnedFd, name: &str, user: &JobUser) -> rustix::io::Result<OwnedFd> {
    match mkdirat(parent, name, Mode::RWXU) {
        Ok(()) => {
            let fd = openat(parent, name, dir_flags(), Mode::empty())?;
            own(&fd, Mode::from_raw_mode(0o755), user)?;
            Ok(fd)
        }
        Err(rustix::io::Errno::EXIST) => openat(parent, name, dir_flags(), Mode::empty()),
        Err(e) => Err(e),
    }
}

/// Gives `fd` to the job user with exactly `mode` (creation modes are masked by the umask).
fn own(fd: &OwnedFd, mode: Mode, user: &JobUser) -> rustix::io::Result<()> {
    fchown(fd, Some(Uid::from_raw(user.uid)), Some(Gid::from_raw(user.gid)))?;
    fchmod(fd, mode)
}

#[cfg(test)]
mod tests;
