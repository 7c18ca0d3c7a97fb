# SPDX-License-Identifier: GPL-3.0-or-later
"""The key schedule: transcript hash, Finished MACs, traffic secrets, exporter (PGR/1 §4).

HKDF, HMAC and SHA-256 are HKDF-SHA256, HMAC-SHA256 and SHA-256; ``HKDF-Expand`` takes the
label as ``info`` with no length prefix and no context (§0).
"""

from __future__ import annotations

import hashlib
import hmac

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from partagpu.pgr.roles import Direction

HASH_LEN = 32
KEY_LEN = 32
IV_LEN = 12

TRANSCRIPT_LABEL = b"PGR1 transcript"


class Label:
    """The HKDF-Expand labels of §4.3–§4.6 and §6.6."""

    S_FINISHED = b"pgr1 s finished"
    C_FINISHED = b"pgr1 c finished"
    C2S_TRAFFIC = b"pgr1 c2s traffic"
    S2C_TRAFFIC = b"pgr1 s2c traffic"
    KEY = b"pgr1 key"
    IV = b"pgr1 iv"
    EXPORTER = b"pgr1 exporter"
    KEY_UPDATE = b"pgr1 key update"


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    """``HKDF-Extract(salt, IKM)`` = ``HMAC(salt, IKM)`` (RFC 5869 §2.2)."""
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand(prk: bytes, label: bytes, length: int) -> bytes:
    """``HKDF-Expand(prk, label, length)`` with the label as ``info`` (§0)."""
    return HKDFExpand(algorithm=hashes.SHA256(), length=length, info=label).derive(prk)


def transcript_hash(client_hello: bytes, server_hello: bytes) -> bytes:
    """``TH = SHA-256("PGR1 transcript" ‖ ClientHello ‖ ServerHello)``, bytes as sent (§4.1).

    Every hello byte (version, suite, flags) is inside TH, so a changed byte gives the two
    ends different keys and the Finished check fails: that is the downgrade protection.
    """
    return hashlib.sha256(TRANSCRIPT_LABEL + client_hello + server_hello).digest()


class TrafficSecret:
    """One direction's traffic secret; its record key and IV derive from it (§4.4, §4.5)."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes) -> None:
        if len(secret) != HASH_LEN:
            raise ValueError("a traffic secret is 32 bytes")
        self._secret = bytes(secret)

    def expose_secret(self) -> bytes:
        """The raw secret, for test vectors."""
        return self._secret

    def key(self) -> bytes:
        """``key = HKDF-Expand(ts, "pgr1 key", 32)`` (§4.5)."""
        return hkdf_expand(self._secret, Label.KEY, KEY_LEN)

    def iv(self) -> bytes:
        """``iv = HKDF-Expand(ts, "pgr1 iv", 12)`` (§4.5)."""
        return hkdf_expand(self._secret, Label.IV, IV_LEN)

    def next(self) -> TrafficSecret:
        """The secret after one KEY_UPDATE: ``HKDF-Expand(ts, "pgr1 key update", 32)`` (§6.6)."""
        return TrafficSecret(hkdf_expand(self._secret, Label.KEY_UPDATE, HASH_LEN))

    def __repr__(self) -> str:
        return "TrafficSecret(<redacted>)"


class KeySchedule:
    """TH and ``PRK = HKDF-Extract(salt = TH, IKM = K)`` of one connection (§4.2)."""

    __slots__ = ("transcript_hash", "_prk")

    def __init__(self, k: bytes, transcript_hash: bytes) -> None:
        self.transcript_hash = transcript_hash
        self._prk = hkdf_extract(transcript_hash, k)

    def expose_prk(self) -> bytes:
        """The PRK, for test vectors only."""
        return self._prk

    def server_finished(self) -> bytes:
        """``SF = HMAC(HKDF-Expand(PRK, "pgr1 s finished", 32), TH)`` (§4.3)."""
        key = hkdf_expand(self._prk, Label.S_FINISHED, HASH_LEN)
        return hmac.new(key, self.transcript_hash, hashlib.sha256).digest()

    def client_finished(self, server_finished: bytes) -> bytes:
        """``CF = HMAC(HKDF-Expand(PRK, "pgr1 c finished", 32), TH ‖ SF)`` (§4.3)."""
        key = hkdf_expand(self._prk, Label.C_FINISHED, HASH_LEN)
        return hmac.new(key, self.transcript_hash + server_finished, hashlib.sha256).digest()

    def verify_server_finished(self, received: bytes) -> bool:
        """Whether a received SF is right, compared in constant time (§4.3)."""
        return hmac.compare_digest(self.server_finished(), received)

    def verify_client_finished(self, server_finished: bytes, received: bytes) -> bool:
        """Whether a received CF is right, given the SF sent; constant time (§4.3)."""
        return hmac.compare_digest(self.client_finished(server_finished), received)

    def traffic_secret(self, direction: Direction) -> TrafficSecret:
        """The initial traffic secret of one direction (§4.4)."""
        label = Label.C2S_TRAFFIC if direction is Direction.CLIENT_TO_SERVER else Label.S2C_TRAFFIC
        return TrafficSecret(hkdf_expand(self._prk, label, HASH_LEN))

    def exporter(self) -> bytes:
        """``exporter = HKDF-Expand(PRK, "pgr1 exporter", 32)``: channel binding (§4.6)."""
        return hkdf_expand(self._prk, Label.EXPORTER, HASH_LEN)

    def __repr__(self) -> str:
        return f"KeySchedule(transcript_hash={self.transcript_hash.hex()})"
