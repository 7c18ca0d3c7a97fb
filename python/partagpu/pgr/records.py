# SPDX-License-Identifier: GPL-3.0-or-later
"""The record layer: ``len:u16 ‖ AES-256-GCM(type ‖ body)``, implicit sequence numbers
(PGR/1 §6).

:func:`seal_record` and :func:`open_record` are the stateless primitives the vectors test;
:class:`Sealer` and :class:`Opener` hold one direction's key, IV and counter and follow
KEY_UPDATE (§6.6). On any error nothing moves: the counter of a failed record stays where it
was (§6.5), and the caller closes the connection without sending anything.
"""

from __future__ import annotations

import enum

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from partagpu.pgr.errors import RecordError
from partagpu.pgr.key_schedule import TrafficSecret
from partagpu.pgr.roles import Direction

TAG_LEN = 16
HEADER_LEN = 2
MIN_CIPHERTEXT_LEN = 1 + TAG_LEN  # a type byte and the tag (§6.1)
MAX_CIPHERTEXT_LEN = 0xFFFF
MAX_PLAINTEXT_LEN = MAX_CIPHERTEXT_LEN - TAG_LEN  # 65519, type byte included (§6.3)
MAX_BODY_LEN = MAX_PLAINTEXT_LEN - 1  # 65518
MAX_CLOSE_REASON_LEN = 256  # UTF-8 bytes (§6.4)

# §6.6: when a sender should update (the 10-minute rule needs the caller's clock) and the
# hard limit of one key: seq 0 … 2^32−1, the last of which must be a KEY_UPDATE.
KEY_UPDATE_RECORDS = 1 << 20
KEY_UPDATE_BYTES = 1 << 30
KEY_UPDATE_INTERVAL_SECS = 600
MAX_RECORDS_PER_KEY = 1 << 32


class RecordType(enum.IntEnum):
    """The record types of §6.4; any other byte is refused."""

    NODE_AUTH = 0x01
    HELLO = 0x02
    REQUEST = 0x10
    RESPONSE = 0x11
    DATA = 0x20
    DATA_END = 0x21
    LOG = 0x30
    ACK = 0x31
    PING = 0x40
    PONG = 0x41
    KEY_UPDATE = 0x50
    CLOSE = 0x7F


_TYPES_BY_BYTE = {t.value: t for t in RecordType}


def ciphertext_len(header: bytes) -> int:
    """The ``len`` of a 2-byte header; refuses ``len < 17`` before anything is read (§6.1)."""
    if len(header) < HEADER_LEN:
        raise RecordError("too-short")
    length = int.from_bytes(header[:HEADER_LEN], "big")
    if length < MIN_CIPHERTEXT_LEN:
        raise RecordError("too-short")
    return length


def record_nonce(iv: bytes, seq: int) -> bytes:
    """``nonce = iv XOR (0x00000000 ‖ seq_be64)`` (§6.2)."""
    return (int.from_bytes(iv, "big") ^ seq).to_bytes(len(iv), "big")


def record_aad(direction: Direction, length: int) -> bytes:
    """``AAD = "PGR1" ‖ dir ‖ len_be16`` (§6.2): the direction stops reflection (§8.2)."""
    return b"PGR1" + bytes([direction]) + length.to_bytes(2, "big")


def _seal_with(aead: AESGCM, iv: bytes, direction: Direction, seq: int, record_type: RecordType,
               body: bytes) -> bytes:
    if len(body) > MAX_BODY_LEN:
        raise RecordError("body-too-long", f"{len(body)} bytes")
    if record_type is RecordType.KEY_UPDATE and body:
        raise RecordError("bad-key-update")
    length = 1 + len(body) + TAG_LEN
    header = length.to_bytes(HEADER_LEN, "big")
    sealed = aead.encrypt(record_nonce(iv, seq), bytes([record_type]) + body,
                          record_aad(direction, length))
    return header + sealed


def _open_with(aead: AESGCM, iv: bytes, direction: Direction, seq: int,
               wire: bytes) -> tuple[RecordType, bytes]:
    # §6.1 and §12.5, in this order: header, len ≥ 17, exact size, AEAD, type, KEY_UPDATE body.
    if len(wire) < HEADER_LEN:
        raise RecordError("too-short")
    length = ciphertext_len(wire[:HEADER_LEN])
    if len(wire) != HEADER_LEN + length:
        raise RecordError("length-mismatch")
    try:
        plaintext = aead.decrypt(record_nonce(iv, seq), bytes(wire[HEADER_LEN:]),
                                 record_aad(direction, length))
    except InvalidTag:
        raise RecordError("decrypt") from None
    record_type = _TYPES_BY_BYTE.get(plaintext[0])
    if record_type is None:
        raise RecordError("unknown-type", f"0x{plaintext[0]:02x}")
    body = plaintext[1:]
    if record_type is RecordType.KEY_UPDATE and body:
        raise RecordError("bad-key-update")
    return record_type, body


def seal_record(key: bytes, iv: bytes, direction: Direction, seq: int, record_type: RecordType,
                body: bytes) -> bytes:
    """Seals one record with explicit key, IV and sequence number (the vectors' primitive)."""
    return _seal_with(AESGCM(key), iv, Direction(direction), seq, RecordType(record_type), body)


def open_record(key: bytes, iv: bytes, direction: Direction, seq: int,
                wire: bytes) -> tuple[RecordType, bytes]:
    """Opens one whole record (``len ‖ ciphertext``); raises :class:`RecordError`."""
    return _open_with(AESGCM(key), iv, Direction(direction), seq, wire)


class _DirectionKeys:
    """One direction at one point of its KEY_UPDATE chain."""

    __slots__ = ("direction", "secret", "aead", "iv", "seq", "updates")

    def __init__(self, direction: Direction, secret: TrafficSecret, seq: int = 0,
                 updates: int = 0) -> None:
        self.direction = direction
        self.secret = secret
        self.aead = AESGCM(secret.key())
        self.iv = secret.iv()
        self.seq = seq
        self.updates = updates

    def update(self) -> None:
        """Next traffic secret, key and IV; the sequence number starts again at 0 (§6.6)."""
        self.secret = self.secret.next()
        self.aead = AESGCM(self.secret.key())
        self.iv = self.secret.iv()
        self.seq = 0
        self.updates += 1

    def at_last_slot(self) -> bool:
        """Whether the record at ``seq`` is the key's last one, which must be a KEY_UPDATE."""
        return self.seq >= MAX_RECORDS_PER_KEY - 1


class _RecordState:
    """What a Sealer and an Opener both show: the current key's counter and history."""

    _keys: _DirectionKeys

    @property
    def seq(self) -> int:
        """Sequence number of the next record (sealed or expected) under the current key."""
        return self._keys.seq

    @property
    def key_updates(self) -> int:
        """KEY_UPDATEs sealed or opened so far."""
        return self._keys.updates

    @property
    def direction(self) -> Direction:
        return self._keys.direction

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(direction={self.direction.name}, seq={self.seq}, "
                f"key_updates={self.key_updates})")


class Sealer(_RecordState):
    """Seals this end's records; the counter advances only when a record was produced.

    ``seq`` is where the counter starts: 0 on every real connection; tests start near the
    2^32 limit of §6.6.
    """

    def __init__(self, direction: Direction, secret: TrafficSecret, *, seq: int = 0) -> None:
        self._keys = _DirectionKeys(Direction(direction), secret, seq)
        self._bytes_since_update = 0

    def seal(self, record_type: RecordType, body: bytes = b"") -> bytes:
        """Seals one record; after a KEY_UPDATE the next record uses the next key (§6.6).

        Raises :class:`RecordError`: ``key-update-required`` when only a KEY_UPDATE may be
        sealed, ``body-too-long``, ``bad-key-update`` (a KEY_UPDATE with a body).
        """
        record_type = RecordType(record_type)
        is_key_update = record_type is RecordType.KEY_UPDATE
        if self._keys.at_last_slot() and not is_key_update:
            raise RecordError("key-update-required")
        keys = self._keys
        wire = _seal_with(keys.aead, keys.iv, keys.direction, keys.seq, record_type, bytes(body))
        if is_key_update:
            keys.update()
            self._bytes_since_update = 0
        else:
            keys.seq += 1
            self._bytes_since_update += 1 + len(body)
        return wire

    def seal_key_update(self) -> bytes:
        """Seals a KEY_UPDATE and switches to the next key."""
        return self.seal(RecordType.KEY_UPDATE)

    def needs_key_update(self) -> bool:
        """2^20 records or 1 GiB under this key: time to update (§6.6; the 10 minutes are the
        caller's, with its clock)."""
        return self._keys.seq >= KEY_UPDATE_RECORDS or self._bytes_since_update >= KEY_UPDATE_BYTES



class Opener(_RecordState):
    """Opens the peer's records. On any error the counter does not move (§6.5)."""

    def __init__(self, direction: Direction, secret: TrafficSecret, *, seq: int = 0) -> None:
        self._keys = _DirectionKeys(Direction(direction), secret, seq)

    def open(self, wire: bytes) -> tuple[RecordType, bytes]:
        """Opens one whole record; a KEY_UPDATE switches keys right after it is opened and is
        returned like any record (§6.6).

        Raises :class:`RecordError`, including ``key-update-required`` when the key's last
        record is anything but a KEY_UPDATE.
        """
        keys = self._keys
        record_type, body = _open_with(keys.aead, keys.iv, keys.direction, keys.seq, wire)
        if record_type is RecordType.KEY_UPDATE:
            keys.update()
        elif keys.at_last_slot():
            raise RecordError("key-update-required")
        else:
            keys.seq += 1
        return record_type, body

