# SPDX-License-Identifier: GPL-3.0-or-later
"""The notebook's own node key (PGR/1 §5), kept across runs.

A member names every job after the node id that submitted it and lets only that node
follow, cancel or fetch it (§7.6), so the same notebook must show the same key each time:
its 32-byte Ed25519 seed lives in ``$XDG_CONFIG_HOME/partagpu/node-key`` (default
``~/.config/partagpu/node-key``) as 64 hex digits. The file is created with ``O_EXCL`` and
mode 0600 in a 0700 directory, and refused if others may read it or if it is not a plain
file: whoever holds it (and the room code) can act as this notebook.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from partagpu.errors import PartaGPUError
from partagpu.pgr.node_auth import NodeIdentity

KEY_FILE_NAME = "node-key"
SEED_BYTES = 32


class NodeKeyError(PartaGPUError):
    """The node key file cannot be used: unreadable, damaged, or readable by others."""


def default_key_path() -> Path:
    """``$XDG_CONFIG_HOME/partagpu/node-key``, or ``~/.config/partagpu/node-key``."""
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    # The XDG spec ignores a relative value.
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "partagpu" / KEY_FILE_NAME


def _read_seed(path: Path) -> bytes | None:
    """The seed in ``path``; None while the file is still empty (another process is
    writing it right now)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise NodeKeyError(f"the node key {str(path)!r} cannot be read: "
                           f"{error.strerror or error}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NodeKeyError(f"the node key {str(path)!r} is not a regular file")
        if info.st_mode & 0o077:
            raise NodeKeyError(f"the node key {str(path)!r} may be read by other users "
                               f"(mode {stat.S_IMODE(info.st_mode):04o}): run chmod 600 on it")
        text = file.read(2 * SEED_BYTES + 2)
    if not text:
        return None
    try:
        seed = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        seed = b""
    if len(seed) != SEED_BYTES:
        raise NodeKeyError(f"the node key {str(path)!r} is damaged (not 64 hex digits): move it "
                           "away to make a new one (the members will see a new machine)")
    return seed


def _create(path: Path) -> bool:
    """Writes a new seed with O_EXCL; False if the file already exists."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return False
    except OSError as error:
        raise NodeKeyError(f"the node key {str(path)!r} cannot be created: "
                           f"{error.strerror or error}") from None
    seed = NodeIdentity.generate().expose_seed()
    try:
        os.fchmod(fd, 0o600)  # whatever the umask did
        os.write(fd, (seed.hex() + "\n").encode("ascii"))
        os.fsync(fd)
    except OSError as error:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise NodeKeyError(f"the node key {str(path)!r} cannot be written: "
                           f"{error.strerror or error}") from None
    os.close(fd)
    return True


def load_identity(path: str | os.PathLike[str] | None = None) -> NodeIdentity:
    """This notebook's identity from ``path`` (default :func:`default_key_path`), made and
    saved on first use. Two processes starting at once end up with the same key."""
    where = Path(path) if path is not None else default_key_path()
    for _ in range(40):
        _create(where)  # does nothing when the file exists
        seed = _read_seed(where)
        if seed is not None:
            return NodeIdentity.from_seed(seed)
        time.sleep(0.05)  # created an instant ago by another process, not written yet
    raise NodeKeyError(f"the node key {str(where)!r} stays empty: move it away to make a new one")
