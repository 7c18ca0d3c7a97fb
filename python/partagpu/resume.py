# SPDX-License-Identifier: GPL-3.0-or-later
"""``distribute(..., resume_from=...)``: a training that goes on from a checkpoint, which
travels beside the workspace instead of inside it (so it may be far larger than the 16 MiB a
workspace carries). The file is described in the spec's ``resume_checkpoint`` (its name,
size and SHA-256) and handed over as an open file to the local service
(``Jobs1.DistributeResuming``), or streamed after the workspace to a member (PGR/1 §7.6);
every machine finds it at the top of its workspace under its name, where
:func:`partagpu.checkpoint.load` reads it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partagpu.errors import WorkspaceError

MAX_CHECKPOINT_BYTES = 2 << 30  # as the service (src/core/src/job/checkpoint.rs)
MAX_NAME_BYTES = 200
# partagpu.checkpoint's index (that module needs torch, this one must not).
INDEX_NAME = "partagpu-checkpoint.json"
_READ = 1 << 20


@dataclass(frozen=True)
class ResumeFrom:
    """A checkpoint to go on from: its file and what the spec says of it."""

    path: Path
    name: str
    size: int
    sha256: str

    @property
    def spec_field(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}

    def chunks(self, size: int) -> Iterator[bytes]:
        """Its bytes, ``size`` at a time (the service checks them against the SHA-256)."""
        with open(self.path, "rb") as file:
            while chunk := file.read(size):
                yield chunk


def _check_name(name: str) -> None:
    plain = (name and len(name.encode()) <= MAX_NAME_BYTES and not name.startswith(".")
             and name != INDEX_NAME and not any(c in "/\\*?[]" or not c.isprintable() for c in name))
    if not plain:
        raise WorkspaceError(f"{name!r} cannot be the name of a checkpoint to go on from: use a plain "
                             "file name, not hidden, without wildcards or control characters")


def resume_from(path: str | os.PathLike[str]) -> ResumeFrom:
    """Checks and hashes the checkpoint at ``path`` (read once, ~1 s per GiB)."""
    file = Path(path)
    _check_name(file.name)
    if not file.is_file():
        raise WorkspaceError(f"{file} is not a file: resume_from names the checkpoint to go on from")
    digest, size = hashlib.sha256(), 0
    with open(file, "rb") as opened:
        while chunk := opened.read(_READ):
            size += len(chunk)
            digest.update(chunk)
            if size > MAX_CHECKPOINT_BYTES:
                raise WorkspaceError(f"{file} is larger than a checkpoint to go on from may be (2 GiB)")
    return ResumeFrom(file, file.name, size, digest.hexdigest())
