# SPDX-License-Identifier: GPL-3.0-or-later
"""Node identity: a machine's Ed25519 key, its NODE_AUTH record, node ids, fingerprints and
pinning (PGR/1 §5).

The first record each way carries ``node_pub ‖ Ed25519-Sign(node_priv, "PGR1 node-auth" ‖
role ‖ TH)``. The role byte is the signer's, so a signature reflected to its sender fails;
TH binds it to this connection, so it cannot be replayed on another (§5.2).
"""

from __future__ import annotations

import dataclasses
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from partagpu.pgr.codes import word_list
from partagpu.pgr.ed25519_checks import strict_key_ok, strict_signature_shape_ok
from partagpu.pgr.errors import NodeAuthError
from partagpu.pgr.roles import Role

NODE_AUTH_CONTEXT = b"PGR1 node-auth"
PUBLIC_KEY_LEN = 32
SIGNATURE_LEN = 64
NODE_AUTH_LEN = PUBLIC_KEY_LEN + SIGNATURE_LEN  # §5.1: 96 bytes
NODE_ID_LEN = 16
FINGERPRINT_WORDS = 6


def node_id(public_key: bytes) -> bytes:
    """``node_id = SHA-256(node_pub)[0..16]`` (§5.3)."""
    return hashlib.sha256(public_key).digest()[:NODE_ID_LEN]


def fingerprint(public_key: bytes) -> str:
    """Six English words from the first 66 bits of ``SHA-256(node_pub)``, 11 bits per word,
    most significant first, separated by spaces, whatever the UI language (§5.4)."""
    bits = int.from_bytes(hashlib.sha256(public_key).digest()[:9], "big") >> (72 - 66)
    english = word_list("en")
    return " ".join(english[(bits >> (11 * (FINGERPRINT_WORDS - 1 - i))) & 0x7FF]
                    for i in range(FINGERPRINT_WORDS))


def signed_message(signer_role: Role, transcript_hash: bytes) -> bytes:
    """``"PGR1 node-auth" ‖ role ‖ TH``, 47 bytes (§5.2)."""
    return NODE_AUTH_CONTEXT + bytes([Role(signer_role)]) + transcript_hash


@dataclasses.dataclass(frozen=True)
class VerifiedNode:
    """A peer whose NODE_AUTH verified: what to pin, show and attribute work to."""

    public_key: bytes

    @property
    def node_id(self) -> bytes:
        return node_id(self.public_key)

    @property
    def node_id_hex(self) -> str:
        """The node id as 32 lowercase hex digits."""
        return self.node_id.hex()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)


class NodeIdentity:
    """This machine's Ed25519 key. Its ``repr`` shows the node id only."""

    __slots__ = ("_private_key", "public_key")

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private_key = private_key
        self.public_key = private_key.public_key().public_bytes_raw()

    @classmethod
    def generate(cls) -> NodeIdentity:
        """A new random key."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> NodeIdentity:
        """The key of a stored 32-byte seed (§11)."""
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    def expose_seed(self) -> bytes:
        """The seed, for the 0600 state file (§11)."""
        return self._private_key.private_bytes_raw()

    @property
    def node_id(self) -> bytes:
        return node_id(self.public_key)

    def sign(self, role: Role, transcript_hash: bytes) -> bytes:
        """The 96-byte NODE_AUTH body for a connection where this machine has ``role``."""
        signature = self._private_key.sign(signed_message(role, transcript_hash))
        return encode_node_auth(self.public_key, signature)

    def __repr__(self) -> str:
        return f"NodeIdentity(node_id={self.node_id.hex()})"


def encode_node_auth(public_key: bytes, signature: bytes) -> bytes:
    """``node_pub (32) ‖ sig (64)`` (§5.1)."""
    if len(public_key) != PUBLIC_KEY_LEN or len(signature) != SIGNATURE_LEN:
        raise ValueError("a NODE_AUTH body is a 32-byte key and a 64-byte signature")
    return public_key + signature


def parse_node_auth(body: bytes) -> tuple[bytes, bytes]:
    """Splits exactly 96 bytes into ``(node_pub, sig)``; raises :class:`NodeAuthError`."""
    if len(body) != NODE_AUTH_LEN:
        raise NodeAuthError("wrong-length")
    return bytes(body[:PUBLIC_KEY_LEN]), bytes(body[PUBLIC_KEY_LEN:])


def verify_node_auth(body: bytes, signer_role: Role, transcript_hash: bytes) -> VerifiedNode:
    """Checks a NODE_AUTH body as §5.3 requires; ``signer_role`` is the *peer's* role.

    In order: 96 bytes; the key decodes and is not of small order; the signature verifies
    strictly (``R`` not of small order, canonical ``S``, the cofactorless equation).
    Raises :class:`NodeAuthError` (``wrong-length``, ``bad-public-key``, ``bad-signature``).
    """
    public_key, signature = parse_node_auth(body)
    if not strict_key_ok(public_key):
        raise NodeAuthError("bad-public-key")
    if not strict_signature_shape_ok(signature):
        raise NodeAuthError("bad-signature")
    try:
        key = Ed25519PublicKey.from_public_bytes(public_key)
    except ValueError:
        raise NodeAuthError("bad-public-key") from None
    try:
        key.verify(signature, signed_message(signer_role, transcript_hash))
    except InvalidSignature:
        raise NodeAuthError("bad-signature") from None
    return VerifiedNode(public_key)


def check_pin(pinned: bytes | None, presented: bytes) -> str:
    """TOFU (§5.3): ``new`` (pin it, show the fingerprint), ``match`` or ``changed`` (refuse,
    close, raise an alert). Keys are public, so a plain comparison is fine."""
    if pinned is None:
        return "new"
    return "match" if pinned == presented else "changed"
