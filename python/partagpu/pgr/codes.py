# SPDX-License-Identifier: GPL-3.0-or-later
"""Room codes: normalisation, the word lists, validation, generation, room ids (PGR/1 §2).

A room code is four words of one BIP-39 list (§2.1). What the user types goes through the
normalisation pipeline of §2.3, byte-identical to the Rust ``partagpu_core::room``; only that
normalised string enters the cryptography (§2.6). Validation (§2.4) happens before any
network use, so a typo costs no online guess.

Nothing here prints or logs a code: :class:`RoomCode` hides its words in ``repr`` and
``str(CodeError)`` names positions, never words. (Python cannot zeroize strings; the Rust
side does.)
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.resources
import re
import secrets
import unicodedata

from partagpu.pgr.errors import PgrError

CODE_WORDS = 4
"""Words in a room code: 4 × 11 bits = 44 bits of entropy (§2.1)."""

MAX_CODE_INPUT_BYTES = 256
"""Longest typed code looked at, in UTF-8 bytes (§2.4)."""

WORD_LIST_LEN = 2048
"""Words per list: 2^11, so a word carries exactly 11 bits and needs no rejection step."""

LANGUAGES = ("en", "fr")
"""The lists, in the order validation tries them (§2.4): English first."""

# §2.2: the published files, byte for byte. A damaged copy would silently change which codes
# are valid and which words a generated code uses, so the package refuses to load it.
WORD_LIST_SHA256 = {
    "en": "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda",
    "fr": "ebc3959ab7801a1df6bac4fa7d970652f1df76b683cd2f4003c941c63d517e59",
}
WORD_LIST_FILES = {"en": "english.txt", "fr": "french.txt"}

# §2.3 step 3: the fixed accent table, applied after lowercasing (so lowercase keys only).
_ACCENT_FOLDS = str.maketrans({
    "à": "a", "â": "a", "ä": "a", "æ": "ae", "ç": "c",
    "è": "e", "é": "e", "ê": "e", "ë": "e", "î": "i", "ï": "i",
    "ô": "o", "ö": "o", "ù": "u", "û": "u", "ü": "u", "œ": "oe",
})

# §2.3 step 4: Unicode White_Space, '-' and '_'. Spelled out because Python's str.isspace
# also accepts U+001C–U+001F, which Rust's char::is_whitespace (and the spec) do not.
_WHITE_SPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
SEPARATORS = _WHITE_SPACE | {"-", "_"}


def is_separator(char: str) -> bool:
    """Whether ``char`` separates words (§2.3 step 4)."""
    return char in SEPARATORS


def _split_on_separators(text: str) -> list[str]:
    """The non-empty runs of non-separators, in order (leading/trailing runs ignored)."""
    words, current = [], []
    for char in text:
        if char in SEPARATORS:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def normalise_word(word: str) -> str:
    """§2.3 steps 1–3 on one word: NFKC, full Unicode lowercase, the fixed accent table."""
    return unicodedata.normalize("NFKC", word).lower().translate(_ACCENT_FOLDS)


def normalise(text: str) -> str:
    """The whole pipeline of §2.3 on any string (valid code or not), as a ``str``.

    For a valid code the result is ASCII and its UTF-8 bytes are the Argon2id input (§2.6);
    :meth:`RoomCode.parse` also validates the words.
    """
    folded = unicodedata.normalize("NFKC", text).lower().translate(_ACCENT_FOLDS)
    return "-".join(_split_on_separators(folded))


def _load_word_list(language: str) -> tuple[str, ...]:
    """Reads a packaged list, checks its SHA-256 (§2.2) and folds every word (§2.3)."""
    resource = importlib.resources.files(__package__) / "wordlists" / WORD_LIST_FILES[language]
    published = resource.read_bytes()
    if hashlib.sha256(published).hexdigest() != WORD_LIST_SHA256[language]:
        raise RuntimeError(f"the packaged word list {WORD_LIST_FILES[language]} is damaged (SHA-256 mismatch)")
    words = tuple(normalise_word(line) for line in published.decode("utf-8").split("\n") if line)
    if len(words) != WORD_LIST_LEN:
        raise RuntimeError(f"the packaged word list {WORD_LIST_FILES[language]} does not have 2048 words")
    return words


# The folded lists (§2.2), loaded and checked once at import.
WORD_LISTS: dict[str, tuple[str, ...]] = {lang: _load_word_list(lang) for lang in LANGUAGES}
_WORD_SETS = {lang: frozenset(words) for lang, words in WORD_LISTS.items()}


def word_list(language: str) -> tuple[str, ...]:
    """The folded list of ``language`` (``en``/``fr``): 2048 ASCII words, ascending."""
    return WORD_LISTS[language]


def in_word_list(word: str, language: str) -> bool:
    """Whether an already normalised word is in the folded list of ``language``."""
    return word in _WORD_SETS[language]


class CodeError(PgrError, ValueError):
    """A typed code refused by §2.4. ``kind`` and ``position`` match the Rust ``CodeError``.

    ``str()`` names the position only, so the error is safe to print and log. The typed word
    and up to three suggestions are kept for an interactive prompt (:meth:`detail`).
    """

    def __init__(self, kind: str, position: int | None = None, *, count: int | None = None,
                 typed_word: str | None = None, suggestions: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.position = position
        self.count = count
        self.typed_word = typed_word
        self.suggestions = suggestions
        super().__init__(self._sentence())

    def _sentence(self) -> str:
        if self.kind == "too-long":
            return "the room code is too long: it is four words, for example from the room's screen"
        if self.kind == "empty":
            return "the room code is empty: type the four words of the room"
        if self.kind == "wrong-word-count":
            return f"a room code has 4 words, but {self.count} were typed"
        if self.kind == "unknown-word":
            return f"word {self.position} is not in the word list"
        return (f"word {self.position} is not from the same word list as the words before it: "
                "all 4 words of a code come from one list (English or French)")

    def detail(self) -> str:
        """The message with the offending word and suggestions (§2.4): for the prompt where
        the user is typing the code, never for logs."""
        if self.kind != "unknown-word":
            return str(self)
        text = f"word {self.position} (\u201c{self.typed_word}\u201d) is not in the word list"
        quoted = [f"\u201c{word}\u201d" for word in self.suggestions]
        if len(quoted) == 1:
            return f"{text}; did you mean {quoted[0]}?"
        if quoted:
            return f"{text}; did you mean one of: {', '.join(quoted)}?"
        return text + "."

    def __repr__(self) -> str:
        return f"CodeError(kind={self.kind!r}, position={self.position!r})"


class RoomCode:
    """A valid room code, normalised. Its words are shown only by :meth:`expose_words`."""

    __slots__ = ("_normalised", "language")

    def __init__(self, normalised: str, language: str) -> None:
        self._normalised = normalised
        self.language = language

    @classmethod
    def parse(cls, typed: str) -> RoomCode:
        """Normalises (§2.3) and validates (§2.4) a typed code.

        Raises :class:`CodeError` for the first problem, in the order of §2.4.
        """
        if len(typed.encode("utf-8", "surrogatepass")) > MAX_CODE_INPUT_BYTES:
            raise CodeError("too-long")
        # Split after NFKC, as Rust does, so each word is also available "as typed".
        typed_words = _split_on_separators(unicodedata.normalize("NFKC", typed))
        words = [normalise_word(word) for word in typed_words]
        if not words:
            raise CodeError("empty")
        if len(words) != CODE_WORDS:
            raise CodeError("wrong-word-count", count=len(words))
        for index, word in enumerate(words):
            if not any(in_word_list(word, lang) for lang in LANGUAGES):
                raise CodeError("unknown-word", index + 1, typed_word=typed_words[index],
                                suggestions=suggest_words(words, index))
        for end in range(1, CODE_WORDS + 1):
            if not any(all(in_word_list(w, lang) for w in words[:end]) for lang in LANGUAGES):
                raise CodeError("mixed-lists", end)
        language = next(lang for lang in LANGUAGES if all(in_word_list(w, lang) for w in words))
        return cls("-".join(words), language)

    @classmethod
    def generate(cls, language: str = "en") -> RoomCode:
        """Four words drawn uniformly from ``language``'s list with :mod:`secrets` (§2.1).

        Like the Rust generator: 6 CSPRNG bytes, the top 44 of their 48 bits, 11 per word,
        most significant first.
        """
        words = word_list(language)
        bits = int.from_bytes(secrets.token_bytes(6), "big")
        picked = [words[(bits >> (48 - 11 * (i + 1))) & 0x7FF] for i in range(CODE_WORDS)]
        return cls("-".join(picked), language)

    def normalised_bytes(self) -> bytes:
        """The normalised code as UTF-8 (ASCII): the Argon2id input (§2.6)."""
        return self._normalised.encode("ascii")

    def expose_words(self) -> tuple[str, ...]:
        """The four normalised words, for the one screen that must show the code."""
        return tuple(self._normalised.split("-"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RoomCode):
            return NotImplemented
        return hmac.compare_digest(self.normalised_bytes(), other.normalised_bytes())

    __hash__ = None  # equal codes are secrets: keep them out of dicts and sets

    def __repr__(self) -> str:
        return f"RoomCode(language={self.language!r}, words=<redacted>)"


parse_code = RoomCode.parse
generate_code = RoomCode.generate


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance over code points."""
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a):
        diagonal, row[0] = row[0], i + 1
        for j, char_b in enumerate(b):
            substitution = diagonal + (char_a != char_b)
            diagonal = row[j + 1]
            row[j + 1] = min(substitution, row[j] + 1, row[j + 1] + 1)
    return row[len(b)]


def suggest_words(words: list[str], position: int, limit: int = 3) -> tuple[str, ...]:
    """Up to ``limit`` list words the user may have meant instead of ``words[position]``.

    Non-normative (§2.4), same rule as Rust: candidates come from the lists holding every
    other known word (both lists when none does); first the words sharing the first four
    letters, then those at edit distance ≤ 2, nearest first, alphabetically within a distance.
    """
    typed = words[position]
    others = [w for i, w in enumerate(words)
              if i != position and any(in_word_list(w, lang) for lang in LANGUAGES)]
    lists = [lang for lang in LANGUAGES if all(in_word_list(w, lang) for w in others)] or list(LANGUAGES)
    found: list[str] = []
    prefix = typed[:4]
    for lang in lists:
        found += [w for w in word_list(lang) if w.startswith(prefix) and w not in found]
    if len(found) < limit and len(typed) <= 32:
        near = sorted({(_edit_distance(typed, w), w) for lang in lists for w in word_list(lang)
                       if abs(len(w) - len(typed)) <= 2})
        found += [w for d, w in near if d <= 2 and w not in found]
    return tuple(found[:limit])


# Room ids (§2.5): 16 random bytes made with the room, public, shown as 32 hex digits.
ROOM_ID_LEN = 16
_ROOM_ID_HEX = re.compile(r"[0-9a-fA-F]{32}")


def generate_room_id() -> bytes:
    """A fresh room id; never derived from the code (§2.5)."""
    return secrets.token_bytes(ROOM_ID_LEN)


def parse_room_id(text: str) -> bytes:
    """Parses 32 hex digits (either case); raises :class:`ValueError` for anything else."""
    if not _ROOM_ID_HEX.fullmatch(text):
        raise ValueError("a room id is 32 hexadecimal digits")
    return bytes.fromhex(text)


def room_id_hex(room_id: bytes) -> str:
    """The 32 lowercase hex digits of a room id, as in mDNS ``rid=`` (§10)."""
    if len(room_id) != ROOM_ID_LEN:
        raise ValueError("a room id is 16 bytes")
    return room_id.hex()
