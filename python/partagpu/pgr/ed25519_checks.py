# SPDX-License-Identifier: GPL-3.0-or-later
"""The Ed25519 checks PGR/1 §5.3 requires beyond what OpenSSL's verify does.

§5.3 asks for ed25519-dalek's ``verify_strict``: a public key that decodes and is not of
small order, a canonical ``S`` (RFC 8032 §5.1.7), and (dalek's strict rule) an ``R`` that is
not of small order. OpenSSL, behind ``cryptography``, checks ``S`` and the cofactorless
equation but accepts small-order keys and ``R`` values, so a key of order 8 with a matching
"signature" would pass; these few lines of curve arithmetic close that gap. They only run on
public data (the peer's key and signature), so timing does not matter.
"""

from __future__ import annotations

# RFC 8032 §5.1: edwards25519, -x^2 + y^2 = 1 + d x^2 y^2 over GF(p).
P = 2**255 - 19
D = (-121665 * pow(121666, P - 2, P)) % P
L = 2**252 + 27742317777372353535851937790883648493  # order of the prime subgroup
_SQRT_MINUS_ONE = pow(2, (P - 1) // 4, P)
_IDENTITY = (0, 1)

Point = tuple[int, int]


def decode_point(encoded: bytes) -> Point | None:
    """Decodes a 32-byte point as RFC 8032 §5.1.3 does, or ``None`` when it does not decode.

    Non-canonical encodings (y ≥ p, or x = 0 with the sign bit set) do not decode.
    """
    if len(encoded) != 32:
        return None
    number = int.from_bytes(encoded, "little")
    sign = number >> 255
    y = number & ((1 << 255) - 1)
    if y >= P:
        return None
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    x = (u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P)) % P
    if (v * x * x - u) % P != 0:
        if (v * x * x + u) % P != 0:
            return None
        x = (x * _SQRT_MINUS_ONE) % P
    if x == 0 and sign:
        return None
    if x & 1 != sign:
        x = P - x
    return (x, y)


def _add(a: Point, b: Point) -> Point:
    """Affine point addition (complete on edwards25519: the denominators never vanish)."""
    (x1, y1), (x2, y2) = a, b
    t = D * x1 * x2 * y1 * y2 % P
    x3 = (x1 * y2 + y1 * x2) * pow(1 + t, P - 2, P) % P
    y3 = (y1 * y2 + x1 * x2) * pow(1 - t, P - 2, P) % P
    return (x3, y3)


def is_small_order(point: Point) -> bool:
    """Whether ``[8]point`` is the identity: one of the 8 torsion points (§5.3)."""
    for _ in range(3):
        point = _add(point, point)
    return point == _IDENTITY


def is_canonical_scalar(encoded: bytes) -> bool:
    """Whether a 32-byte little-endian scalar is below the group order (RFC 8032 §5.1.7)."""
    return len(encoded) == 32 and int.from_bytes(encoded, "little") < L


def strict_key_ok(public_key: bytes) -> bool:
    """A usable node key: it decodes and is not of small order (§5.3)."""
    point = decode_point(public_key)
    return point is not None and not is_small_order(point)


def strict_signature_shape_ok(signature: bytes) -> bool:
    """The parts of dalek's ``verify_strict`` that OpenSSL skips or may skip: ``R`` decodes
    and is not of small order, ``S`` is canonical. The equation itself is OpenSSL's."""
    if len(signature) != 64:
        return False
    r_point = decode_point(signature[:32])
    return r_point is not None and not is_small_order(r_point) and is_canonical_scalar(signature[32:])
