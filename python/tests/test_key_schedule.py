# SPDX-License-Identifier: GPL-3.0-or-later
"""SPAKE2 with fixed randomness (§3.3, §12.3) and the key schedule (§4) against the vectors."""

from __future__ import annotations

import pytest
from spake2 import SPAKE2_A, SPAKE2_B

from partagpu.pgr.handshake import ClientHandshake, ServerHandshake
from partagpu.pgr.handshake_messages import spake2_identities
from partagpu.pgr.key_schedule import KeySchedule, TrafficSecret, transcript_hash
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.roles import Direction
from conftest import fixed_entropy, load_cases

SPAKE2_CASES = load_cases("spake2.json")
KEY_SCHEDULE_CASES = load_cases("key_schedule.json")


@pytest.mark.parametrize("case", SPAKE2_CASES)
def test_spake2_vector(case):
    pw, id_a, id_b = (bytes.fromhex(case[k]) for k in ("pw", "id_a", "id_b"))
    a = SPAKE2_A(pw, idA=id_a, idB=id_b, entropy_f=fixed_entropy(case["rng_byte_a"]))
    b = SPAKE2_B(pw, idA=id_a, idB=id_b, entropy_f=fixed_entropy(case["rng_byte_b"]))
    assert a.start().hex() == case["msg_a"]
    assert b.start().hex() == case["msg_b"]
    # Each side derives the key from the other side's recorded message (§12.3).
    assert a.finish(bytes.fromhex(case["msg_b"])).hex() == case["key"]
    assert b.finish(bytes.fromhex(case["msg_a"])).hex() == case["key"]


@pytest.mark.parametrize("case", SPAKE2_CASES)
def test_the_handshake_uses_these_identities_and_messages(case):
    id_a = bytes.fromhex(case["id_a"])
    room_id, epoch = id_a[7:23], int.from_bytes(id_a[23:27], "big")
    assert spake2_identities(room_id, epoch) == (id_a, bytes.fromhex(case["id_b"]))
    password = RoomPassword(bytes.fromhex(case["pw"]))
    client = ClientHandshake(password, room_id, epoch, entropy=fixed_entropy(case["rng_byte_a"]))
    assert client.client_hello[24:].hex() == case["msg_a"]
    _, flight = ServerHandshake.on_client_hello(
        client.client_hello, lambda rid: (epoch, password), entropy=fixed_entropy(case["rng_byte_b"]))
    assert flight[8:41].hex() == case["msg_b"]


@pytest.mark.parametrize("case", KEY_SCHEDULE_CASES)
def test_key_schedule_vector(case):
    th = transcript_hash(bytes.fromhex(case["client_hello"]), bytes.fromhex(case["server_hello"]))
    schedule = KeySchedule(bytes.fromhex(case["k"]), th)
    assert th.hex() == case["th"]
    assert schedule.expose_prk().hex() == case["prk"]
    sf = schedule.server_finished()
    assert sf.hex() == case["sf"]
    assert schedule.client_finished(sf).hex() == case["cf"]
    assert schedule.verify_server_finished(bytes.fromhex(case["sf"]))
    assert schedule.verify_client_finished(sf, bytes.fromhex(case["cf"]))
    assert not schedule.verify_server_finished(bytes.fromhex(case["cf"]))
    assert not schedule.verify_client_finished(sf, sf[:31])
    assert schedule.exporter().hex() == case["exporter"]
    for name, direction in (("c2s", Direction.CLIENT_TO_SERVER), ("s2c", Direction.SERVER_TO_CLIENT)):
        secret = schedule.traffic_secret(direction)
        assert secret.expose_secret().hex() == case[f"ts_{name}"]
        assert secret.key().hex() == case[f"key_{name}"]
        assert secret.iv().hex() == case[f"iv_{name}"]
        one = secret.next()
        assert [one.expose_secret().hex(), one.next().expose_secret().hex()] == case[f"ts_{name}_updates"]


def test_secrets_are_not_shown():
    assert repr(TrafficSecret(bytes(32))) == "TrafficSecret(<redacted>)"
    schedule = KeySchedule(bytes(32), bytes(32))
    assert schedule.expose_prk().hex() not in repr(schedule)
