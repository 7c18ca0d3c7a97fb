// SPDX-License-Identifier: GPL-3.0-or-later
//! The bubblewrap command line of a job (sandbox.md §3).
//!
//! bubblewrap's own SECURITY.md: the protection "is entirely determined by the arguments
//! passed", so every argument here is deliberate and documented where it is added. The
//! sandbox starts from an empty tmpfs root and receives only: `/usr` read-only, a handful of
//! `/etc` files the C library needs, a generated `/etc/passwd`/`/etc/group`/`/etc/hosts`,
//! fresh `/proc`, `/dev`, `/run` and `/tmp`, the assigned GPU nodes, the runtime, and the
//! workspace. bubblewrap is run as the job user (by the launcher), never as root.
//!
//! Not done here yet: a `--seccomp <fd>` filter (Flatpak's blocklist, §3) and Landlock.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::runtime::Runtime;
use super::user::JobUser;

/// What one job's sandbox contains.
#[derive(Debug, Clone, Copy)]
pub struct SandboxPlan<'a> {
    /// The program and its arguments, as run inside.
    pub argv: &'a [String],
    /// The job's own variables, set after ours (validated by the spec checker).
    pub env: &'a BTreeMap<String, String>,
    /// Host scratch directory (the tmpfs of `workspace::mount_scratch`), bound at `/workspace`.
    pub workspace: &'a Path,
    /// Host directory holding the generated `passwd`, `group` and `hosts` ([`write_etc`]).
    pub etc_dir: &'a Path,
    /// The Python runtime, if any: its bin directory goes first in `PATH`, its binds are added.
    pub runtime: Option<&'a Runtime>,
    /// The account the job runs as.
    pub user: &'a JobUser,
    /// Keep the host network namespace (multi-node DDP only, sandbox.md §6).
    pub share_net: bool,
    /// Size cap of the sandbox's `/tmp`.
    pub tmp_bytes: u64,
    /// Device nodes (GPU) bound at the same path.
    pub devices: &'a [PathBuf],
    /// Other directories bound read-only at the same path (e.g. the MPS pipe directory).
    pub ro_binds: &'a [PathBuf],
    /// Host name inside the sandbox.
    pub hostname: &'a str,
}

/// Why bubblewrap cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap could not be run.
    #[error("Could not run {}: {source}. Install bubblewrap (`apt install bubblewrap`).", path.display())]
    Missing {
        /// The binary tried.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// bubblewrap is too old for the flags we need.
    #[error("{found} is too old; version 0.8 or newer is needed for --disable-userns.")]
    TooOld {
        /// What `bwrap --version` printed.
        found: String,
    },
}

/// The bubblewrap binary: `/usr/bin/bwrap`, or `$PARTAGPU_BWRAP` (tests).
pub fn bwrap_path() -> PathBuf {
    std::env::var_os("PARTAGPU_BWRAP").map_or_else(|| PathBuf::from("/usr/bin/bwrap"), PathBuf::from)
}

/// Runs `bwrap --version` and returns the version, refusing anything older than 0.8.
pub fn check_bwrap() -> Result<String, SandboxError> {
    let path = bwrap_path();
    let output = std::process::Command::new(&path)
        .arg("--version")
        .env_clear()
        .output()
        .map_err(|source| SandboxError::Missing {
            path: path.clone(),
            source,
        })?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let version = text.strip_prefix("bubblewrap ").unwrap_or(&text).to_owned();
    let mut numbers = version.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    if !output.status.success() || (major, minor) < (0, 8) {
        return Err(SandboxError::TooOld { found: text });
    }
    Ok(version)
}

/// Files of the host's `/etc` the C library, TLS and time zones need; each is bound only if
/// present. Nothing else of `/etc` (no shadow, no machine-id, no resolv.conf).
const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/nsswitch.conf",
];

/// Top-level directories that merged-/usr systems make symlinks into `/usr`.
const USR_LINKS: &[&str] = &["/bin", "/lib", "/lib64", "/sbin"];

/// The arguments after `bwrap` for `plan` (sandbox.md §3).
pub fn bwrap_args(plan: &SandboxPlan) -> Vec<OsString> {
    let mut a = Args::default();
    // Every namespace; the user namespace is mandatory (not "-try"), and the job cannot
    // create another one: nested user namespaces are the usual kernel attack surface.
    a.push(["--unshare-all"]);
    if plan.share_net {
        a.push(["--share-net"]);
    }
    a.push(["--unshare-user", "--disable-userns"]);
    a.push([
        "--uid",
        &plan.user.uid.to_string(),
        "--gid",
        &plan.user.gid.to_string(),
    ]);
    a.push(["--hostname", plan.hostname]);
    // The job dies with its supervisor; a new session stops TIOCSTI into our terminal.
    a.push(["--die-with-parent", "--new-session", "--clearenv"]);
    let base = base_env(plan);
    for (key, value) in base.iter().map(|(k, v)| (k, v)).chain(plan.env) {
        a.push(["--setenv", key, value]);
    }
    // Already none for a non-root uid in its own namespace; explicit in case that changes.
    a.push(["--cap-drop", "ALL"]);
    a.push(["--ro-bind", "/usr", "/usr"]);
    for link in USR_LINKS {
        match std::fs::read_link(link) {
            Ok(target) => a.push_os(["--symlink".into(), target.into_os_string(), (*link).into()]),
            Err(_) => a.push(["--ro-bind-try", link, link]),
        }
    }
    for file in ETC_FILES {
        a.push(["--ro-bind-try", file, file]);
    }
    for name in GENERATED {
        a.push_os([
            "--ro-bind".into(),
            plan.etc_dir.join(name).into(),
            format!("/etc/{name}").into(),
        ]);
    }
    // Fresh, empty /run: no D-Bus, no systemd, no user sockets of the host.
    a.push(["--tmpfs", "/run"]);
    // A /proc of the job's pid namespace; a /dev with only null, zero, random, tty, pts, shm…
    a.push(["--proc", "/proc", "--dev", "/dev"]);
    for device in plan.devices {
        a.push_os(["--dev-bind".into(), device.into(), device.into()]);
    }
    let runtime_binds = plan.runtime.map_or(&[][..], |r| &r.binds);
    for dir in runtime_binds.iter().chain(plan.ro_binds) {
        a.push_os(["--ro-bind".into(), dir.into(), dir.into()]);
    }
    a.push([
        "--size",
        &plan.tmp_bytes.to_string(),
        "--perms",
        "1777",
        "--tmpfs",
        "/tmp",
    ]);
    a.push_os(["--bind".into(), plan.workspace.into(), "/workspace".into()]);
    // The root is a tmpfs bubblewrap made; once every mount point exists, the job needs no
    // way to add files next to /usr (the mounts below it keep their own flags).
    a.push(["--remount-ro", "/"]);
    a.push(["--chdir", "/workspace", "--"]);
    a.0.extend(plan.argv.iter().map(OsString::from));
    a.0
}

/// The variables every job gets, in this order, before its own.
fn base_env(plan: &SandboxPlan) -> Vec<(String, String)> {
    let mut path = String::new();
    let bin = plan
        .runtime
        .and_then(|r| r.python.parent())
        .and_then(Path::to_str);
    if let Some(bin) = bin.filter(|bin| !["/usr/local/bin", "/usr/bin", "/bin"].contains(bin)) {
        path.push_str(bin);
        path.push(':');
    }
    path.push_str("/usr/local/bin:/usr/bin:/bin");
    [
        ("PATH", path.as_str()),
        ("HOME", "/workspace"),
        ("TMPDIR", "/tmp"),
        ("LANG", "C.UTF-8"),
        ("PYTHONUNBUFFERED", "1"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .to_vec()
}

/// The files [`write_etc`] writes, bound read-only at `/etc/<name>`.
const GENERATED: [&str; 3] = ["passwd", "group", "hosts"];

/// Writes the sandbox's `passwd`, `group` (root and the job user only: nothing about the
/// host's accounts leaks, yet `getpass.getuser()` and `ls -l` work) and `hosts` (so
/// `localhost` resolves without the host's file) into `etc_dir`, 0644.
pub fn write_etc(
    etc_dir: &Path,
    user: &JobUser,
    hostname: &str,
    host_address: Option<std::net::Ipv4Addr>,
) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(etc_dir)?;
    // The name comes from /etc/passwd and cannot hold ':' or a newline; the host name is the
    // caller's, so anything unusual in it is left out rather than written into a file.
    let name = &user.name;
    let host_ok = !hostname.is_empty()
        && hostname
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    let host_line = if host_ok {
        // A job on the LAN (peers mode) resolves its own name to its LAN address: gloo and
        // NCCL bind to what the host name resolves to, and torchrun's c10d rendezvous finds
        // out it is the host by the same lookup.
        let address = host_address.map_or_else(|| "127.0.1.1".to_owned(), |a| a.to_string());
        format!("{address}\t{hostname}\n")
    } else {
        String::new()
    };
    let contents = [
        format!(
            "root:x:0:0:root:/root:/usr/sbin/nologin\n{name}:x:{}:{}::/workspace:/usr/sbin/nologin\n",
            user.uid, user.gid
        ),
        format!("root:x:0:\n{name}:x:{}:\n", user.gid),
        format!("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n{host_line}"),
    ];
    for (file, text) in GENERATED.iter().zip(contents) {
        let path = etc_dir.join(file);
        std::fs::write(&path, text)?;
        // Whatever the service's umask, the job user must be able to read them.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}

/// An argument vector being built.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize>(&mut self, args: [&str; N]) {
        self.0.extend(args.map(OsString::from));
    }

    fn push_os<const N: usize>(&mut self, args: [OsString; N]) {
        self.0.extend(args);
    }
}

#[cfg(test)]
mod tests;
