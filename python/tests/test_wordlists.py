# SPDX-License-Identifier: GPL-3.0-or-later
"""The packaged word lists (§2.2): byte-identical to the Rust copies, folded correctly."""

from __future__ import annotations

import hashlib

import pytest

from partagpu.pgr import codes
from conftest import PYTHON_DIR, RUST_WORDLISTS_DIR

PACKAGED = PYTHON_DIR / "partagpu" / "pgr" / "wordlists"


@pytest.mark.parametrize("name", ["english.txt", "french.txt"])
def test_packaged_copy_equals_the_rust_list_byte_for_byte(name):
    assert (PACKAGED / name).read_bytes() == (RUST_WORDLISTS_DIR / name).read_bytes()


def test_sha256_constants_are_those_of_the_spec():
    # docs/protocol.md §2.2 table, and the files themselves.
    assert codes.WORD_LIST_SHA256 == {
        "en": "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda",
        "fr": "ebc3959ab7801a1df6bac4fa7d970652f1df76b683cd2f4003c941c63d517e59",
    }
    for lang, name in codes.WORD_LIST_FILES.items():
        assert hashlib.sha256((RUST_WORDLISTS_DIR / name).read_bytes()).hexdigest() == codes.WORD_LIST_SHA256[lang]


def test_a_damaged_list_is_refused(monkeypatch):
    monkeypatch.setitem(codes.WORD_LIST_SHA256, "en", "00" * 32)
    with pytest.raises(RuntimeError, match="damaged"):
        codes._load_word_list("en")


def test_the_french_file_is_published_in_nfd():
    text = (PACKAGED / "french.txt").read_text(encoding="utf-8")
    assert "e\u0301le\u0300ve" in text.split("\n")


@pytest.mark.parametrize("lang", codes.LANGUAGES)
def test_folded_lists_are_2048_sorted_distinct_ascii_lowercase_words(lang):
    words = codes.word_list(lang)
    assert len(words) == len(set(words)) == 2048
    assert all(w and w.isascii() and w.isalpha() and w.islower() for w in words)
    assert all(a < b for a, b in zip(words, words[1:]))
    # The first four letters identify a word inside a list (§2.2).
    assert len({w[:4] for w in words}) == 2048


def test_the_lists_share_123_words():
    shared = set(codes.word_list("en")) & set(codes.word_list("fr"))
    assert len(shared) == 123
    assert {"abandon", "animal", "badge"} <= shared


def test_known_positions():
    assert codes.word_list("fr")[0] == "abaisser"
    assert codes.word_list("en")[2047] == "zoo"
    assert codes.in_word_list("eleve", "fr") and not codes.in_word_list("élève", "fr")
