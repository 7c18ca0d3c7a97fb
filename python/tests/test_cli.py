# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m partagpu.pgr`` as subprocesses: serve and connect with right and wrong codes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR

ROOM_ID = "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
CODE = "Élève  Zénith-abaisser_zeste"  # French, accents and mixed separators
WRONG_CODE = "eleve zenith abaisser zoologie"
SECRET_FORMS = ["eleve", "élève", "zenith", "zénith", "abaisser", "zeste", "zoologie", "Élève"]


def run_cli(*args, code=None, timeout=30):
    env = {k: v for k, v in os.environ.items() if k != "PARTAGPU_CODE"}
    env["PYTHONPATH"] = str(PYTHON_DIR)
    if code is not None:
        env["PARTAGPU_CODE"] = code
    return subprocess.run([sys.executable, "-m", "partagpu.pgr", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def server():
    """A ``serve`` process on a free port; yields (port, process) and checks it exits 0."""
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), PARTAGPU_CODE=CODE)
    process = subprocess.Popen(
        [sys.executable, "-m", "partagpu.pgr", "serve", "127.0.0.1:0", "--room-id", ROOM_ID,
         "--epoch", "7", "--label", "salle 12", "--max-connections", "4"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    listening = json.loads(process.stdout.readline())
    assert listening["event"] == "listening" and listening["port"] > 0
    yield listening["port"], process
    if process.poll() is None:
        process.kill()
    process.wait(10)


def no_secret_in(text):
    lowered = text.lower()
    return not any(form.lower() in lowered for form in SECRET_FORMS)


def test_serve_and_connect(server):
    port, process = server
    address = f"127.0.0.1:{port}"
    ok = run_cli("connect", address, "--room-id", ROOM_ID, "--epoch", "7", code=CODE)
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout)
    assert result["result"] == "ok" and len(result["peer_node_id"]) == 32
    assert len(result["peer_fingerprint"].split(" ")) == 6
    assert result["hello"] == {"purpose": "control", "versions": [1], "caps": [],
                               "room": {"label": "salle 12", "epoch": 7}}
    assert ok.stdout.count("\n") == 1 and ok.stderr == ""

    wrong = run_cli("connect", address, "--room-id", ROOM_ID, "--epoch", "7", code=WRONG_CODE)
    assert wrong.returncode == 3 and wrong.stderr.startswith("wrong code: ") and wrong.stdout == ""
    old_epoch = run_cli("connect", address, "--room-id", ROOM_ID, "--epoch", "6", code=CODE)
    assert old_epoch.returncode == 3
    other_room = run_cli("connect", address, "--room-id", "00" * 16, "--epoch", "7", code=CODE)
    assert other_room.returncode == 4 and other_room.stdout == ""

    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    peer_id = events[0].get("peer_node_id")
    expected = [
        {"event": "session", "peer_node_id": peer_id, "source": "127.0.0.1"},
        {"event": "closed", "peer_node_id": peer_id},
        {"event": "wrong-code", "source": "127.0.0.1"},
        {"event": "wrong-code", "source": "127.0.0.1"},
        {"event": "wrong-room", "source": "127.0.0.1"},
    ]
    # Connections are served in threads: only one connection's own events are ordered.
    assert events[0] == expected[0]
    assert sorted(map(json.dumps, events)) == sorted(map(json.dumps, expected))
    assert len(peer_id) == 32 and peer_id != result["peer_node_id"]
    for text in (out, err, wrong.stderr, old_epoch.stderr, other_room.stderr):
        assert no_secret_in(text)
    # The client's stdout has the six fingerprint words, never the code.
    assert no_secret_in(ok.stdout.replace(result["peer_fingerprint"], ""))


def test_a_typo_fails_locally_with_the_position(server):
    port, process = server
    typo = run_cli("connect", f"127.0.0.1:{port}", "--room-id", ROOM_ID, code="eleve zenith abaiser zeste")
    assert typo.returncode == 2 and "word 3" in typo.stderr and "abaiser" not in typo.stderr
    assert no_secret_in(typo.stderr) and typo.stdout == ""
    missing = run_cli("connect", f"127.0.0.1:{port}", "--room-id", ROOM_ID)
    assert missing.returncode == 2 and "empty" in missing.stderr
    # Nothing reached the server: a malformed client (57 raw bytes) is its first event.
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(39))
        assert raw.recv(10) == b""
    # The server logs after closing; read its line before stopping it.
    assert json.loads(process.stdout.readline()) == {"event": "malformed", "source": "127.0.0.1"}
    process.terminate()
    out, _ = process.communicate(timeout=10)
    assert out == ""


def test_usage_errors_are_not_exit_2():
    assert run_cli("connect", "127.0.0.1:1", "--room-id", "xyz", code=CODE).returncode == 1
    assert run_cli("connect", "nowhere", "--room-id", ROOM_ID, code=CODE).returncode == 1
    refused = run_cli("connect", "127.0.0.1:1", "--room-id", ROOM_ID, code=CODE)
    assert refused.returncode == 1 and no_secret_in(refused.stderr)


def test_bench_prints_one_json_object():
    bench = run_cli("bench", "--seconds", "0.05", timeout=120)
    assert bench.returncode == 0, bench.stderr
    numbers = json.loads(bench.stdout)
    assert set(numbers) == {"handshake_ms", "handshake_cpu_ms", "argon2id_ms", "record_mib_s",
                            "memcpy_mib_s", "record_vs_memcpy"}
    assert all(value > 0 for value in numbers.values())
    assert numbers["record_vs_memcpy"] == pytest.approx(numbers["record_mib_s"] / numbers["memcpy_mib_s"], rel=0.01)
