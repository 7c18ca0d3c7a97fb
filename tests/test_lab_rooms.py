# SPDX-License-Identifier: GPL-3.0-or-later
"""Rooms across a 3-machine virtual lab, found over real mDNS between network namespaces:
the acceptance steps of issue 3, plus the Python implementation against a lab machine.

Run as root (scripts/test does). PARTAGPU_PYTHON names an interpreter with the `partagpu`
package and its dependencies (scripts/test sets it to its cached venv).
"""

import json
import os
import re
from pathlib import Path

import pytest

from conftest import code_leaks
from test_virtual_lab import LAB_DIR, REPO, clean_lab, lab_ok, on  # noqa: F401  (fixture)

PYTHON = os.environ.get("PARTAGPU_PYTHON")


def room_show(machine):
    result = on(machine, "partagpuctl", "room", "show", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def kinds(machine):
    result = on(machine, "partagpuctl", "security-log", "--json")
    assert result.returncode == 0, result.stderr
    return [event["kind"] for event in json.loads(result.stdout)]


def python_connect(machine, target, room_id, code):
    # The code goes through stdin and the environment, never argv.
    script = (f'read -r PARTAGPU_CODE; export PARTAGPU_CODE; cd {REPO / "python"} && '
              f'exec {PYTHON} -m partagpu.pgr connect {target} --room-id {room_id}')
    return on(machine, "bash", "-c", script, input=code + "\n", timeout=60)


def test_rooms_across_the_lab(clean_lab):
    lab_ok("up", "3")
    created = on(1, "partagpuctl", "room", "new", "--label", "Salle B12")
    assert created.returncode == 0, created.stderr
    lines = [line.strip() for line in created.stdout.splitlines() if line.strip()]
    code = lines[1].split()
    assert len(code) == 4 and lines[0] == 'Room "Salle B12" created. Its code, shown once:'

    for machine in (2, 3):
        joined = on(machine, "partagpuctl", "room", "join", *code)
        assert joined.returncode == 0, joined.stderr
        assert 'Joined the room "Salle B12"' in joined.stdout
    room_ids = {room_show(machine)["room_id"] for machine in (1, 2, 3)}
    assert len(room_ids) == 1 and len(room_ids.pop()) == 32

    # One wrong word: a clear refusal, journalled by the joiner and by the member it tried.
    on(3, "partagpuctl", "room", "leave")
    wrong = ["zoo" if code[0] != "zoo" else "abandon", *code[1:]]
    refused = on(3, "partagpuctl", "room", "join", *wrong)
    assert refused.returncode == 1
    tried = re.search(r"machine at (10\.98\.0\.(\d))", refused.stderr)
    assert refused.stderr.startswith("partagpuctl: wrong code") and tried, refused.stderr
    member = int(tried.group(2))
    assert "wrong-code" in kinds(3)
    assert "wrong-code" in kinds(member)
    # mDNS lists the members in any order, so the guesses may spread over machines 1 and 2:
    # each bans machine 3 at its fifth, so ten tries are enough for one ban at least.
    banned_by = None
    for _ in range(9):
        on(3, "partagpuctl", "room", "join", *wrong)
        banned_by = next((m for m in (1, 2) if "ban" in kinds(m)), None)
        if banned_by:
            break
    assert banned_by, (kinds(1), kinds(2))
    log = json.loads(on(banned_by, "partagpuctl", "security-log", "--json").stdout)
    ban = [e for e in log if e["kind"] == "ban"]
    assert ban[0]["source"] == "10.98.0.3" and ban[0]["severity"] == "critical"

    # The Python implementation from machine 3 (its own stack, not the service there).
    assert PYTHON, "set PARTAGPU_PYTHON to a Python with the partagpu package (scripts/test does)"
    # Machine 3 talks to the member that has not banned it.
    other = 3 - banned_by
    target = f"10.98.0.{other}:7655"
    room_id = room_show(1)["room_id"]
    ok = python_connect(3, target, room_id, " ".join(code))
    assert ok.returncode == 0, ok.stderr
    answer = json.loads(ok.stdout)
    assert answer["result"] == "ok" and answer["peer_node_id"] == room_show(other)["node_id"]
    assert answer["hello"]["room"]["label"] == "Salle B12"
    bad = python_connect(3, target, room_id, " ".join(wrong))
    assert bad.returncode == 3 and "wrong code" in bad.stderr

    # The words are nowhere on disk or in a log but the 0600 secrets files.
    for path in Path(LAB_DIR).rglob("*"):
        if not path.is_file():
            continue
        leaks = code_leaks(path.read_bytes().decode("utf-8", "replace"), code)
        if path.name == "secrets.json":
            assert path.stat().st_mode & 0o777 == 0o600
            continue
        assert not leaks, f"{path} contains the room code"
