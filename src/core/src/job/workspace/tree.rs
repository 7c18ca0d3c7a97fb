// SPDX-License-Identifier: GPL-3.0-or-later
//! The set of paths placed so far, shared by the parser and the writer so that both refuse
//! the same workspaces (a client learns while packing what the service would refuse).

use std::collections::HashMap;

use super::{shown, WorkspaceError, MAX_WORKSPACE_BYTES, MAX_WORKSPACE_FILES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File,
    /// A directory; `explicit` when an entry named it, not only a file's parent.
    Dir {
        explicit: bool,
    },
}

/// Paths placed so far and the running caps.
#[derive(Debug, Default)]
pub(super) struct Tree {
    nodes: HashMap<String, Node>,
    content_bytes: u64,
}

impl Tree {
    /// Places a normalised path, checking duplicates, entries under files and the caps.
    pub(super) fn place(&mut self, path: &str, file_size: Option<u64>) -> Result<(), WorkspaceError> {
        // Parents first: each is an implied directory unless something else is there.
        for (cut, _) in path.match_indices('/') {
            let parent = &path[..cut];
            match self.nodes.get(parent) {
                Some(Node::File) => {
                    return Err(WorkspaceError::UnderFile {
                        path: shown(path),
                        file: shown(parent),
                    })
                }
                Some(Node::Dir { .. }) => {}
                None => self.insert(parent, Node::Dir { explicit: false })?,
            }
        }
        match (self.nodes.get(path).copied(), file_size) {
            (None, None) => self.insert(path, Node::Dir { explicit: true })?,
            (None, Some(_)) => self.insert(path, Node::File)?,
            (Some(Node::Dir { explicit: false }), None) => {
                self.nodes.insert(path.to_owned(), Node::Dir { explicit: true });
            }
            (Some(Node::Dir { explicit: false }), Some(_)) => {
                return Err(WorkspaceError::FileOverDirectory(shown(path)))
            }
            (Some(_), _) => return Err(WorkspaceError::Duplicate(shown(path))),
        }
        if let Some(size) = file_size {
            self.content_bytes = self.content_bytes.saturating_add(size);
            if self.content_bytes > MAX_WORKSPACE_BYTES {
                return Err(WorkspaceError::ContentTooLarge {
                    bytes: self.content_bytes,
                });
            }
        }
        Ok(())
    }

    fn insert(&mut self, path: &str, node: Node) -> Result<(), WorkspaceError> {
        if self.nodes.len() >= MAX_WORKSPACE_FILES {
            return Err(WorkspaceError::TooManyFiles);
        }
        self.nodes.insert(path.to_owned(), node);
        Ok(())
    }
}
