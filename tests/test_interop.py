# SPDX-License-Identifier: GPL-3.0-or-later
"""Live interop of the two PGR/1 implementations (docs/protocol.md §13): the Rust service as
server with the Python client, and the Python server with the Rust service as client, each
with the right and a wrong code.

PARTAGPU_PYTHON names an interpreter with the `partagpu` package's dependencies (scripts/test
sets it to its cached venv); the package itself is run from python/.
"""

import json
import os
import subprocess

import pytest

from conftest import REPO, ctl, wait_for

PYTHON = os.environ.get("PARTAGPU_PYTHON")
pytestmark = pytest.mark.skipif(not PYTHON, reason="PARTAGPU_PYTHON is not set (scripts/test sets it)")


def python_pgr(*args, code, timeout=30):
    env = {**os.environ, "PARTAGPU_CODE": code}
    return subprocess.run([PYTHON, "-m", "partagpu.pgr", *args], cwd=REPO / "python", env=env,
                          capture_output=True, text=True, timeout=timeout)


def new_room(bus):
    out = ctl(bus, "room", "new", "--label", "Salle B12", check=True).stdout
    code = [line.strip() for line in out.splitlines() if line.strip()][1]
    info = json.loads(ctl(bus, "room", "show", "--json", check=True).stdout)
    return code, info


def journal_kinds(bus):
    return [e["kind"] for e in json.loads(ctl(bus, "security-log", "--json", check=True).stdout)]


def wrong(code):
    words = code.split()
    return " ".join(["zoo" if words[0] != "zoo" else "abandon", *words[1:]])


def test_python_client_with_the_rust_server(daemon):
    code, info = new_room(daemon.bus)
    target = f"127.0.0.1:{daemon.peer_port}"
    ok = python_pgr("connect", target, "--room-id", info["room_id"], code=code)
    assert ok.returncode == 0, ok.stderr
    answer = json.loads(ok.stdout)
    assert answer["result"] == "ok"
    assert answer["peer_node_id"] == info["node_id"]
    assert answer["peer_fingerprint"] == info["fingerprint"]
    assert answer["hello"]["room"] == {"label": "Salle B12", "epoch": 0}
    wait_for(lambda: "new-machine" in journal_kinds(daemon.bus), what="the service to pin the Python client")

    bad = python_pgr("connect", target, "--room-id", info["room_id"], code=wrong(code))
    assert bad.returncode == 3 and bad.stderr.startswith("wrong code"), bad.stderr
    wait_for(lambda: "wrong-code" in journal_kinds(daemon.bus), what="the service to journal the wrong code")
    typo = python_pgr("connect", target, "--room-id", info["room_id"], code=code.rsplit(" ", 1)[0] + " zzzz")
    assert typo.returncode == 2 and "4" in typo.stderr


class PythonServer:
    def __init__(self, room_id, code, label="Salle Python"):
        env = {**os.environ, "PARTAGPU_CODE": code}
        self.process = subprocess.Popen(
            [PYTHON, "-m", "partagpu.pgr", "serve", "127.0.0.1:0", "--room-id", room_id, "--label", label],
            cwd=REPO / "python", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = json.loads(self.process.stdout.readline())
        assert first["event"] == "listening", first
        self.port = first["port"]

    def next_event(self):
        return json.loads(self.process.stdout.readline())

    def stop(self):
        self.process.kill()
        self.process.wait(10)


def test_the_rust_service_joins_a_python_server(daemon):
    room_id = "0123456789abcdef0123456789abcdef"
    code = "abandon ability able about"
    server = PythonServer(room_id, code)
    try:
        peer = ["--peer", f"127.0.0.1:{server.port}", "--room", room_id]
        bad = ctl(daemon.bus, "room", "join", *wrong(code).split(), *peer)
        assert bad.returncode == 1 and "wrong code" in bad.stderr, bad.stderr
        assert server.next_event()["event"] == "wrong-code"
        joined = ctl(daemon.bus, "room", "join", *code.split(), *peer)
        assert joined.returncode == 0, joined.stderr
        assert 'Joined the room "Salle Python"' in joined.stdout
        session = server.next_event()
        assert session["event"] == "session"
        info = json.loads(ctl(daemon.bus, "room", "show", "--json", check=True).stdout)
        assert session["peer_node_id"] == info["node_id"]
        assert (info["room_id"], info["label"], info["epoch"]) == (room_id, "Salle Python", 0)
        assert ctl(daemon.bus, "room", "reveal", check=True).stdout.strip() == code
    finally:
        server.stop()
