// SPDX-License-Identifier: GPL-3.0-or-later
//! Running nft: loading a job's table where nft can see the unified cgroup hierarchy, removing
//! it, and listing what is left after a restart.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use partagpu_core::job::spec::PeerAccess;

use super::{check_table, rules, NetfilterError};

/// Where nft looks up `socket cgroupv2` paths; it cannot be told another root.
const NFT_CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Runs nft on the host network namespace (or in `netns`, a path like `/run/netns/x`).
#[derive(Debug, Clone)]
pub struct Nft {
    /// Network namespace to enter first; `None` is the caller's own.
    pub netns: Option<PathBuf>,
}

impl Nft {
    fn command(&self, program: &str) -> Command {
        match &self.netns {
            Some(ns) => {
                // `ip netns exec` would remount /sys and hide the cgroup mounts; nsenter does not.
                let mut c = Command::new("nsenter");
                c.arg(format!("--net={}", ns.display())).arg("--").arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    fn run(&self, mut cmd: Command, stdin: &str) -> Result<String, NetfilterError> {
        let program = format!("{:?}", cmd.get_program());
        let spawn = |source| NetfilterError::Spawn {
            program: program.clone(),
            source,
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(spawn)?;
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin.as_bytes()).map_err(spawn)?;
        }
        let out = child.wait_with_output().map_err(spawn)?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            return Err(NetfilterError::Nft {
                status: out.status.to_string(),
                stderr,
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Loads the rules of a job, replacing its previous table atomically.
    pub fn install(
        &self,
        table: &str,
        cgroup_path: &str,
        peers: &[PeerAccess],
        unified_mount: &Path,
    ) -> Result<(), NetfilterError> {
        let script = rules(table, cgroup_path, peers)?;
        let cgroup = unified_mount.join(cgroup_path);
        if !cgroup.is_dir() {
            return Err(NetfilterError::MissingCgroup(cgroup));
        }
        let cmd = if unified_mount == Path::new(NFT_CGROUP_ROOT) {
            let mut c = self.command("nft");
            c.args(["-f", "-"]);
            c
        } else {
            // nft resolves the cgroup under /sys/fs/cgroup, a tmpfs on hybrid hosts: show it the
            // unified hierarchy there, in a mount namespace that dies with the command. The mount
            // source is an argument, never spliced into the shell text.
            let mut c = self.command("unshare");
            c.args(["--mount", "--propagation", "private", "--", "sh", "-c"]);
            c.arg(format!("mount --bind \"$1\" {NFT_CGROUP_ROOT} && exec nft -f -"));
            c.arg("sh").arg(unified_mount);
            c
        };
        self.run(cmd, &script).map(drop)
    }

    /// Deletes a job's table; a table that is already gone is fine.
    pub fn remove(&self, table: &str) -> Result<(), NetfilterError> {
        check_table(table)?;
        let mut cmd = self.command("nft");
        cmd.args(["-f", "-"]);
        // `destroy` is newer than nft 1.0.6; add-then-delete never fails on an absent table.
        self.run(
            cmd,
            &format!("add table inet {table}\ndelete table inet {table}\n"),
        )
        .map(drop)
    }

    /// Names of the `inet` tables starting with `prefix`; empty when nft cannot be asked.
    pub fn list_tables(&self, prefix: &str) -> Vec<String> {
        let mut cmd = self.command("nft");
        cmd.args(["list", "tables", "inet"]);
        let Ok(out) = self.run(cmd, "") else {
            return Vec::new();
        };
        out.lines()
            .filter_map(|l| l.trim().strip_prefix("table inet "))
            .filter(|name| name.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }
}

/// [`Nft::install`] in the service's own network namespace.
pub fn install(
    table: &str,
    cgroup_path: &str,
    peers: &[PeerAccess],
    unified_mount: &Path,
) -> Result<(), NetfilterError> {
    Nft { netns: None }.install(table, cgroup_path, peers, unified_mount)
}

/// [`Nft::remove`] in the service's own network namespace.
pub fn remove(table: &str) -> Result<(), NetfilterError> {
    Nft { netns: None }.remove(table)
}

/// [`Nft::list_tables`] in the service's own network namespace.
pub fn list_tables(prefix: &str) -> Vec<String> {
    Nft { netns: None }.list_tables(prefix)
}
