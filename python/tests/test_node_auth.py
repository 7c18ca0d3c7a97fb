# SPDX-License-Identifier: GPL-3.0-or-later
"""Node identity and NODE_AUTH (§5) against node_auth.json, and the strict checks of §5.3."""

from __future__ import annotations

import hashlib
import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from partagpu.pgr import ed25519_checks
from partagpu.pgr.errors import NodeAuthError
from partagpu.pgr.node_auth import (
    NodeIdentity, check_pin, fingerprint, node_id, parse_node_auth, signed_message, verify_node_auth,
)
from partagpu.pgr.roles import Role
from conftest import load_cases

CASES = load_cases("node_auth.json")
TH = bytes(range(32))

# The 8 points of small order (the torsion subgroup), as their canonical encodings.
SMALL_ORDER_POINTS = [
    "0100000000000000000000000000000000000000000000000000000000000000",  # identity
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # order 2
    "0000000000000000000000000000000000000000000000000000000000000000",  # order 4
    "0000000000000000000000000000000000000000000000000000000000000080",  # order 4
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
]
BASE_POINT = "5866666666666666666666666666666666666666666666666666666666666666"


@pytest.mark.parametrize("case", CASES)
def test_node_auth_vector(case):
    node = NodeIdentity.from_seed(bytes.fromhex(case["seed"]))
    th, role = bytes.fromhex(case["th"]), Role(case["role"])
    assert node.public_key.hex() == case["public_key"]
    assert node.node_id.hex() == node_id(node.public_key).hex() == case["node_id"]
    assert signed_message(role, th).hex() == case["signed_message"]
    body = node.sign(role, th)
    assert body.hex() == case["body"] and body[32:].hex() == case["signature"]
    verified = verify_node_auth(body, role, th)
    assert verified.node_id_hex == case["node_id"]
    assert verified.fingerprint == fingerprint(node.public_key) == case["fingerprint"]
    # The role byte is the signer's: the same body does not verify as the other role (§5.2).
    with pytest.raises(NodeAuthError) as caught:
        verify_node_auth(body, role.peer, th)
    assert caught.value.reason == "bad-signature"


def test_the_first_seed_is_rfc_8032_test_1():
    assert CASES[0]["seed"].startswith("9d61b19d") and CASES[0]["public_key"].startswith("d75a9801")


def test_identity_round_trips_its_seed_and_hides_it():
    node = NodeIdentity.generate()
    assert NodeIdentity.from_seed(node.expose_seed()).public_key == node.public_key
    assert node.expose_seed().hex() not in repr(node) and node.node_id.hex() in repr(node)


def test_another_transcript_or_length_fails():
    node = NodeIdentity.generate()
    body = node.sign(Role.CLIENT, TH)
    with pytest.raises(NodeAuthError) as caught:
        verify_node_auth(body, Role.CLIENT, bytes(32))
    assert caught.value.reason == "bad-signature"
    for size in (0, 95, 97):
        with pytest.raises(NodeAuthError) as caught:
            verify_node_auth((body * 2)[:size], Role.CLIENT, TH)
        assert caught.value.reason == "wrong-length"
    assert parse_node_auth(body) == (node.public_key, body[32:])


@pytest.mark.parametrize("encoded", SMALL_ORDER_POINTS)
def test_small_order_points_are_found(encoded):
    point = ed25519_checks.decode_point(bytes.fromhex(encoded))
    assert point is not None and ed25519_checks.is_small_order(point)


def test_ordinary_points_are_not_small_order():
    assert not ed25519_checks.is_small_order(ed25519_checks.decode_point(bytes.fromhex(BASE_POINT)))
    for _ in range(5):
        assert ed25519_checks.strict_key_ok(NodeIdentity.generate().public_key)


def test_decoding_follows_rfc_8032():
    p = ed25519_checks.P
    assert ed25519_checks.decode_point(p.to_bytes(32, "little")) is None  # y = p: not canonical
    assert ed25519_checks.decode_point((1 | 1 << 255).to_bytes(32, "little")) is None  # x = 0, sign 1
    assert ed25519_checks.decode_point((2).to_bytes(32, "little")) is None  # y = 2: not on the curve
    assert ed25519_checks.decode_point(bytes(31)) is None


@pytest.mark.parametrize("encoded", SMALL_ORDER_POINTS)
def test_a_small_order_key_is_refused_even_with_an_equation_that_holds(encoded):
    # With A of small order, R = identity and S = 0 satisfy [S]B = R + [h]A whenever [h]A is the
    # identity; OpenSSL's verify accepts such a "signature", so §5.3 needs the explicit check.
    body = bytes.fromhex(encoded) + bytes.fromhex(SMALL_ORDER_POINTS[0]) + bytes(32)
    with pytest.raises(NodeAuthError) as caught:
        verify_node_auth(body, Role.CLIENT, TH)
    assert caught.value.reason == "bad-public-key"


def test_non_canonical_s_and_small_order_r_are_refused():
    node = NodeIdentity.generate()
    body = node.sign(Role.SERVER, TH)
    s = int.from_bytes(body[64:], "little")
    high_s = body[:64] + (s + ed25519_checks.L).to_bytes(32, "little")
    small_r = body[:32] + bytes.fromhex(SMALL_ORDER_POINTS[4]) + body[64:]
    for bad in (high_s, small_r):
        with pytest.raises(NodeAuthError) as caught:
            verify_node_auth(bad, Role.SERVER, TH)
        assert caught.value.reason == "bad-signature"
    assert verify_node_auth(body, Role.SERVER, TH).public_key == node.public_key


def _encode(point):
    x, y = point
    return (y | (x & 1) << 255).to_bytes(32, "little")


def _times(scalar, point):
    result, addend = (0, 1), point
    while scalar:
        if scalar & 1:
            result = ed25519_checks._add(result, addend)
        addend = ed25519_checks._add(addend, addend)
        scalar >>= 1
    return result


def test_a_small_order_r_is_refused_even_when_the_equation_holds():
    # A = [a]B + T with T of order 8 is not of small order, so it passes the key check. With
    # R = identity and S = h·a, [S]B = R + [h]A holds whenever 8 divides h; OpenSSL accepts
    # that, dalek's verify_strict (and §5.3) refuse it because R is of small order.
    base = ed25519_checks.decode_point(bytes.fromhex(BASE_POINT))
    torsion = ed25519_checks.decode_point(bytes.fromhex(SMALL_ORDER_POINTS[4]))
    a = secrets.randbelow(ed25519_checks.L)
    public_key = _encode(ed25519_checks._add(_times(a, base), torsion))
    r = bytes.fromhex(SMALL_ORDER_POINTS[0])
    for counter in range(1000):
        th = counter.to_bytes(32, "big")
        message = signed_message(Role.CLIENT, th)
        h = int.from_bytes(hashlib.sha512(r + public_key + message).digest(), "little") % ed25519_checks.L
        if h % 8 == 0:
            break
    signature = r + (h * a % ed25519_checks.L).to_bytes(32, "little")
    Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)  # OpenSSL: accepted
    assert ed25519_checks.strict_key_ok(public_key)
    with pytest.raises(NodeAuthError) as caught:
        verify_node_auth(public_key + signature, Role.CLIENT, th)
    assert caught.value.reason == "bad-signature"


def test_pinning():
    a, b = NodeIdentity.generate().public_key, NodeIdentity.generate().public_key
    assert (check_pin(None, a), check_pin(a, a), check_pin(a, b)) == ("new", "match", "changed")


def test_fingerprint_takes_the_first_66_bits():
    import hashlib
    from partagpu.pgr.codes import word_list
    digest = hashlib.sha256(bytes(32)).digest()
    first = (digest[0] << 3) | (digest[1] >> 5)
    words = fingerprint(bytes(32)).split(" ")
    assert len(words) == 6 and words[0] == word_list("en")[first]
    assert fingerprint(bytes(32)) != fingerprint(bytes([1]) * 32)
