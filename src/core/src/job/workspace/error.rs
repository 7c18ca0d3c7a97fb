// SPDX-License-Identifier: GPL-3.0-or-later
//! Why a workspace archive was refused.

use super::{PathError, MAX_PATH_BYTES, MAX_PAX_BYTES, MAX_WORKSPACE_BYTES, MAX_WORKSPACE_FILES};

/// Why a workspace was refused; nothing of it has been written when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The archive itself is over [`MAX_WORKSPACE_BYTES`].
    #[error("the workspace archive is {bytes} bytes: at most {MAX_WORKSPACE_BYTES} (16 MiB) are accepted")]
    TooLarge {
        /// Its length, or the length it would reach.
        bytes: u64,
    },
    /// The files add up to more than [`MAX_WORKSPACE_BYTES`].
    #[error("the files of the workspace add up to {bytes} bytes: at most {MAX_WORKSPACE_BYTES} (16 MiB) are accepted")]
    ContentTooLarge {
        /// The sum reached when the cap was passed.
        bytes: u64,
    },
    /// More than [`MAX_WORKSPACE_FILES`] files and directories.
    #[error("the workspace has more than {MAX_WORKSPACE_FILES} files and directories: at most {MAX_WORKSPACE_FILES} are accepted")]
    TooManyFiles,
    /// A header or its data does not fit in the archive.
    #[error("the workspace archive is cut short at byte {offset}: it is not a complete tar file")]
    Truncated {
        /// Where the missing part starts.
        offset: usize,
    },
    /// A header's checksum does not match.
    #[error("the tar header at byte {offset} has a wrong checksum: the archive is damaged")]
    BadChecksum {
        /// The header's offset.
        offset: usize,
    },
    /// A numeric field is not octal.
    #[error("the tar header at byte {offset} has an unreadable {field} field: the archive is damaged")]
    BadField {
        /// The header's offset.
        offset: usize,
        /// Which field.
        field: &'static str,
    },
    /// Non-zero bytes after the end marker.
    #[error("the workspace archive has data after its end marker at byte {offset}: it is not accepted")]
    TrailingData {
        /// Where the stray data starts.
        offset: usize,
    },
    /// A pax extended header is malformed.
    #[error("the pax header at byte {offset} is malformed: the archive is damaged")]
    BadPax {
        /// The header's offset.
        offset: usize,
    },
    /// A pax header or GNU long name is larger than it may be.
    #[error("the extended header at byte {offset} is {bytes} bytes: at most {MAX_PAX_BYTES} (pax) or {MAX_PATH_BYTES} (long name) are accepted")]
    HeaderTooLarge {
        /// The header's offset.
        offset: usize,
        /// Its data size.
        bytes: u64,
    },
    /// A pax header or long name with no entry after it.
    #[error("the workspace archive ends right after an extended header: the archive is damaged")]
    DanglingHeader,
    /// A hard link ('1').
    #[error("'{0}' is a hard link: links are not accepted in a workspace; copy the file instead")]
    HardLink(String),
    /// A symbolic link ('2').
    #[error("'{0}' is a symbolic link: links are not accepted in a workspace; copy the file instead")]
    SymbolicLink(String),
    /// A character or block device ('3', '4').
    #[error("'{0}' is a device file: only regular files and directories are accepted")]
    Device(String),
    /// A FIFO ('6').
    #[error("'{0}' is a named pipe (FIFO): only regular files and directories are accepted")]
    Fifo(String),
    /// A pax global header ('g').
    #[error("the workspace archive has a pax global header: it is not accepted; create it with plain ustar")]
    GlobalHeader,
    /// Any other type flag.
    #[error(
        "'{path}' has the unknown tar entry type {flag:?}: only regular files and directories are accepted"
    )]
    UnknownType {
        /// The entry's name.
        path: String,
        /// Its type flag.
        flag: char,
    },
    /// A path breaks a rule.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The same path twice.
    #[error("'{0}' appears twice in the workspace: each path may appear once")]
    Duplicate(String),
    /// An entry under a path that is a file.
    #[error("'{path}' is placed under '{file}', which is a file: a file cannot contain entries")]
    UnderFile {
        /// The entry.
        path: String,
        /// The file that is its parent.
        file: String,
    },
    /// A file where earlier entries implied a directory.
    #[error("'{0}' is a file, but earlier entries are placed under it as a directory")]
    FileOverDirectory(String),
}
