# SPDX-License-Identifier: GPL-3.0-or-later
"""Files going to a job and coming back: :func:`pack` makes the workspace archive with the
rules the service checks (docs/jobs.md, "Workspace"), :func:`receive_artifact` saves an
artifact read from a descriptor after checking its name, size and SHA-256.

The archive is ustar (pax headers only for names ustar cannot hold), sorted and with
owner, group and times normalised, so the same files give the same bytes and hash.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from partagpu.errors import ArtifactError, WorkspaceError, WorkspaceTooLargeError
from partagpu.peers import format_bytes

MAX_WORKSPACE_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 4096
MAX_PATH_BYTES = 1024
MAX_COMPONENT_BYTES = 255
MAX_DEPTH = 32
SKIPPED_DIRECTORIES = frozenset({".git", "__pycache__", ".ipynb_checkpoints", ".venv", "venv"})
_BLOCK = 512


def _check_name(relative: str) -> None:
    """Refuses a name the service would refuse, before anything is read."""
    encoded = relative.encode("utf-8", "surrogateescape")
    try:
        encoded.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkspaceError(f"{relative!r} in the workspace is not a UTF-8 name") from None
    if any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in relative):
        raise WorkspaceError(f"{relative!r} in the workspace has a control character in its name")
    parts = relative.split("/")
    if len(encoded) > MAX_PATH_BYTES or len(parts) > MAX_DEPTH or any(
            len(p.encode()) > MAX_COMPONENT_BYTES for p in parts):
        raise WorkspaceError(f"{relative[:80]!r}… in the workspace has a name too long or too "
                             f"deep (at most {MAX_PATH_BYTES} bytes, {MAX_DEPTH} levels)")


def _walk(root: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """Directories and (file, size) under ``root``, sorted, relative with ``/``."""
    directories: list[str] = []
    files: list[tuple[str, int]] = []
    pending = [""]
    while pending:
        prefix = pending.pop()
        with os.scandir(root / prefix if prefix else root) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                relative = f"{prefix}{entry.name}"
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    raise WorkspaceError(
                        f"{relative} in the workspace is a symbolic link: links are not sent; "
                        "copy the file there or move the link out of the workspace")
                if stat.S_ISDIR(info.st_mode):
                    if entry.name in SKIPPED_DIRECTORIES:
                        continue
                    _check_name(relative)
                    directories.append(relative)
                    pending.append(relative + "/")
                elif stat.S_ISREG(info.st_mode):
                    _check_name(relative)
                    files.append((relative, info.st_size))
                else:
                    raise WorkspaceError(f"{relative} in the workspace is not a regular file "
                                         "or a directory (a FIFO, socket or device)")
    return sorted(directories), sorted(files)


def _too_large(what: str, files: list[tuple[str, int]]) -> WorkspaceTooLargeError:
    largest = sorted(files, key=lambda f: -f[1])[:3]
    shown = ", ".join(f"{name} ({format_bytes(size)})" for name, size in largest)
    return WorkspaceTooLargeError(f"the workspace {what}; the largest files: {shown or 'none'} "
                                  "(move data out of it, or skip it with a smaller workspace)")


def pack(directory: str | os.PathLike[str]) -> tuple[bytes, int, str]:
    """The workspace archive of ``directory``: (tar bytes, number of files, SHA-256 hex).

    Skips the directories named in :data:`SKIPPED_DIRECTORIES`; raises
    :class:`WorkspaceError` for a symbolic link, a special file or a bad name, and
    :class:`WorkspaceTooLargeError` over 16 MiB or 4096 entries (nothing is sent then).
    """
    root = Path(directory)
    if not root.is_dir():
        raise WorkspaceError(f"the workspace {str(root)!r} is not a directory")
    directories, files = _walk(root)
    if len(directories) + len(files) > MAX_ENTRIES:
        raise _too_large(f"has {len(directories) + len(files)} entries, more than {MAX_ENTRIES}",
                         files)
    estimate = _BLOCK * (len(directories) + 2) + sum(
        _BLOCK + -(-size // _BLOCK) * _BLOCK for _, size in files)
    if estimate > MAX_WORKSPACE_BYTES:
        raise _too_large(f"needs {format_bytes(estimate)}, more than "
                         f"{format_bytes(MAX_WORKSPACE_BYTES)}", files)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in directories:
            archive.addfile(_header(name, tarfile.DIRTYPE, 0, 0o755))
        for name, _ in files:
            _add_file(archive, root, name)
    data = buffer.getvalue()
    if len(data) > MAX_WORKSPACE_BYTES:  # files grew while being read
        raise _too_large(f"needs {format_bytes(len(data))}, more than "
                         f"{format_bytes(MAX_WORKSPACE_BYTES)}", files)
    return data, len(files), hashlib.sha256(data).hexdigest()


def _header(name: str, kind: bytes, size: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.mtime = kind, size, mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _add_file(archive: tarfile.TarFile, root: Path, name: str) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(root / name, flags)
    except OSError as error:
        raise WorkspaceError(f"{name} in the workspace cannot be read: "
                             f"{error.strerror or error}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(f"{name} in the workspace changed while it was packed")
        content = file.read(MAX_WORKSPACE_BYTES + 1)
    if len(content) > MAX_WORKSPACE_BYTES:
        raise WorkspaceTooLargeError(f"{name} in the workspace is larger than "
                                     f"{format_bytes(MAX_WORKSPACE_BYTES)}")
    mode = 0o755 if info.st_mode & 0o111 else 0o644
    archive.addfile(_header(name, tarfile.REGTYPE, len(content), mode), io.BytesIO(content))


def artifact_path(output: str | os.PathLike[str], name: str) -> Path:
    """Where artifact ``name`` goes under ``output``; refuses a name that is absolute, has
    an empty, ``.`` or ``..`` component, a backslash or a NUL (it must stay inside)."""
    parts = PurePosixPath(name).parts
    if (not name or name.startswith("/") or "\\" in name or "\0" in name
            or any(p in ("", ".", "..") for p in name.split("/")) or not parts):
        raise ArtifactError(f"the job sent an artifact named {name!r}, which would land "
                            "outside the output directory: refused")
    return Path(output).joinpath(*parts)


def receive_artifact(source: BinaryIO, output: str | os.PathLike[str], name: str,
                     size: int, sha256: str) -> Path:
    """Copies ``source`` to ``output/name`` through a temporary name in the same directory,
    renamed only once ``size`` and ``sha256`` match; returns the final path."""
    target = artifact_path(output, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.partagpu-{os.getpid()}.tmp")
    digest, count = hashlib.sha256(), 0
    try:
        with open(temporary, "wb") as sink:
            while chunk := source.read(1 << 20):
                count += len(chunk)
                if count > size:
                    break
                digest.update(chunk)
                sink.write(chunk)
            sink.flush()
            os.fsync(sink.fileno())
        if count != size:
            found = f"more than {size}" if count > size else str(count)
            raise ArtifactError(f"the artifact {name} has {found} bytes, the job announced "
                                f"{size}: not saved")
        if digest.hexdigest() != sha256.lower():
            raise ArtifactError(f"the artifact {name} does not match its SHA-256 "
                                f"({sha256[:12]}…): not saved")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target
