// SPDX-License-Identifier: GPL-3.0-or-later
//! The in-memory ustar writer a client packs its workspace with.

use super::parse::{plan_workspace, BLOCK};
use super::path::normalise_path;
use super::tree::Tree;
use super::{EntryKind, WorkspaceError, MAX_WORKSPACE_BYTES};

/// Writes a workspace archive in memory, refusing while adding what [`plan_workspace`]
/// would refuse later, so a client learns early (and before reading more files).
///
/// Entries carry mtime 0, uid/gid 0 and mode 0644 (0755 when executable, and for
/// directories), so the same tree always gives the same archive.
///
/// [`plan_workspace`]: super::plan_workspace
#[derive(Debug, Default)]
pub struct TarWriter {
    out: Vec<u8>,
    tree: Tree,
}

impl TarWriter {
    /// An empty archive.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a directory.
    ///
    /// # Errors
    /// [`WorkspaceError`] when the path breaks a rule, is already there or lies under a
    /// file, or when a cap would be exceeded.
    pub fn add_dir(&mut self, path: &str) -> Result<(), WorkspaceError> {
        let path = normalise_path(path.as_bytes())?;
        self.check_room(&path, 0)?;
        self.tree.place(&path, None)?;
        self.entry(&format!("{path}/"), b'5', 0o755, &[]);
        Ok(())
    }

    /// Adds a regular file with its content.
    ///
    /// # Errors
    /// As [`TarWriter::add_dir`], and when the files would add up to more than
    /// [`MAX_WORKSPACE_BYTES`].
    pub fn add_file(&mut self, path: &str, data: &[u8], executable: bool) -> Result<(), WorkspaceError> {
        let path = normalise_path(path.as_bytes())?;
        self.check_room(&path, data.len())?;
        self.tree.place(&path, Some(data.len() as u64))?;
        self.entry(&path, b'0', if executable { 0o755 } else { 0o644 }, data);
        Ok(())
    }

    /// The archive, with its end marker.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.resize(self.out.len() + 2 * BLOCK, 0);
        self.out
    }

    /// Refuses an entry that would push the finished archive over the cap.
    fn check_room(&self, path: &str, size: usize) -> Result<(), WorkspaceError> {
        // Worst case: a pax header and its data block, the header, the data, the end marker.
        let pax = if path.len() + 1 > 100 {
            2 * BLOCK + path.len()
        } else {
            0
        };
        let total = self.out.len() as u64 + (pax + BLOCK + padded(size) + 2 * BLOCK) as u64;
        if total > MAX_WORKSPACE_BYTES {
            return Err(WorkspaceError::TooLarge { bytes: total });
        }
        Ok(())
    }

    fn entry(&mut self, name: &str, flag: u8, mode: u32, data: &[u8]) {
        let (prefix, short) = match split_name(name) {
            Some(split) => split,
            None => {
                // Too long for ustar: a pax header carries the full path.
                let record = pax_record("path", name);
                self.header("", "././@PaxHeader", b'x', 0o644, record.len());
                self.data(record.as_bytes());
                ("", truncate(name, 100))
            }
        };
        self.header(prefix, short, flag, mode, data.len());
        self.data(data);
    }

    fn header(&mut self, prefix: &str, name: &str, flag: u8, mode: u32, size: usize) {
        let mut h = [0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        field(&mut h[100..108], &format!("{mode:07o}"));
        field(&mut h[108..116], "0000000");
        field(&mut h[116..124], "0000000");
        field(&mut h[124..136], &format!("{size:011o}"));
        field(&mut h[136..148], "00000000000");
        h[156] = flag;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        field(&mut h[148..155], &format!("{sum:06o}"));
        self.out.extend_from_slice(&h);
    }

    fn data(&mut self, data: &[u8]) {
        self.out.extend_from_slice(data);
        self.out
            .resize(self.out.len() + padded(data.len()) - data.len(), 0);
    }
}

/// The workspace `tar` with `files` (path, content) added, each in place of an entry of the
/// same path: a training that starts again is sent its workspace with the checkpoint it
/// goes on from (a user may have put an older one beside the script).
///
/// # Errors
/// [`WorkspaceError`] when `tar` is not a valid workspace, or the result breaks a rule or
/// a cap (a checkpoint larger than what a workspace takes).
pub fn with_files(tar: &[u8], files: &[(&str, &[u8])]) -> Result<Vec<u8>, WorkspaceError> {
    let replaced: Vec<String> = files
        .iter()
        .map(|(path, _)| normalise_path(path.as_bytes()))
        .collect::<Result<_, _>>()?;
    let mut writer = TarWriter::new();
    for entry in plan_workspace(tar)? {
        if replaced.contains(&entry.path) {
            continue;
        }
        match entry.kind {
            EntryKind::Directory => writer.add_dir(&entry.path)?,
            EntryKind::File { data, executable } => writer.add_file(&entry.path, &tar[data], executable)?,
        }
    }
    for (path, data) in files {
        writer.add_file(path, data, false)?;
    }
    Ok(writer.finish())
}

fn padded(size: usize) -> usize {
    size.div_ceil(BLOCK) * BLOCK
}

/// Writes `text` followed by a NUL into `slot`.
fn field(slot: &mut [u8], text: &str) {
    slot[..text.len()].copy_from_slice(text.as_bytes());
    slot[text.len()] = 0;
}

/// The ustar (prefix, name) split: name ≤ 100 bytes, prefix ≤ 155, cut at a '/'.
fn split_name(path: &str) -> Option<(&str, &str)> {
    if path.len() <= 100 {
        return Some(("", path));
    }
    // A directory's trailing '/' belongs to the name part, so search before it.
    let body = path.strip_suffix('/').unwrap_or(path);
    body.match_indices('/')
        .map(|(cut, _)| (&path[..cut], &path[cut + 1..]))
        .find(|(prefix, name)| prefix.len() <= 155 && name.len() <= 100 && !name.is_empty())
}

/// A pax record `"<len> <key>=<value>\n"`, whose length counts its own digits.
fn pax_record(key: &str, value: &str) -> String {
    let rest = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    format!("{len} {key}={value}\n")
}

/// At most `max` bytes of `text`, cut on a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
