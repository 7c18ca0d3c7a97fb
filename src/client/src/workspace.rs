// SPDX-License-Identifier: GPL-3.0-or-later
//! Packing a directory into the workspace archive a job is sent with.
//!
//! The archive is made with the core's [`TarWriter`], which refuses while adding what the
//! executing machine would refuse, so a user learns before anything is sent. Links are never
//! followed: what is sent is exactly the files of the directory, never what they point to.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use partagpu_core::job::workspace::{TarWriter, WorkspaceError, MAX_WORKSPACE_BYTES};
use sha2::{Digest, Sha256};

/// Directories left out at any depth: version control, caches and virtual environments,
/// which are large, machine-specific and rebuilt by the job if needed.
pub const SKIPPED_DIRS: &[&str] = &[".git", "__pycache__", ".ipynb_checkpoints", ".venv", "venv"];

/// A packed workspace.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The ustar archive.
    pub tar: Vec<u8>,
    /// Number of regular files in it.
    pub files: usize,
    /// SHA-256 of `tar`, 64 lowercase hex (the spec's `workspace_sha256`).
    pub sha256: String,
}

/// Why a directory could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The root is missing or not a directory.
    #[error("{0} is not a directory: give the directory of the job's files")]
    NotADirectory(PathBuf),
    /// Reading failed.
    #[error("could not read {path}: {source}")]
    Io {
        /// The path on disk.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A symbolic link.
    #[error("'{0}' is a symbolic link: links are not sent; copy the file instead")]
    SymbolicLink(String),
    /// A device, socket or FIFO.
    #[error("'{0}' is not a regular file (a device, socket or pipe): only files and directories are sent")]
    NotRegular(String),
    /// A name that is not UTF-8.
    #[error("'{0}' has a name that is not valid UTF-8: rename it to send it")]
    NotUtf8(String),
    /// The archive would pass the cap.
    #[error("'{path}' is {bytes} bytes: with it the workspace would pass {MAX_WORKSPACE_BYTES} bytes (16 MiB); leave large data out and download it in the job")]
    TooLarge {
        /// The file, relative to the root.
        path: String,
        /// Its size.
        bytes: u64,
    },
    /// The core refused an entry.
    #[error("'{path}' cannot be sent: {source}")]
    Refused {
        /// The entry, relative to the root.
        path: String,
        /// Why.
        source: WorkspaceError,
    },
}

/// Packs the directory `root` into a workspace archive, in sorted order, without following
/// symbolic links and leaving out [`SKIPPED_DIRS`].
///
/// # Errors
/// [`PackError`] for a symbolic link or non-regular file anywhere in the tree, a name that
/// is not UTF-8 or breaks the workspace rules, an unreadable entry, or as soon as a cap would
/// be passed (before reading further files).
pub fn pack_dir(root: &Path) -> Result<Packed, PackError> {
    let meta = fs::symlink_metadata(root).map_err(|source| PackError::Io {
        path: root.into(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(PackError::NotADirectory(root.into()));
    }
    let mut packer = Packer {
        writer: TarWriter::new(),
        files: 0,
        bytes: 0,
    };
    packer.walk(root, "")?;
    let tar = packer.writer.finish();
    let sha256 = hex::encode(Sha256::digest(&tar));
    Ok(Packed {
        tar,
        files: packer.files,
        sha256,
    })
}

struct Packer {
    writer: TarWriter,
    files: usize,
    /// File bytes read so far, to refuse a file by its size before reading it.
    bytes: u64,
}

impl Packer {
    fn walk(&mut self, dir: &Path, relative: &str) -> Result<(), PackError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PackError::Io { path, source }
        };
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(io(dir))? {
            names.push(entry.map_err(io(dir))?.file_name());
        }
        names.sort();
        for name in names {
            let path = dir.join(&name);
            let Some(name) = name.to_str() else {
                return Err(PackError::NotUtf8(format!(
                    "{relative}{}",
                    name.to_string_lossy()
                )));
            };
            let rel = format!("{relative}{name}");
            let meta = fs::symlink_metadata(&path).map_err(io(&path))?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(PackError::SymbolicLink(rel));
            } else if kind.is_dir() {
                if SKIPPED_DIRS.contains(&name) {
                    continue;
                }
                self.writer.add_dir(&rel).map_err(|source| PackError::Refused {
                    path: rel.clone(),
                    source,
                })?;
                self.walk(&path, &format!("{rel}/"))?;
            } else if kind.is_file() {
                self.add_file(&path, rel, meta.len(), meta.permissions().mode() & 0o111 != 0)?;
            } else {
                return Err(PackError::NotRegular(rel));
            }
        }
        Ok(())
    }

    fn add_file(&mut self, path: &Path, rel: String, size: u64, executable: bool) -> Result<(), PackError> {
        let too_large = |bytes| PackError::TooLarge {
            path: rel.clone(),
            bytes,
        };
        if self.bytes.saturating_add(size) > MAX_WORKSPACE_BYTES {
            return Err(too_large(size));
        }
        // Read at most what may still fit: a file growing while read cannot pass the cap.
        let mut data = Vec::with_capacity(size as usize);
        let file = fs::File::open(path).map_err(|source| PackError::Io {
            path: path.into(),
            source,
        })?;
        let limit = MAX_WORKSPACE_BYTES - self.bytes + 1;
        file.take(limit)
            .read_to_end(&mut data)
            .map_err(|source| PackError::Io {
                path: path.into(),
                source,
            })?;
        if data.len() as u64 >= limit {
            return Err(too_large(data.len() as u64));
        }
        self.writer
            .add_file(&rel, &data, executable)
            .map_err(|source| PackError::Refused {
                path: rel.clone(),
                source,
            })?;
        self.bytes += data.len() as u64;
        self.files += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use partagpu_core::job::workspace::{plan_workspace, EntryKind};

    use super::*;

    fn write(root: &Path, rel: &str, data: &[u8]) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, data).unwrap();
    }

    #[test]
    fn a_directory_packs_sorted_with_its_executable_bits_and_without_caches() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "train.py", b"print(1)\n");
        write(dir.path(), "b/run.sh", b"#!/bin/sh\n");
        fs::set_permissions(dir.path().join("b/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        write(dir.path(), "a/data.txt", b"data");
        fs::create_dir(dir.path().join("empty")).unwrap();
        for skipped in SKIPPED_DIRS {
            write(dir.path(), &format!("{skipped}/junk"), b"x");
            write(dir.path(), &format!("a/{skipped}/junk"), b"x");
        }
        write(dir.path(), "venv.txt", b"a file named like a skipped dir is kept");
        let packed = pack_dir(dir.path()).unwrap();
        assert_eq!(packed.files, 4);
        assert_eq!(packed.sha256, hex::encode(Sha256::digest(&packed.tar)));
        let plan = plan_workspace(&packed.tar).unwrap();
        let paths: Vec<&str> = plan.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "a",
                "a/data.txt",
                "b",
                "b/run.sh",
                "empty",
                "train.py",
                "venv.txt"
            ]
        );
        assert!(matches!(plan[3].kind, EntryKind::File { executable: true, .. }));
        assert!(matches!(
            plan[5].kind,
            EntryKind::File {
                executable: false,
                ..
            }
        ));
        assert_eq!(
            pack_dir(dir.path()).unwrap().sha256,
            packed.sha256,
            "packing is deterministic"
        );
    }

    #[test]
    fn symbolic_links_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "sub/real", b"x");
        symlink("/etc/passwd", dir.path().join("sub/link")).unwrap();
        let err = pack_dir(dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'sub/link' is a symbolic link: links are not sent; copy the file instead"
        );
        let linked_dir = tempfile::tempdir().unwrap();
        symlink(dir.path(), linked_dir.path().join("d")).unwrap();
        assert!(matches!(pack_dir(linked_dir.path()), Err(PackError::SymbolicLink(p)) if p == "d"));
    }

    #[test]
    fn a_fifo_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status();
        if !status.is_ok_and(|s| s.success()) {
            return; // no mkfifo here; the symlink test covers the same branch shape
        }
        assert!(matches!(pack_dir(dir.path()), Err(PackError::NotRegular(p)) if p == "pipe"));
    }

    #[test]
    fn a_file_over_the_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = fs::File::create(dir.path().join("big.bin")).unwrap();
        big.set_len(MAX_WORKSPACE_BYTES + 1).unwrap(); // sparse: nothing to read
        let err = pack_dir(dir.path()).unwrap_err();
        assert!(
            matches!(&err, PackError::TooLarge { path, .. } if path == "big.bin"),
            "{err}"
        );
        assert!(err.to_string().contains("16 MiB"));
    }

    #[test]
    fn a_root_that_is_not_a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "f", b"");
        assert!(matches!(
            pack_dir(&dir.path().join("f")),
            Err(PackError::NotADirectory(_))
        ));
        assert!(matches!(
            pack_dir(&dir.path().join("missing")),
            Err(PackError::Io { .. })
        ));
    }
}
