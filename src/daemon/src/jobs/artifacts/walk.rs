// SPDX-License-Identifier: GPL-3.0-or-later
//! The walk of a hostile workspace from directory fds, and the copy of what it finds.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use partagpu_core::job::artifacts::{matches, validate_artifact_name};
use rustix::fs::{openat, statat, AtFlags, Dir, FileType, Mode, OFlags, Stat, CWD};

mod copy;

use super::{ArtifactIoError, Collection, MAX_DEPTH, MAX_REFUSED};

/// Flags for everything opened inside the workspace: never follow a link, never block on a
/// FIFO, never take a terminal as controlling tty.
const SAFE: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);

pub(super) struct Collector<'a> {
    patterns: &'a [String],
    dest: &'a Path,
    max_total: u64,
    max_files: usize,
    out: Collection,
    refused_more: usize,
    /// What this collection created, in order, so that a failure can take it all back.
    created: Vec<PathBuf>,
}

fn ws_err(path: &str) -> impl FnOnce(rustix::io::Errno) -> ArtifactIoError + '_ {
    move |e| ArtifactIoError::Workspace {
        path: format!("/{path}"),
        source: e.into(),
    }
}

/// A name shown in a report: control characters escaped, invalid UTF-8 replaced.
fn shown(name: &[u8]) -> String {
    String::from_utf8_lossy(name)
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

impl<'a> Collector<'a> {
    pub(super) fn new(patterns: &'a [String], dest: &'a Path, max_total: u64, max_files: usize) -> Self {
        Collector {
            patterns,
            dest,
            max_total,
            max_files,
            out: Collection::default(),
            refused_more: 0,
            created: Vec::new(),
        }
    }

    pub(super) fn run(&mut self, workspace: &Path) -> Result<(), ArtifactIoError> {
        let root = openat(CWD, workspace, SAFE | OFlags::DIRECTORY, Mode::empty()).map_err(|e| {
            ArtifactIoError::Workspace {
                path: workspace.display().to_string(),
                source: e.into(),
            }
        })?;
        self.mkdir(self.dest.to_owned())?;
        self.walk(&root, "", 1)?;
        self.sync_dirs()
    }

    pub(super) fn finish(mut self) -> Collection {
        if self.refused_more > 0 {
            let why = format!("{} more refusals were left out of this report", self.refused_more);
            self.out.refused.push(("…".to_owned(), why));
        }
        self.out
    }

    /// Removes the files and directories this collection made, newest first.
    pub(super) fn undo(&mut self) {
        for path in self.created.drain(..).rev() {
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
        }
    }

    fn refuse(&mut self, path: String, why: &str) {
        if self.out.refused.len() < MAX_REFUSED {
            self.out.refused.push((path, why.to_owned()));
        } else {
            self.refused_more += 1;
        }
    }

    fn wanted(&self, path: &str) -> bool {
        self.patterns.iter().any(|p| matches(p, path))
    }

    /// Whether some pattern could match below the directory `dir`: its first components match.
    fn may_contain(&self, dir: &str) -> bool {
        let depth = dir.split('/').count();
        self.patterns.iter().any(|p| {
            let parts: Vec<&str> = p.split('/').collect();
            parts.len() > depth && matches(&parts[..depth].join("/"), dir)
        })
    }

    fn walk(&mut self, dir: &OwnedFd, prefix: &str, depth: usize) -> Result<(), ArtifactIoError> {
        let mut names: Vec<Vec<u8>> = Vec::new();
        for entry in Dir::read_from(dir).map_err(ws_err(prefix))? {
            let name = entry.map_err(ws_err(prefix))?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(name);
            }
        }
        names.sort();
        for name in names {
            let text = match std::str::from_utf8(&name) {
                Ok(t) if !t.chars().any(char::is_control) => t.to_owned(),
                _ => {
                    let path = format!("{prefix}{}", shown(&name));
                    if self.wanted(&path) {
                        self.refuse(path, "has a name that is not UTF-8 or has control characters");
                    }
                    continue;
                }
            };
            let path = format!("{prefix}{text}");
            let cname = std::ffi::CString::new(name).expect("directory entries have no NUL byte");
            // lstat only: nothing is opened before its type is known.
            let st = statat(dir, &cname, AtFlags::SYMLINK_NOFOLLOW).map_err(ws_err(&path))?;
            let kind = FileType::from_raw_mode(st.st_mode);
            if kind == FileType::Directory {
                if self.may_contain(&path) {
                    if depth >= MAX_DEPTH {
                        self.refuse(path, "is nested deeper than 32 directories");
                        continue;
                    }
                    let sub = openat(dir, &cname, SAFE | OFlags::DIRECTORY, Mode::empty())
                        .map_err(ws_err(&path))?;
                    self.walk(&sub, &format!("{path}/"), depth + 1)?;
                } else if self.wanted(&path) {
                    self.refuse(path, "is a directory (name the files in it, e.g. 'dir/*')");
                }
                continue;
            }
            if !self.wanted(&path) {
                continue;
            }
            if let Err(why) = check_kind(kind, &st) {
                self.refuse(path, why);
                continue;
            }
            if validate_artifact_name(&path).is_err() {
                self.refuse(path, "has a name that is not accepted for an artifact");
                continue;
            }
            self.copy(dir, &cname, &st, path)?;
        }
        Ok(())
    }
}

/// Why a file of this type and link count is not collected.
fn check_kind(kind: FileType, st: &Stat) -> Result<(), &'static str> {
    match kind {
        FileType::RegularFile if st.st_nlink > 1 => Err("has other hard links"),
        FileType::RegularFile => Ok(()),
        FileType::Symlink => Err("is a symbolic link"),
        FileType::Fifo => Err("is a FIFO"),
        FileType::Socket => Err("is a socket"),
        FileType::CharacterDevice | FileType::BlockDevice => Err("is a device node"),
        _ => Err("is not a regular file"),
    }
}
