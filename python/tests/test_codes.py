# SPDX-License-Identifier: GPL-3.0-or-later
"""Normalisation (§2.3), validation (§2.4), generation (§2.1) and room ids (§2.5)."""

from __future__ import annotations

import unicodedata

import pytest

from partagpu.pgr import codes
from partagpu.pgr.codes import CodeError, RoomCode, normalise
from conftest import load_cases

NORMALISATION = load_cases("normalisation.json")


@pytest.mark.parametrize("case", NORMALISATION, ids=[c["comment"] for c in NORMALISATION])
def test_normalisation_vector(case):
    typed = bytes.fromhex(case["input_hex"]).decode("utf-8")
    assert normalise(typed).encode("utf-8").hex() == case["normalised_hex"]
    if case["valid"]:
        code = RoomCode.parse(typed)
        assert code.language == case["language"]
        assert code.normalised_bytes().hex() == case["normalised_hex"]
    else:
        with pytest.raises(CodeError) as caught:
            RoomCode.parse(typed)
        assert caught.value.kind == case["error"]
        assert caught.value.position == case.get("position")


def test_vectors_cover_every_error_kind():
    kinds = {c.get("error") for c in NORMALISATION if not c["valid"]}
    assert kinds == {"too-long", "empty", "wrong-word-count", "unknown-word", "mixed-lists"}


def test_examples_of_the_spec():
    assert normalise("  Élève\tZÉNITH__abaisser-zeste ") == "eleve-zenith-abaisser-zeste"
    assert normalise("ＡＢＡＮＤＯＮ ability able about") == "abandon-ability-able-about"
    assert normalise("Œuvre ÆTHER") == "oeuvre-aether"
    assert normalise(" \n-_ ") == ""
    assert normalise("ñandu") == "ñandu"  # outside the table: kept


@pytest.mark.parametrize("char", [" ", "\t", "\n", "\u00a0", "\u0085", "\u1680", "\u2003",
                                  "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "-", "_"])
def test_separators(char):
    assert codes.is_separator(char)
    assert normalise(f"zoo{char}zoo") == "zoo-zoo"


@pytest.mark.parametrize("char", ["\u200b", "\u2010", "\u2013", ".", ",", "\u001c", "\u001f"])
def test_not_separators(char):
    assert not codes.is_separator(char)
    assert normalise(f"zoo{char}zoo") == f"zoo{char}zoo"


@pytest.mark.parametrize("typed", ["  Élève\t__ZOO--abandon  ", "ΣΑΣ-ΟΔΟΣ Σ",
                                   "İstanbul\u00a0straße", "ＡＢＡＮＤＯＮ\u3000zoo\uff0dx\uff3fy"])
def test_splitting_before_lowercasing_gives_the_pipeline_words(typed):
    # RoomCode.parse splits after NFKC (to keep each word as typed), like Rust's tokens().
    words = [codes.normalise_word(w) for w in codes._split_on_separators(unicodedata.normalize("NFKC", typed))]
    assert "-".join(words) == normalise(typed)


def test_validation_order_and_positions():
    with pytest.raises(CodeError) as caught:
        RoomCode.parse("zoo zoo zoo abilty")
    assert (caught.value.kind, caught.value.position) == ("unknown-word", 4)
    with pytest.raises(CodeError) as caught:
        RoomCode.parse("abaisser zoo abilty zoo")  # unknown beats mixed
    assert (caught.value.kind, caught.value.position) == ("unknown-word", 3)
    with pytest.raises(CodeError) as caught:
        RoomCode.parse("abaisser zeste zoo zoo")
    assert (caught.value.kind, caught.value.position) == ("mixed-lists", 3)
    with pytest.raises(CodeError) as caught:
        RoomCode.parse("a " * 129)
    assert caught.value.kind == "too-long"
    assert RoomCode.parse("abandon animal badge bonus").language == "en"  # shared words


def test_errors_never_show_the_words():
    with pytest.raises(CodeError) as caught:
        RoomCode.parse("abandon abilty able about")
    error = caught.value
    for shown in (str(error), repr(error)):
        assert "word 2" in shown or "position=2" in shown
        for word in ("abandon", "abilty", "able", "about"):
            assert word not in shown
    # The interactive message names the typed word and suggests the right one (§2.4).
    assert "abilty" in error.detail() and "ability" in error.detail()
    assert error.suggestions[0] == "ability"


def test_suggestions_come_from_the_list_of_the_other_words():
    assert codes.suggest_words(["eleve", "zenith", "abaiser", "zeste"], 2)[0] == "abaisser"
    assert codes.suggest_words(["zoo", "zoo", "zoo", "qqqqqqqqq"], 3) == ()
    assert codes._edit_distance("kitten", "sitting") == 3
    assert codes._edit_distance("", "abc") == 3


def test_room_code_hides_its_words():
    code = RoomCode.parse("zoo zebra wrist abandon")
    assert "zoo" not in repr(code) and "zebra" not in str(code)
    assert code.expose_words() == ("zoo", "zebra", "wrist", "abandon")
    assert code == RoomCode.parse("ZOO-zebra_wrist abandon")
    assert code != RoomCode.parse("zoo zebra wrist ability")
    with pytest.raises(TypeError):
        hash(code)


def test_generate_uses_44_bits_most_significant_first(monkeypatch):
    # Word indexes 0x7FF, 0x000, 0x555, 0x2AA in the top 44 bits; the low 4 bits are unused.
    bits = (0x7FF << 37) | (0x000 << 26) | (0x555 << 15) | (0x2AA << 4) | 0xF
    monkeypatch.setattr(codes.secrets, "token_bytes", lambda n: bits.to_bytes(n, "big"))
    english, french = codes.word_list("en"), codes.word_list("fr")
    assert RoomCode.generate("en").expose_words() == (english[0x7FF], english[0], english[0x555], english[0x2AA])
    assert RoomCode.generate("fr").language == "fr"
    assert RoomCode.generate("fr").expose_words()[0] == french[0x7FF]


@pytest.mark.parametrize("lang", codes.LANGUAGES)
def test_generated_codes_parse_back(lang):
    for _ in range(20):
        code = RoomCode.generate(lang)
        parsed = RoomCode.parse(" ".join(code.expose_words()))
        assert parsed == code
        assert parsed.language == "en" or lang == "fr"


def test_room_ids():
    room_id = codes.generate_room_id()
    assert len(room_id) == 16 and codes.generate_room_id() != room_id
    assert codes.parse_room_id(codes.room_id_hex(room_id)) == room_id
    assert codes.parse_room_id("AB" * 16) == b"\xab" * 16
    for bad in ("", "00", "0" * 33, "g" * 32, "00 " * 10 + "00", "0" * 31 + " "):
        with pytest.raises(ValueError):
            codes.parse_room_id(bad)
