# SPDX-License-Identifier: GPL-3.0-or-later
"""The record layer (§6) against records.json, and Sealer/Opener state rules."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from partagpu.pgr.errors import RecordError
from partagpu.pgr.key_schedule import TrafficSecret
from partagpu.pgr.records import (
    MAX_BODY_LEN, MAX_RECORDS_PER_KEY, Opener, RecordType, Sealer, open_record, record_aad,
    record_nonce, seal_record,
)
from partagpu.pgr.roles import Direction
from conftest import load_cases

CASES = load_cases("records.json")
GOOD = [c for c in CASES if "error" not in c]
BAD = [c for c in CASES if "error" in c]
C2S = Direction.CLIENT_TO_SERVER


def _keys(case):
    return bytes.fromhex(case["key"]), bytes.fromhex(case["iv"])


def test_the_vectors_have_both_kinds():
    assert len(GOOD) >= 5 and len(BAD) >= 10


@pytest.mark.parametrize("case", GOOD, ids=[c["name"] for c in GOOD])
def test_sealing_gives_the_vector_and_opens_back(case):
    key, iv = _keys(case)
    body = bytes.fromhex(case["body"])
    wire = seal_record(key, iv, case["dir"], case["seq"], case["record_type"], body)
    assert wire.hex() == case["wire"]
    assert open_record(key, iv, case["dir"], case["seq"], wire) == (case["record_type"], body)


@pytest.mark.parametrize("case", BAD, ids=[c["name"] for c in BAD])
def test_must_reject_vector(case):
    key, iv = _keys(case)
    with pytest.raises(RecordError) as caught:
        open_record(key, iv, case["dir"], case["seq"], bytes.fromhex(case["wire"]))
    assert caught.value.kind == case["error"]


def test_nonce_and_aad():
    iv = bytes(range(12))
    assert record_nonce(iv, 0) == iv
    assert record_nonce(iv, 0x0102) == iv[:10] + bytes([10 ^ 1, 11 ^ 2])
    assert record_nonce(iv, 2**64 - 1)[:4] == iv[:4]
    assert record_aad(Direction.SERVER_TO_CLIENT, 300) == b"PGR1\x02\x01\x2c"


def _pair(seq: int = 0) -> tuple[Sealer, Opener, TrafficSecret]:
    secret = TrafficSecret(bytes(range(32)))
    return Sealer(C2S, secret, seq=seq), Opener(C2S, secret, seq=seq), secret


def _craft(secret: TrafficSecret, seq: int, plaintext: bytes) -> bytes:
    """A record with any plaintext, bypassing the sealer's checks."""
    length = len(plaintext) + 16
    header = length.to_bytes(2, "big")
    return header + AESGCM(secret.key()).encrypt(record_nonce(secret.iv(), seq), plaintext, record_aad(C2S, length))


def test_round_trip_and_counters():
    sealer, opener, _ = _pair()
    for i in range(5):
        assert opener.open(sealer.seal(RecordType.DATA, bytes([i]) * 100)) == (RecordType.DATA, bytes([i]) * 100)
    assert sealer.seq == opener.seq == 5


def test_tamper_replay_reorder_truncate_reflect_fail_and_the_counter_stays():
    sealer, opener, secret = _pair()
    first, second = sealer.seal(RecordType.PING), sealer.seal(RecordType.DATA, b"x" * 40)
    tampered = bytearray(first)
    tampered[5] ^= 0x01
    reflected = Sealer(Direction.SERVER_TO_CLIENT, secret).seal(RecordType.PING)
    for wire, kind in ((bytes(tampered), "decrypt"), (second, "decrypt"),  # reorder
                       (first[:-1], "length-mismatch"), (reflected, "decrypt"),
                       (b"\x00", "too-short"), (b"\x00\x10" + bytes(16), "too-short")):
        with pytest.raises(RecordError) as caught:
            opener.open(wire)
        assert caught.value.kind == kind
        assert opener.seq == 0  # §6.5: the counter does not advance on a failed record
    assert opener.open(first) == (RecordType.PING, b"")
    with pytest.raises(RecordError, match="authentication"):
        opener.open(first)  # replay
    assert opener.open(second)[0] is RecordType.DATA


def test_key_update_switches_to_the_next_key_with_seq_0():
    sealer, opener, secret = _pair()
    update = sealer.seal_key_update()
    assert (sealer.seq, sealer.key_updates) == (0, 1)
    after = sealer.seal(RecordType.DATA, b"new key")
    # The record after the update is not readable with the old key at seq 1...
    with pytest.raises(RecordError):
        Opener(C2S, secret, seq=1).open(after)
    assert opener.open(update) == (RecordType.KEY_UPDATE, b"")
    assert opener.open(after) == (RecordType.DATA, b"new key")
    assert (opener.seq, opener.key_updates) == (1, 1)
    assert Opener(C2S, secret.next()).open(after)[1] == b"new key"


def test_key_update_with_a_body_is_refused_both_ways():
    sealer, opener, secret = _pair()
    with pytest.raises(RecordError) as caught:
        sealer.seal(RecordType.KEY_UPDATE, b"x")
    assert caught.value.kind == "bad-key-update" and sealer.seq == 0
    with pytest.raises(RecordError) as caught:
        opener.open(_craft(secret, 0, b"\x50x"))
    assert caught.value.kind == "bad-key-update"
    assert (opener.seq, opener.key_updates) == (0, 0)
    assert opener.open(sealer.seal(RecordType.PONG)) == (RecordType.PONG, b"")


def test_unknown_type_is_refused():
    _, opener, secret = _pair()
    with pytest.raises(RecordError) as caught:
        opener.open(_craft(secret, 0, b"\x03"))
    assert caught.value.kind == "unknown-type" and opener.seq == 0
    with pytest.raises(ValueError):
        Sealer(C2S, secret).seal(0x03, b"")


def test_body_size_limits():
    sealer, opener, _ = _pair()
    with pytest.raises(RecordError) as caught:
        sealer.seal(RecordType.DATA, bytes(MAX_BODY_LEN + 1))
    assert caught.value.kind == "body-too-long" and sealer.seq == 0
    wire = sealer.seal(RecordType.DATA, bytes(MAX_BODY_LEN))
    assert len(wire) == 2 + 65535 and wire[:2] == b"\xff\xff"
    assert opener.open(wire) == (RecordType.DATA, bytes(MAX_BODY_LEN))
    with pytest.raises(RecordError) as caught:
        opener.open(wire[:2] + wire[2:] + b"\x00")  # len says 65535, one byte more follows
    assert caught.value.kind == "length-mismatch"


def test_the_last_record_of_a_key_must_be_a_key_update():
    last = MAX_RECORDS_PER_KEY - 1
    sealer, opener, secret = _pair(seq=last - 1)
    assert opener.open(sealer.seal(RecordType.DATA, b"second to last")) == (RecordType.DATA, b"second to last")
    assert sealer.seq == opener.seq == last
    with pytest.raises(RecordError) as caught:
        sealer.seal(RecordType.PING)
    assert caught.value.kind == "key-update-required" and sealer.seq == last
    # A receiver closes on anything but KEY_UPDATE at the last seq, counter unmoved.
    with pytest.raises(RecordError) as caught:
        opener.open(_craft(secret, last, b"\x40"))
    assert caught.value.kind == "key-update-required" and opener.seq == last
    assert opener.open(sealer.seal_key_update()) == (RecordType.KEY_UPDATE, b"")
    assert sealer.seq == opener.seq == 0 and sealer.key_updates == opener.key_updates == 1
    assert opener.open(sealer.seal(RecordType.PING)) == (RecordType.PING, b"")


def test_needs_key_update_after_2_to_the_20_records():
    assert not Sealer(C2S, TrafficSecret(bytes(32)), seq=(1 << 20) - 1).needs_key_update()
    assert Sealer(C2S, TrafficSecret(bytes(32)), seq=1 << 20).needs_key_update()
