// SPDX-License-Identifier: GPL-3.0-or-later
//! The ustar reader: headers, checksums, pax `path` records and GNU long names.

use super::path::{is_root, normalise_path};
use super::tree::Tree;
use super::{
    shown_bytes, EntryKind, WorkspaceEntry, WorkspaceError, MAX_PATH_BYTES, MAX_PAX_BYTES,
    MAX_WORKSPACE_BYTES,
};

/// Size of a header and the unit of data padding.
pub(super) const BLOCK: usize = 512;

/// Checks a whole workspace archive and returns what to create, in archive order.
///
/// The archive is not trusted: every header is checksummed, every data range is checked to
/// lie inside `tar`, and only regular files and directories are accepted.
///
/// # Errors
/// [`WorkspaceError`] for an archive over the caps, damaged or truncated, with a link,
/// device, FIFO or unknown entry type, or with a path that breaks the rules of
/// [`normalise_path`](super::normalise_path), appears twice or lies under a file.
pub fn plan_workspace(tar: &[u8]) -> Result<Vec<WorkspaceEntry>, WorkspaceError> {
    if tar.len() as u64 > MAX_WORKSPACE_BYTES {
        return Err(WorkspaceError::TooLarge {
            bytes: tar.len() as u64,
        });
    }
    let mut plan = Vec::new();
    let mut tree = Tree::default();
    // A name from a pax 'x' header or a GNU 'L' entry, for the next real entry.
    let mut long_name: Option<Vec<u8>> = None;
    let mut pos = 0;
    while pos < tar.len() {
        let header = tar
            .get(pos..pos + BLOCK)
            .ok_or(WorkspaceError::Truncated { offset: pos })?;
        if header.iter().all(|&b| b == 0) {
            // The end marker: whatever follows must be zeros too.
            if let Some(stray) = tar[pos..].iter().position(|&b| b != 0) {
                return Err(WorkspaceError::TrailingData { offset: pos + stray });
            }
            break;
        }
        verify_checksum(header, pos)?;
        let size = octal(&header[124..136]).ok_or(WorkspaceError::BadField {
            offset: pos,
            field: "size",
        })?;
        let start = pos + BLOCK;
        let padded = usize::try_from(size.div_ceil(BLOCK as u64) * BLOCK as u64)
            .map_err(|_| WorkspaceError::Truncated { offset: start })?;
        let next = start.checked_add(padded).filter(|&n| n <= tar.len());
        let next = next.ok_or(WorkspaceError::Truncated { offset: start })?;
        let data = start..start + size as usize;
        let flag = header[156];
        match flag {
            b'x' => {
                if size > MAX_PAX_BYTES as u64 {
                    return Err(WorkspaceError::HeaderTooLarge {
                        offset: pos,
                        bytes: size,
                    });
                }
                if let Some(path) = pax_path(&tar[data], pos)? {
                    long_name = Some(path);
                }
            }
            b'L' => {
                if size > MAX_PATH_BYTES as u64 + 1 {
                    return Err(WorkspaceError::HeaderTooLarge {
                        offset: pos,
                        bytes: size,
                    });
                }
                let name = &tar[data];
                long_name = Some(until_nul(name).to_vec());
            }
            _ => {
                let raw = long_name.take().unwrap_or_else(|| header_name(header));
                if let Some(entry) = entry(flag, &raw, header, data, pos, &mut tree)? {
                    plan.push(entry);
                }
            }
        }
        pos = next;
    }
    if long_name.is_some() {
        return Err(WorkspaceError::DanglingHeader);
    }
    Ok(plan)
}

/// One real (non-extended) entry; `None` for the root directory, which creates nothing.
fn entry(
    flag: u8,
    raw: &[u8],
    header: &[u8],
    data: std::ops::Range<usize>,
    offset: usize,
    tree: &mut Tree,
) -> Result<Option<WorkspaceEntry>, WorkspaceError> {
    let kind = match flag {
        b'0' | 0 => {
            let mode = octal(&header[100..108]).ok_or(WorkspaceError::BadField {
                offset,
                field: "mode",
            })?;
            EntryKind::File {
                data,
                executable: mode & 0o111 != 0,
            }
        }
        b'5' if is_root(raw) => return Ok(None),
        b'5' => EntryKind::Directory,
        b'1' => return Err(WorkspaceError::HardLink(shown_bytes(raw))),
        b'2' => return Err(WorkspaceError::SymbolicLink(shown_bytes(raw))),
        b'3' | b'4' => return Err(WorkspaceError::Device(shown_bytes(raw))),
        b'6' => return Err(WorkspaceError::Fifo(shown_bytes(raw))),
        b'g' => return Err(WorkspaceError::GlobalHeader),
        other => {
            return Err(WorkspaceError::UnknownType {
                path: shown_bytes(raw),
                flag: char::from(other),
            })
        }
    };
    let path = normalise_path(raw)?;
    let size = match &kind {
        EntryKind::File { data, .. } => Some(data.len() as u64),
        EntryKind::Directory => None,
    };
    tree.place(&path, size)?;
    Ok(Some(WorkspaceEntry { path, kind }))
}

fn verify_checksum(header: &[u8], offset: usize) -> Result<(), WorkspaceError> {
    let stored = octal(&header[148..156]).ok_or(WorkspaceError::BadChecksum { offset })?;
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in header.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    // Some old writers summed signed bytes; both forms are in use.
    if stored == unsigned || i64::try_from(stored).is_ok_and(|s| s == signed) {
        Ok(())
    } else {
        Err(WorkspaceError::BadChecksum { offset })
    }
}

/// An octal field: optional leading spaces, digits, then NULs or spaces. All NUL is 0.
/// Base-256 numbers (GNU, for huge values) are refused: nothing here needs them.
pub(super) fn octal(field: &[u8]) -> Option<u64> {
    let text = field
        .iter()
        .position(|&b| b != b' ')
        .map_or(&field[..0], |s| &field[s..]);
    let end = text
        .iter()
        .position(|&b| b == 0 || b == b' ')
        .unwrap_or(text.len());
    if text[end..].iter().any(|&b| b != 0 && b != b' ') {
        return None;
    }
    text[..end].iter().try_fold(0u64, |acc, &b| {
        let digit = b.checked_sub(b'0').filter(|&d| d < 8)?;
        acc.checked_mul(8)?.checked_add(u64::from(digit))
    })
}

fn until_nul(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())]
}

/// The ustar name, with its prefix when the magic says ustar.
fn header_name(header: &[u8]) -> Vec<u8> {
    let name = until_nul(&header[..100]);
    let prefix = until_nul(&header[345..500]);
    if &header[257..262] == b"ustar" && !prefix.is_empty() {
        [prefix, b"/", name].concat()
    } else {
        name.to_vec()
    }
}

/// The `path` record of a pax header, if any; other keys are ignored.
fn pax_path(mut records: &[u8], offset: usize) -> Result<Option<Vec<u8>>, WorkspaceError> {
    let bad = WorkspaceError::BadPax { offset };
    let mut path = None;
    // Writers may pad the data with NULs after the last record.
    while !records.is_empty() && records[0] != 0 {
        let space = records.iter().position(|&b| b == b' ').ok_or(bad.clone())?;
        let len: usize = std::str::from_utf8(&records[..space])
            .ok()
            .and_then(|digits| digits.parse().ok())
            .filter(|&len| len > space + 1 && len <= records.len())
            .ok_or(bad.clone())?;
        let record = &records[space + 1..len];
        let record = record.strip_suffix(b"\n").ok_or(bad.clone())?;
        let equals = record.iter().position(|&b| b == b'=').ok_or(bad.clone())?;
        if &record[..equals] == b"path" {
            path = Some(record[equals + 1..].to_vec());
        }
        records = &records[len..];
    }
    Ok(path)
}
