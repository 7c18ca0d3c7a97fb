// SPDX-License-Identifier: GPL-3.0-or-later
//! The unprivileged account jobs run as.
//!
//! Jobs never run as root: bubblewrap is started as this user (through the launcher), so even
//! a job that escaped its namespaces would hold no privilege on the host (sandbox.md §3, §4).
//! The account is looked up in `/etc/passwd` directly rather than through NSS, so no NSS
//! module is loaded into the root service and the answer does not depend on a network
//! directory being reachable.

use std::fs;
use std::path::{Path, PathBuf};

/// The account jobs run as unless the admin configures another one.
pub const DEFAULT_JOB_USER: &str = "partagpu-job";

/// Where accounts are looked up.
const PASSWD: &str = "/etc/passwd";

/// The job user as found in the password database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobUser {
    /// Login name, also written into the sandbox's own `/etc/passwd`.
    pub name: String,
    /// Numeric user id; never 0.
    pub uid: u32,
    /// Primary group id; never 0.
    pub gid: u32,
}

/// Why the job user cannot be used. Each message tells the admin what to fix.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// The password database could not be read.
    #[error("Could not read {path}: {source}.")]
    Read {
        /// The file that was read.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// No such account.
    #[error(
        "The job user \"{name}\" does not exist in {path}. Create it with \
         `useradd --system --no-create-home --shell /usr/sbin/nologin {name}`."
    )]
    Missing {
        /// The account that was asked for.
        name: String,
        /// The file that was searched.
        path: PathBuf,
    },
    /// The account is root or in group root: jobs would run with the host's privileges.
    #[error(
        "The job user \"{name}\" has uid {uid} and gid {gid}; jobs must not run as root or in \
         group root. Create a dedicated account with \
         `useradd --system --no-create-home --shell /usr/sbin/nologin partagpu-job`."
    )]
    Privileged {
        /// The account that was asked for.
        name: String,
        /// Its user id.
        uid: u32,
        /// Its primary group id.
        gid: u32,
    },
    /// The account's line has no valid numeric ids.
    #[error("The entry of the job user \"{name}\" in {path} has no valid uid and gid fields.")]
    Malformed {
        /// The account that was asked for.
        name: String,
        /// The file that was searched.
        path: PathBuf,
    },
}

/// Looks up `name` in `/etc/passwd`.
pub fn resolve(name: &str) -> Result<JobUser, UserError> {
    resolve_in(Path::new(PASSWD), name)
}

/// Looks up `name` in the passwd-format file `passwd` (tests point it at a fixture).
pub fn resolve_in(passwd: &Path, name: &str) -> Result<JobUser, UserError> {
    let text = fs::read_to_string(passwd).map_err(|source| UserError::Read {
        path: passwd.to_owned(),
        source,
    })?;
    let fields = find(&text, name).ok_or_else(|| UserError::Missing {
        name: name.to_owned(),
        path: passwd.to_owned(),
    })?;
    let malformed = || UserError::Malformed {
        name: name.to_owned(),
        path: passwd.to_owned(),
    };
    let uid: u32 = fields.get(2).and_then(|f| parse_id(f)).ok_or_else(malformed)?;
    let gid: u32 = fields.get(3).and_then(|f| parse_id(f)).ok_or_else(malformed)?;
    if uid == 0 || gid == 0 {
        return Err(UserError::Privileged {
            name: name.to_owned(),
            uid,
            gid,
        });
    }
    Ok(JobUser {
        name: name.to_owned(),
        uid,
        gid,
    })
}

/// The fields of the first line whose login name is `name`. The first match wins, as in
/// glibc's `files` backend; comments and NIS `+`/`-` lines never match a valid name.
fn find<'t>(text: &'t str, name: &str) -> Option<Vec<&'t str>> {
    if name.is_empty() || name.contains([':', '\n']) {
        return None;
    }
    text.lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.len() >= 7 && fields[0] == name)
}

/// A decimal id; `(uid_t)-1` is refused because the kernel reads it as "leave unchanged".
fn parse_id(field: &str) -> Option<u32> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    field.parse().ok().filter(|id| *id != u32::MAX)
}

#[cfg(test)]
mod tests;
