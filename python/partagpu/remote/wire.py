# SPDX-License-Identifier: GPL-3.0-or-later
"""The records of a PGR/1 job connection (PGR/1 §7.6), as the submitter sends and reads
them: JSON REQUESTs and RESPONSEs, bulk DATA ended by DATA_END (``sha256 (32) ‖ total_len
u64``), and LOG (``offset u64 ‖ bytes``). Mirrors ``partagpu_core::job::wire`` and the
submitting side of ``partagpud`` (``jobs/remote.rs``).

Whatever the member sends is checked; anything out of place raises :class:`ServiceError`
(the connection is then closed by the caller, §6.5).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import struct
from collections.abc import Iterable
from typing import Any

from partagpu.errors import ArtifactError, ServiceError
from partagpu.pgr.control_hello import encode_hello
from partagpu.pgr.errors import ConnectionClosedError
from partagpu.pgr.records import MAX_BODY_LEN, RecordType
from partagpu.pgr.session import Session

CHUNK = 60_000  # payload bytes per DATA or LOG record (§7.6)
DATA_END_LEN = 40
ANSWER_TIMEOUT_S = 60.0  # the longest wait for one record the member owes right away


@dataclasses.dataclass(frozen=True)
class Reply:
    """A RESPONSE: ``ok``, ``error`` (a sentence), the job's ``record``, ``done``."""

    ok: bool
    error: str
    record: dict[str, Any] | None
    done: bool


def send_request(session: Session, request: dict[str, Any]) -> None:
    body = encode_hello(request)
    if len(body) > MAX_BODY_LEN:
        raise ValueError(f"the request is {len(body)} bytes, more than one record holds")
    session.send(RecordType.REQUEST, body)


def data_end(data: bytes) -> bytes:
    """The DATA_END body for ``data``: its SHA-256 then its length, big-endian."""
    return _data_end(hashlib.sha256(data).digest(), len(data))


def _data_end(sha256: bytes, length: int) -> bytes:
    return sha256 + struct.pack("!Q", length)


def send_stream(session: Session, data: bytes) -> None:
    """``data`` as DATA records of at most :data:`CHUNK` bytes, then DATA_END."""
    send_chunks(session, (data[start:start + CHUNK] for start in range(0, len(data), CHUNK)))


def send_chunks(session: Session, chunks: Iterable[bytes]) -> None:
    """Each of ``chunks`` (at most :data:`CHUNK` bytes) as a DATA record, then the DATA_END
    of what was sent: a file read as it goes out is never held whole."""
    digest, total = hashlib.sha256(), 0
    for chunk in chunks:
        session.send(RecordType.DATA, chunk)
        digest.update(chunk)
        total += len(chunk)
    session.send(RecordType.DATA_END, _data_end(digest.digest(), total))


def parse_log(body: bytes) -> tuple[int, bytes]:
    if len(body) < 8:
        raise ServiceError("the member sent a LOG record without its offset")
    (offset,) = struct.unpack_from("!Q", body)
    return offset, body[8:]


def parse_reply(body: bytes) -> Reply:
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ServiceError("the member sent an answer that is not JSON") from None
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        raise ServiceError("the member sent an answer without its ok field")
    record, error, done = value.get("record"), value.get("error"), value.get("done", False)
    if (record is not None and not isinstance(record, dict)) or not isinstance(done, bool):
        raise ServiceError("the member sent an answer whose record or done is not valid")
    return Reply(value["ok"], error if isinstance(error, str) else "", record, done)


def receive_reply(session: Session, timeout: float = ANSWER_TIMEOUT_S) -> Reply:
    """The next RESPONSE (a PING is answered, a KEY_UPDATE needs nothing; a CLOSE raises
    with its reason, anything else is out of place)."""
    while True:
        record_type, body = session.recv(timeout)
        if record_type is RecordType.RESPONSE:
            return parse_reply(body)
        if record_type is RecordType.CLOSE:
            raise ConnectionClosedError("answer", body.decode("utf-8", "replace"))
        if not keep_alive(session, record_type):
            raise ServiceError(f"the member sent {record_type.name} where an answer was due")


def keep_alive(session: Session, record_type: RecordType) -> bool:
    """Handles the records that may come at any point (§6.6, §6.7): True if it was one."""
    if record_type is RecordType.PING:
        session.send(RecordType.PONG)
    return record_type in (RecordType.PING, RecordType.PONG, RecordType.KEY_UPDATE)


class ArtifactStream(io.RawIOBase):
    """An artifact's DATA records as a file to read, for
    :func:`partagpu.workspace.receive_artifact`: no more than ``size`` bytes, and EOF only
    at a DATA_END whose SHA-256 and length are those of the bytes that came."""

    def __init__(self, session: Session, name: str, size: int) -> None:
        super().__init__()
        self._session, self._name, self._size = session, name, size
        self._digest = hashlib.sha256()
        self._count = 0
        self._pending = b""
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._pending and not self._ended:
            self._next_record()
        taken, self._pending = self._pending[:len(view)], self._pending[len(view):]
        view[:len(taken)] = taken
        return len(taken)

    def _next_record(self) -> None:
        record_type, body = self._session.recv(ANSWER_TIMEOUT_S)
        if record_type is RecordType.DATA and body:
            self._count += len(body)
            if self._count > self._size:
                raise ArtifactError(f"the artifact {self._name} is longer than announced "
                                    f"({self._size} bytes): not saved")
            self._digest.update(body)
            self._pending = body
        elif record_type is RecordType.DATA_END and len(body) == DATA_END_LEN:
            sha256, (total,) = body[:32], struct.unpack("!Q", body[32:])
            if total != self._count or sha256 != self._digest.digest():
                raise ArtifactError(f"the artifact {self._name} arrived damaged (its length "
                                    "or SHA-256 differs from what was sent): not saved")
            self._ended = True
        elif record_type is RecordType.RESPONSE:
            reply = parse_reply(body)
            raise ArtifactError(f"the member could not send the artifact {self._name}: "
                                f"{reply.error or 'no reason given'}")
        elif record_type is RecordType.CLOSE:
            raise ConnectionClosedError("artifact", body.decode("utf-8", "replace"))
        elif not keep_alive(self._session, record_type):
            raise ServiceError(f"the member sent {record_type.name} inside the artifact "
                               f"{self._name}")
