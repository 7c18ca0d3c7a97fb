# SPDX-License-Identifier: GPL-3.0-or-later
"""The SPAKE2 password: ``pw = Argon2id(normalised code, salt = room_id)`` (PGR/1 §2.6).

Computed once when joining a room. It is password-equivalent: the service may store it
instead of the code (§11), and it is never printed (its ``repr`` is redacted).
"""

from __future__ import annotations

import hmac

from argon2.low_level import Type, hash_secret_raw

from partagpu.pgr.codes import ROOM_ID_LEN, RoomCode

# §2.6: Argon2 version 0x13, m = 19456 KiB, t = 2, p = 1, 32 bytes, no secret, no AD.
ARGON2_VERSION = 0x13
ARGON2_M_KIB = 19_456
ARGON2_T = 2
ARGON2_P = 1
PASSWORD_LEN = 32


def argon2id(password: bytes, salt: bytes, *, m_kib: int = ARGON2_M_KIB, t: int = ARGON2_T,
             p: int = ARGON2_P) -> bytes:
    """Raw Argon2id v0x13 with 32 output bytes; the parameters are open for the vectors."""
    return hash_secret_raw(password, salt, time_cost=t, memory_cost=m_kib, parallelism=p,
                           hash_len=PASSWORD_LEN, type=Type.ID, version=ARGON2_VERSION)


class RoomPassword:
    """The 32-byte SPAKE2 password of a room at one epoch's code."""

    __slots__ = ("_bytes",)

    def __init__(self, raw: bytes) -> None:
        """Wraps a stored password (§11); use :meth:`derive` to make one from a code."""
        if len(raw) != PASSWORD_LEN:
            raise ValueError("a room password is 32 bytes")
        self._bytes = bytes(raw)

    @classmethod
    def derive(cls, code: RoomCode, room_id: bytes) -> RoomPassword:
        """Argon2id over the code's normalised bytes with the room id as salt (§2.6).

        About 19 MiB and a few tens of milliseconds.
        """
        if len(room_id) != ROOM_ID_LEN:
            raise ValueError("a room id is 16 bytes")
        return cls(argon2id(code.normalised_bytes(), room_id))

    def expose_secret(self) -> bytes:
        """The raw bytes, for SPAKE2 and for storing in the 0600 state file (§11)."""
        return self._bytes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RoomPassword):
            return NotImplemented
        return hmac.compare_digest(self._bytes, other._bytes)

    __hash__ = None  # a secret: keep it out of dicts and sets

    def __repr__(self) -> str:
        return "RoomPassword(<redacted>)"


def derive_password(code: RoomCode, room_id: bytes) -> RoomPassword:
    """Shorthand for :meth:`RoomPassword.derive`."""
    return RoomPassword.derive(code, room_id)
