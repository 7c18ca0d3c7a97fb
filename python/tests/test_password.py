# SPDX-License-Identifier: GPL-3.0-or-later
"""Argon2id (§2.6) against argon2id.json."""

from __future__ import annotations

import pytest

from partagpu.pgr.codes import RoomCode
from partagpu.pgr.password import ARGON2_M_KIB, ARGON2_P, ARGON2_T, RoomPassword, argon2id
from conftest import load_cases

CASES = load_cases("argon2id.json")


@pytest.mark.parametrize("case", CASES)
def test_argon2id_vector(case):
    assert (case["m_kib"], case["t"], case["p"]) == (ARGON2_M_KIB, ARGON2_T, ARGON2_P)
    raw = argon2id(bytes.fromhex(case["normalised_hex"]), bytes.fromhex(case["room_id"]))
    assert raw.hex() == case["password"]


def test_derive_from_a_typed_code_matches_the_vector():
    case = CASES[0]
    code = RoomCode.parse(bytes.fromhex(case["normalised_hex"]).decode().replace("-", " ").upper())
    assert RoomPassword.derive(code, bytes.fromhex(case["room_id"])).expose_secret().hex() == case["password"]


def test_salt_and_code_both_matter_and_the_password_is_hidden():
    code, other = RoomCode.parse("zoo zebra wrist abandon"), RoomCode.parse("zoo zebra wrist ability")
    a, b = bytes([1]) * 16, bytes([2]) * 16
    pw = RoomPassword.derive(code, a)
    assert pw == RoomPassword.derive(code, a)
    assert pw != RoomPassword.derive(code, b) and pw != RoomPassword.derive(other, a)
    assert repr(pw) == "RoomPassword(<redacted>)" and pw.expose_secret().hex() not in str(pw)
    with pytest.raises(ValueError):
        RoomPassword.derive(code, b"short")
