// SPDX-License-Identifier: GPL-3.0-or-later
//! The workspace a submitter sends: a ustar archive of at most 16 MiB, checked in full and
//! turned into a plan before anything is written, so a refused workspace writes nothing.
//!
//! The parser is our own and minimal on purpose: it accepts regular files and directories
//! (with pax `path` and GNU long names) and refuses every kind of link, device and FIFO, so
//! the writer on the receiving side never has to reason about what a path points to.

mod error;
mod parse;
mod path;
mod tree;
mod writer;

#[cfg(test)]
mod tests;

pub use error::WorkspaceError;
pub use parse::plan_workspace;
pub use path::{normalise_path, PathError};
pub use writer::{with_files, TarWriter};

/// Largest archive accepted, and also the largest sum of file sizes.
pub const MAX_WORKSPACE_BYTES: u64 = 16 << 20;
/// Most files and directories (explicit or implied by a file's parents) in one workspace.
pub const MAX_WORKSPACE_FILES: usize = 4096;
/// Longest path, in bytes, before normalisation.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest component, in bytes: Linux's `NAME_MAX`, so every accepted path can be created
/// and a workspace is never refused half-written.
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Most components in one path.
pub const MAX_DEPTH: usize = 32;
/// Largest pax extended header accepted: a path record needs far less.
pub const MAX_PAX_BYTES: usize = 64 << 10;

/// What one entry of the plan creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory (its parents are implied).
    Directory,
    /// A regular file whose content is `tar[data]`.
    File {
        /// Where the content lies in the archive that was planned.
        data: std::ops::Range<usize>,
        /// Whether any execute bit was set in the archive.
        executable: bool,
    },
}

/// One thing to create, in archive order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceEntry {
    /// Relative, '/'-separated, without '.' components or a trailing '/'.
    pub path: String,
    /// Directory or file.
    pub kind: EntryKind,
}

/// Shows untrusted text in an error message: control characters escaped and at most 64
/// characters, so a hostile name can neither forge lines nor flood a log.
pub(crate) fn shown(text: &str) -> String {
    const LIMIT: usize = 64;
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == LIMIT {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// [`shown`] for bytes that may not be UTF-8.
pub(crate) fn shown_bytes(bytes: &[u8]) -> String {
    shown(&String::from_utf8_lossy(&bytes[..bytes.len().min(256)]))
}
