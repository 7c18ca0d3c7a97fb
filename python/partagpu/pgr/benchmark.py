# SPDX-License-Identifier: GPL-3.0-or-later
"""Timings of the Python PGR/1 (``python -m partagpu.pgr bench``).

Numbers to compare runs and implementations, never a test: handshakes are whole connections
(SPAKE2, key schedule, NODE_AUTH both ways, HELLOs) with both ends in this process over a
``socket.socketpair``; records are 16 KiB DATA records sealed and opened on one core, next
to a plain 16 KiB copy measured in the same run as the baseline.
"""

from __future__ import annotations

import os
import socket
import statistics
import threading
import time
from collections.abc import Callable

from partagpu.pgr.codes import generate_room_id
from partagpu.pgr.control_hello import control_server_hello
from partagpu.pgr.key_schedule import TrafficSecret
from partagpu.pgr.node_auth import NodeIdentity
from partagpu.pgr.password import RoomPassword, argon2id
from partagpu.pgr.records import Opener, RecordType, Sealer
from partagpu.pgr.roles import Direction
from partagpu.pgr.session import client_session, serve_one

RECORD_BODY_LEN = 16 * 1024
MIB = 1024 * 1024


def _repeat(seconds: float, minimum: int, once: Callable[[], None]) -> list[float]:
    """Runs ``once`` until ``seconds`` passed and at least ``minimum`` times; wall times."""
    times: list[float] = []
    stop = time.perf_counter() + seconds
    while len(times) < minimum or time.perf_counter() < stop:
        started = time.perf_counter()
        once()
        times.append(time.perf_counter() - started)
    return times


def _one_handshake(password: RoomPassword, room_id: bytes, client: NodeIdentity,
                   server: NodeIdentity) -> None:
    client_sock, server_sock = socket.socketpair()
    served = threading.Thread(target=serve_one, args=(server_sock, password, room_id, 0, server,
                                                      control_server_hello(None, 0)))
    served.start()
    session = client_session(client_sock, password, room_id, 0, client)
    session.close("bench")
    served.join()


def time_handshakes(seconds: float) -> tuple[float, float]:
    """Median wall time and process CPU time per handshake, in milliseconds."""
    password, room_id = RoomPassword(os.urandom(32)), generate_room_id()
    client, server = NodeIdentity.generate(), NodeIdentity.generate()
    cpu_started = time.process_time()
    times = _repeat(seconds, 5, lambda: _one_handshake(password, room_id, client, server))
    cpu = (time.process_time() - cpu_started) / len(times)
    return statistics.median(times) * 1000, cpu * 1000


def time_argon2id(seconds: float) -> float:
    """Median time of one §2.6 derivation, in milliseconds."""
    room_id = generate_room_id()
    return statistics.median(_repeat(seconds, 3, lambda: argon2id(b"abandon-ability-able-about", room_id))) * 1000


def record_throughput(seconds: float) -> float:
    """MiB/s of 16 KiB bodies sealed then opened, one direction, one thread."""
    secret = TrafficSecret(os.urandom(32))
    sealer = Sealer(Direction.CLIENT_TO_SERVER, secret)
    opener = Opener(Direction.CLIENT_TO_SERVER, secret)
    body = os.urandom(RECORD_BODY_LEN)

    def round_trip() -> None:
        for _ in range(64):
            opener.open(sealer.seal(RecordType.DATA, body))

    times = _repeat(seconds, 3, round_trip)
    return 64 * len(times) * RECORD_BODY_LEN / MIB / sum(times)


def copy_throughput(seconds: float) -> float:
    """MiB/s of plain 16 KiB copies into a buffer (a memcpy), the same loop shape."""
    source = os.urandom(RECORD_BODY_LEN)
    target = bytearray(RECORD_BODY_LEN)

    def copies() -> None:
        for _ in range(64):
            target[:] = source

    times = _repeat(seconds, 3, copies)
    return 64 * len(times) * RECORD_BODY_LEN / MIB / sum(times)


def run_benchmark(seconds: float = 2.0) -> dict:
    """Every measurement, ``seconds`` each, as the JSON object the CLI prints."""
    handshake_ms, handshake_cpu_ms = time_handshakes(seconds)
    argon2id_ms = time_argon2id(seconds)
    record_mib_s = record_throughput(seconds)
    memcpy_mib_s = copy_throughput(seconds)
    return {
        "handshake_ms": round(handshake_ms, 3),
        "handshake_cpu_ms": round(handshake_cpu_ms, 3),
        "argon2id_ms": round(argon2id_ms, 3),
        "record_mib_s": round(record_mib_s, 1),
        "memcpy_mib_s": round(memcpy_mib_s, 1),
        "record_vs_memcpy": round(record_mib_s / memcpy_mib_s, 4),
    }
