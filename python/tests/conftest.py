# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared helpers: where the repository's vectors and word lists are, fixed randomness, a
private system bus."""

from __future__ import annotations

import io
import json
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
VECTORS_DIR = REPO_ROOT / "src" / "core" / "tests" / "vectors"
RUST_WORDLISTS_DIR = REPO_ROOT / "src" / "core" / "wordlists"
PYTHON_DIR = REPO_ROOT / "python"


def load_cases(name: str) -> list[dict]:
    """The ``cases`` of one ``src/core/tests/vectors/*.json`` file (§12.1)."""
    return json.loads((VECTORS_DIR / name).read_text(encoding="utf-8"))["cases"]


def fixed_entropy(byte: int):
    """The vectors' RNG: the same byte repeated (§12.3)."""
    return lambda n: bytes([byte]) * n


@pytest.fixture
def vectors():
    return load_cases


@pytest.fixture
def ctrl_c_while_printing(monkeypatch):
    """``ctrl_c_while_printing(*lines)`` replaces stdout with one that raises
    KeyboardInterrupt while printing any of ``lines``, as a Ctrl+C would arrive, and returns
    the list of everything written to it."""
    def install(*lines: str) -> list[str]:
        written: list[str] = []

        class Interrupting(io.StringIO):
            def write(self, text: str) -> int:
                written.append(text)
                if text in lines:
                    raise KeyboardInterrupt
                return len(text)

        monkeypatch.setattr("sys.stdout", Interrupting())
        return written

    return install


@pytest.fixture
def system_bus(monkeypatch):
    """A private dbus-daemon, made this process's system bus through
    DBUS_SYSTEM_BUS_ADDRESS (which subprocesses inherit); yields its address."""
    from fake_partagpud import DBUS_DAEMON, private_bus

    if DBUS_DAEMON is None:
        pytest.skip("dbus-daemon is not installed (Debian package dbus)")
    with private_bus() as address:
        monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", address)
        yield address
