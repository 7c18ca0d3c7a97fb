// SPDX-License-Identifier: GPL-3.0-or-later
//! The launcher: `partagpud` re-executed as a tiny first stage of every job.
//!
//! A job must be inside its cgroups before any of its code exists (sandbox.md §5: never move
//! it afterwards, that races with its first fork). Doing that between `fork` and `exec` needs
//! `pre_exec`, which is `unsafe`, and the workspace forbids `unsafe`. So the service starts
//! itself as
//!
//! ```text
//! partagpud --launch-job <uid> <gid> <procs-file>... -- <program> <args>...
//! ```
//!
//! and this process, still root and still running only our code, writes itself into every
//! `cgroup.procs` file, then drops to the job user and `exec`s the program (bubblewrap) with
//! an empty environment. Everything the program becomes inherits the cgroups.

use std::ffi::{OsStr, OsString};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// First argument that turns `partagpud` into the launcher.
pub const LAUNCH_FLAG: &str = "--launch-job";

/// Exit status of a launcher that could not start the program; the caller reports it as
/// "the sandbox could not start". (127 is also what shells use for "could not execute".)
pub const LAUNCH_FAILED: u8 = 127;

/// Builds the command that starts `program args` as `uid:gid` inside the cgroups whose
/// `cgroup.procs` files are `procs_files`. The caller sets stdio on it; the environment is
/// cleared by the launcher whatever the caller sets. It must be spawned by root.
pub fn launcher_command(
    partagpud: &Path,
    uid: u32,
    gid: u32,
    procs_files: &[PathBuf],
    program: &Path,
    args: &[OsString],
) -> Command {
    let mut command = Command::new(partagpud);
    command
        .arg(LAUNCH_FLAG)
        .arg(uid.to_string())
        .arg(gid.to_string())
        .args(procs_files)
        .arg("--")
        .arg(program)
        .args(args);
    command
}

/// Runs the launcher; `args` are the arguments after [`LAUNCH_FLAG`]. Returns only on
/// failure (a successful `exec` never returns), after one line on stderr.
pub fn run_launcher(args: &[OsString]) -> ExitCode {
    let error = match parse(args) {
        Ok(launch) => launch.exec(),
        Err(error) => error,
    };
    // stderr is the job's log; if it is gone there is nobody left to tell.
    let _ = writeln!(std::io::stderr(), "partagpud launcher: {error}");
    ExitCode::from(LAUNCH_FAILED)
}

/// A parsed launcher command line.
#[derive(Debug, PartialEq, Eq)]
struct Launch<'a> {
    uid: u32,
    gid: u32,
    procs_files: Vec<&'a Path>,
    program: &'a Path,
    args: &'a [OsString],
}

impl Launch<'_> {
    /// Joins the cgroups, then becomes the program. Returns why it could not.
    fn exec(&self) -> String {
        for procs in &self.procs_files {
            // "0" means "the writing process"; no `create`: a missing cgroup is an error,
            // never a new regular file.
            let joined = OpenOptions::new()
                .write(true)
                .open(procs)
                .and_then(|mut file| file.write_all(b"0"));
            if let Err(error) = joined {
                return format!("could not join the cgroup {}: {error}.", procs.display());
            }
        }
        // With a uid set by root, std also calls setgroups(0), so no supplementary group of
        // the service survives; the order is setgroups, setgid, setuid.
        let error = Command::new(self.program)
            .args(self.args)
            .env_clear()
            .uid(self.uid)
            .gid(self.gid)
            .exec();
        format!("could not execute {}: {error}.", self.program.display())
    }
}

/// Parses `<uid> <gid> <procs-file>... -- <program> <args>...`.
fn parse(args: &[OsString]) -> Result<Launch<'_>, String> {
    let usage = "usage: partagpud --launch-job <uid> <gid> <procs-file>... -- <program> <args>...";
    let [uid, gid, rest @ ..] = args else {
        return Err(usage.to_owned());
    };
    let uid = parse_id(uid, "uid")?;
    let gid = parse_id(gid, "gid")?;
    let separator = rest.iter().position(|arg| arg == "--").ok_or(usage)?;
    let procs_files: Vec<&Path> = rest[..separator].iter().map(Path::new).collect();
    if let Some(relative) = procs_files.iter().find(|path| !path.is_absolute()) {
        return Err(format!(
            "the cgroup file {} is not an absolute path.",
            relative.display()
        ));
    }
    let [program, args @ ..] = &rest[separator + 1..] else {
        return Err(usage.to_owned());
    };
    let program = Path::new(program);
    // The environment is empty, so there is no PATH to search: only absolute programs.
    if !program.is_absolute() {
        return Err(format!(
            "the program {} is not an absolute path.",
            program.display()
        ));
    }
    Ok(Launch {
        uid,
        gid,
        procs_files,
        program,
        args,
    })
}

/// A decimal id other than 0 (root) and `(uid_t)-1` (which the kernel reads as "unchanged").
fn parse_id(arg: &OsStr, what: &str) -> Result<u32, String> {
    let text = arg.to_str().unwrap_or("");
    let id = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u32>().ok()
    } else {
        None
    };
    match id {
        Some(0) => Err(format!("refusing to run a job with {what} 0 (root).")),
        Some(id) if id != u32::MAX => Ok(id),
        _ => Err(format!("the {what} {:?} is not a valid id.", arg)),
    }
}

#[cfg(test)]
mod tests;
