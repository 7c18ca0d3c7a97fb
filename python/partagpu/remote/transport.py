# SPDX-License-Identifier: GPL-3.0-or-later
"""The :class:`~partagpu.jobs.JobTransport` of a job coordinated by a member over PGR/1
(§7.6): the record and output come from a :class:`~partagpu.remote.follower.Follower`,
a cancel goes through it, and the artifacts come over a job connection of their own once
the job is done.

Each artifact is checked as partagpud checks them (``jobs/remote.rs``): a plain relative
name, 256 MiB at most in all (2 GiB more for the checkpoint a failed training leaves), no DATA past the size the record announced, a DATA_END equal
to what arrived and to the record's size and SHA-256; only then is the file synced and
renamed into place (:func:`partagpu.workspace.receive_artifact`), so a damaged one leaves
nothing behind.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from partagpu.errors import ArtifactError
from partagpu.jobs import SaveArtifact
from partagpu.pgr.session import Session
from partagpu.remote.choose import Member
from partagpu.remote.failures import member_errors
from partagpu.remote.follower import Follower
from partagpu.remote.wire import ArtifactStream, send_request
from partagpu.workspace import artifact_path, receive_artifact

if TYPE_CHECKING:
    from partagpu.remote.room import Room

MAX_ARTIFACT_TOTAL = 256 << 20
# A training that did not succeed may bring back its last checkpoint, up to this size
# (MAX_CHECKPOINT_BYTES of src/core/src/job/checkpoint.rs).
MAX_CHECKPOINT_BYTES = 2 << 30


class MemberTransport:
    """Job ``handle`` on ``member`` (the machine that answered, node id known), followed
    from now on, on ``session`` when one is open already."""

    def __init__(self, room: Room, member: Member, handle: str, record: dict[str, Any],
                 session: Session | None = None) -> None:
        self._room, self._member = room, member
        self._follower = Follower(handle, record, self._dial, str(member))
        self._follower.start(session)

    def _dial(self) -> Session:
        return self._room.dial(self._member)[0]

    def show(self, handle: str) -> dict[str, Any]:
        return self._follower.record()

    def read_log(self, handle: str, offset: int, limit: int) -> tuple[bytes, int, bool]:
        return self._follower.read(offset, limit)

    def cancel(self, handle: str) -> None:
        self._follower.cancel()

    @contextlib.contextmanager
    def artifacts(self, handle: str) -> Iterator[SaveArtifact]:
        session = self._dial()
        total, finished = 0, False

        def save(name: str, size: int, sha256: str, output: str | Path) -> Path:
            nonlocal total
            artifact_path(output, name)  # refuses a name that would leave output, before asking
            total += size
            if size < 0 or total > MAX_ARTIFACT_TOTAL + MAX_CHECKPOINT_BYTES:
                raise ArtifactError("the job's artifacts add up to more than 2.25 GiB: not fetched")
            with member_errors(self._member):
                send_request(session, {"op": "artifact", "job": handle, "name": name})
                stream = cast(BinaryIO, ArtifactStream(session, name, size))
                return receive_artifact(stream, output, name, size, sha256)

        try:
            yield save
            finished = True
        finally:
            session.close("done" if finished else "")

    def close(self) -> None:
        self._follower.stop()

    def __repr__(self) -> str:
        return f"MemberTransport({self._member})"
