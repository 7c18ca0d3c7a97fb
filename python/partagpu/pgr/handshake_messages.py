# SPDX-License-Identifier: GPL-3.0-or-later
"""ClientHello and ServerHello: fixed sizes, fixed offsets, nothing optional (PGR/1 §3).

No parser runs before authentication (§8.1): a receiver checks, in the order of §3.1,
exact size, magic, version, suite, flags = 0 and the SPAKE2 side tag, and refuses on the
first failure with :class:`MalformedError` (its ``reason`` names the check).

::

    ClientHello (57)                    ServerHello (41)
      0 magic "PGR1"  4 version  5 suite  6 flags (u16)
      8 room_id (16)                      8 spake2_msg (33) = 'B' ‖ point
     24 spake2_msg (33) = 'A' ‖ point
"""

from __future__ import annotations

import dataclasses

from partagpu.pgr.codes import ROOM_ID_LEN
from partagpu.pgr.errors import MalformedError

MAGIC = b"PGR1"
VERSION = 0x01
SUITE = 0x01  # SPAKE2-Ed25519, HKDF-SHA256, HMAC-SHA256, AES-256-GCM, Ed25519 (§3.2)
FLAGS = 0x0000
SPAKE2_MSG_LEN = 33
CLIENT_HELLO_LEN = 57
SERVER_HELLO_LEN = 41
FINISHED_LEN = 32
SERVER_FLIGHT_LEN = SERVER_HELLO_LEN + FINISHED_LEN  # 73, read in one exact read (§7.1)
SIDE_A = 0x41  # 'A', the client (§1.2)
SIDE_B = 0x42  # 'B', the server
IDENTITY_LEN = 27

_HEADER = MAGIC + bytes([VERSION, SUITE]) + FLAGS.to_bytes(2, "big")


@dataclasses.dataclass(frozen=True)
class ClientHello:
    room_id: bytes
    spake2_msg: bytes

    def encode(self) -> bytes:
        """The 57 wire bytes."""
        return _HEADER + self.room_id + self.spake2_msg


@dataclasses.dataclass(frozen=True)
class ServerHello:
    spake2_msg: bytes

    def encode(self) -> bytes:
        """The 41 wire bytes."""
        return _HEADER + self.spake2_msg


def _check_header(data: bytes) -> None:
    """Magic, version, suite, flags, in that order (§3.1)."""
    if data[0:4] != MAGIC:
        raise MalformedError("bad-magic", "the peer does not speak PGR/1 (wrong magic bytes)")
    if data[4] != VERSION:
        raise MalformedError("bad-version", f"the peer speaks PGR/1 version {data[4]}, not 1")
    if data[5] != SUITE:
        raise MalformedError("bad-suite", f"the peer asked for cipher suite {data[5]}, not 1")
    flags = int.from_bytes(data[6:8], "big")
    if flags != FLAGS:
        raise MalformedError("bad-flags", f"the peer set unknown handshake flags 0x{flags:04x}")


def _check_side(spake2_msg: bytes, side: int) -> bytes:
    if spake2_msg[0] != side:
        raise MalformedError("bad-side", "the peer's key exchange message is for the wrong side")
    return bytes(spake2_msg)


def parse_client_hello(data: bytes) -> ClientHello:
    """Parses exactly 57 bytes; raises :class:`MalformedError` on the first failed check."""
    if len(data) != CLIENT_HELLO_LEN:
        raise MalformedError("wrong-length")
    _check_header(data)
    return ClientHello(room_id=bytes(data[8:24]), spake2_msg=_check_side(data[24:], SIDE_A))


def parse_server_hello(data: bytes) -> ServerHello:
    """Parses exactly 41 bytes; raises :class:`MalformedError` on the first failed check."""
    if len(data) != SERVER_HELLO_LEN:
        raise MalformedError("wrong-length")
    _check_header(data)
    return ServerHello(spake2_msg=_check_side(data[8:], SIDE_B))


def spake2_identities(room_id: bytes, epoch: int) -> tuple[bytes, bytes]:
    """``idA = "PGR1|A|" ‖ room_id ‖ epoch_be32`` and ``idB`` likewise, 27 bytes each (§3.3).

    The epoch is inside both identities, so a code of an old epoch fails the PAKE (§2.5).
    """
    if len(room_id) != ROOM_ID_LEN:
        raise ValueError("a room id is 16 bytes")
    if not 0 <= epoch < 2**32:
        raise ValueError("an epoch is a u32")
    suffix = room_id + epoch.to_bytes(4, "big")
    return b"PGR1|A|" + suffix, b"PGR1|B|" + suffix
