// SPDX-License-Identifier: GPL-3.0-or-later
//! The path rules shared by workspace entries and artifact names.

use super::{shown, shown_bytes, MAX_COMPONENT_BYTES, MAX_DEPTH, MAX_PATH_BYTES};

/// Why a path cannot be used inside a job's directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Nothing left once '.' components are removed.
    #[error("a path is empty: every file and directory needs a name")]
    Empty,
    /// Starts with '/'.
    #[error("'{0}' is an absolute path: only paths relative to the workspace are accepted")]
    Absolute(String),
    /// Has a `..` component.
    #[error("'{0}' contains '..': paths may not leave the workspace")]
    Parent(String),
    /// Has `//` or another empty component before the end.
    #[error("'{0}' contains an empty component ('//'): write each directory name once")]
    EmptyComponent(String),
    /// Has a byte below 0x20 or DEL.
    #[error("'{0}' contains a control character: rename the file without it")]
    Control(String),
    /// Is not UTF-8.
    #[error("'{0}' is not valid UTF-8: rename the file with UTF-8 characters")]
    NotUtf8(String),
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("the path '{shown}' is {bytes} bytes long: at most {MAX_PATH_BYTES} are accepted")]
    TooLong {
        /// The start of the path.
        shown: String,
        /// Its length.
        bytes: usize,
    },
    /// A component longer than [`MAX_COMPONENT_BYTES`].
    #[error(
        "'{0}' has a name longer than {MAX_COMPONENT_BYTES} bytes, which no Linux file system can store"
    )]
    ComponentTooLong(String),
    /// More components than [`MAX_DEPTH`].
    #[error("'{path}' is {depth} levels deep: at most {MAX_DEPTH} are accepted")]
    TooDeep {
        /// The path, shortened.
        path: String,
        /// Its number of components.
        depth: usize,
    },
}

/// Checks an untrusted path and returns its normal form: relative, '/'-separated, without
/// '.' components or a trailing '/'.
///
/// # Errors
/// [`PathError`] when the path is empty, absolute, leaves the directory (`..`), has an empty
/// component other than a trailing '/', a control character, is not UTF-8, is longer than
/// [`MAX_PATH_BYTES`], has a component over [`MAX_COMPONENT_BYTES`] or is deeper than
/// [`MAX_DEPTH`].
pub fn normalise_path(raw: &[u8]) -> Result<String, PathError> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong {
            shown: shown_bytes(raw),
            bytes: raw.len(),
        });
    }
    if raw.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(PathError::Control(shown_bytes(raw)));
    }
    let text = std::str::from_utf8(raw).map_err(|_| PathError::NotUtf8(shown_bytes(raw)))?;
    if text.starts_with('/') {
        return Err(PathError::Absolute(shown(text)));
    }
    // One trailing '/' marks a directory in tar; it is not an empty component.
    let body = text.strip_suffix('/').unwrap_or(text);
    let mut parts = Vec::new();
    for part in body.split('/') {
        match part {
            "" if !body.is_empty() => return Err(PathError::EmptyComponent(shown(text))),
            "" | "." => {}
            ".." => return Err(PathError::Parent(shown(text))),
            _ if part.len() > MAX_COMPONENT_BYTES => return Err(PathError::ComponentTooLong(shown(text))),
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(PathError::Empty);
    }
    if parts.len() > MAX_DEPTH {
        return Err(PathError::TooDeep {
            path: shown(text),
            depth: parts.len(),
        });
    }
    Ok(parts.join("/"))
}

/// Whether a raw tar name stands for the workspace root itself (`.` or `./`), which archives
/// made with `tar -C dir .` carry first and which creates nothing.
pub(super) fn is_root(raw: &[u8]) -> bool {
    raw == b"." || raw == b"./"
}
