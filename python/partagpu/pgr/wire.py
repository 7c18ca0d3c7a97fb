# SPDX-License-Identifier: GPL-3.0-or-later
"""Bytes on a blocking socket: exact reads and writes under deadlines (PGR/1 §8.1, §9),
and whole records read as §6.1 says (the length checked before the rest is read).

Timeouts become :class:`DeadlineError` and resets or EOF :class:`ConnectionClosedError`,
both naming the ``stage`` that was being read, so callers can tell "no ServerHello" apart.
"""

from __future__ import annotations

import socket
import time

from partagpu.pgr.errors import ConnectionClosedError, DeadlineError
from partagpu.pgr.records import HEADER_LEN, ciphertext_len


class Deadline:
    """An absolute point on the monotonic clock that reads and writes must meet."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def remaining(self, stage: str) -> float:
        left = self._at - time.monotonic()
        if left <= 0:
            raise DeadlineError(stage)
        return left


def recv_exact(sock: socket.socket, size: int, deadline: Deadline, stage: str) -> bytes:
    """Exactly ``size`` bytes before the deadline (§8.1), or an exception naming ``stage``."""
    chunks, missing = [], size
    while missing:
        sock.settimeout(deadline.remaining(stage))
        try:
            chunk = sock.recv(missing)
        except TimeoutError:
            raise DeadlineError(stage) from None
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
            raise ConnectionClosedError(stage) from None
        if not chunk:
            raise ConnectionClosedError(stage)
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def send_all(sock: socket.socket, data: bytes, deadline: Deadline, stage: str) -> None:
    sock.settimeout(deadline.remaining(stage))
    try:
        sock.sendall(data)
    except TimeoutError:
        raise DeadlineError(stage) from None
    except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
        raise ConnectionClosedError(stage) from None


def recv_record(sock: socket.socket, deadline: Deadline, stage: str) -> bytes:
    """One whole record: the header, ``len ≥ 17`` checked, then exactly ``len`` bytes (§6.1)."""
    header = recv_exact(sock, HEADER_LEN, deadline, stage)
    return header + recv_exact(sock, ciphertext_len(header), deadline, stage)


def close_quietly(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass
