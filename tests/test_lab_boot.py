# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab imaging (issue 8): three virtual-lab machines start at the same moment with the same
`[room]` (label and code) in their partagpu.toml and no room command; they end as verified
members of one room, and the code appears in no log, journal or partagpuctl output. A machine
whose config holding the code is world-readable joins nothing and says why; one booted cut
off from the others makes its own room, which merges with theirs once the link is back; an
owner who leaves the room stays out after a restart.

Run as root (scripts/test does). Wrap in `flock /tmp/partagpu-lab.lock` when other sessions
share the host: only one lab can be up.
"""

import json
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path

from conftest import code_leaks
from test_virtual_lab import LAB_DIR, REPO, clean_lab, lab, lab_ok, on, run  # noqa: F401  (fixture)
from test_lab_fleet import wait_until

LABEL = "Salle B12"
MACHINES = (1, 2, 3)


def pick_code():
    """Four random French words that no English list, fingerprint (English words) or message
    of the project can contain, so that each word alone can be searched for."""
    english = set((REPO / "src/core/wordlists/english.txt").read_text().split())
    prose = " ".join(p.read_text(errors="replace").lower()
                     for pattern in ("src/**/*.rs", "docs/*.md")
                     for p in REPO.glob(pattern))
    french = [w for w in (REPO / "src/core/wordlists/french.txt").read_text().split()
              if len(w) >= 6 and w.isascii() and w not in english
              and not re.search(rf"\b{re.escape(w)}\b", prose)]
    return [secrets.choice(french) for _ in range(4)]


def ctl_json(machine, *args, outputs):
    result = on(machine, "partagpuctl", *args, "--json", timeout=30)
    assert result.returncode == 0, result.stderr
    outputs.append(result.stdout + result.stderr)
    return json.loads(result.stdout)


def one_room(outputs):
    """The room id when every machine is in the same room and sees the two others online."""
    shows = [ctl_json(m, "room", "show", outputs=outputs) for m in MACHINES]
    ids = {show["room_id"] for show in shows}
    if len(ids) != 1 or "" in ids:
        return None
    for machine in MACHINES:
        fleet = ctl_json(machine, "peers", outputs=outputs)
        others = [p for p in fleet["members"] if not p["local"] and p["online"] and p["verified"]]
        if fleet["room"] is None or len(others) != 2:
            return None
    return ids.pop()


def events(machine, outputs):
    return ctl_json(machine, "security-log", outputs=outputs)


def test_machines_imaged_with_a_room_join_it_at_boot(clean_lab):
    words = pick_code()
    outputs = []
    extra = Path(tempfile.mkdtemp(prefix="partagpu-boot-")) / "room.toml"
    try:
        extra.write_text(f'[room]\nlabel = "{LABEL}"\ncode = "{" ".join(words)}"\n')
        extra.chmod(0o600)
        up = lab("up", "3", env=dict(os.environ, PARTAGPU_LAB_EXTRA_CONFIG=str(extra)))
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        outputs.append(up.stdout + up.stderr)
    finally:
        shutil.rmtree(extra.parent)

    room_id, took = wait_until("one room of three verified members", lambda: one_room(outputs), 60, 1)
    print(f"one room after {took:.1f} s")
    assert ctl_json(1, "room", "show", outputs=outputs)["label"] == LABEL
    journals = {m: events(m, outputs) for m in MACHINES}
    for machine, log in journals.items():
        config_room = [e for e in log if e["kind"] == "config-room"]
        assert config_room, f"machine {machine}: {log}"
        assert all(e["severity"] == "info" for e in config_room), config_room
    messages = [e["message"] for log in journals.values() for e in log if e["kind"] == "config-room"]
    assert any(m.startswith("Created the room") for m in messages), messages
    assert any(room_id in m and ("Joined" in m or "Moved" in m) for m in messages), messages

    # Machines 1 and 2 dial machine 3 (a job each), as when a machine joins the room through
    # another: each then knows machine 3's key at the address it dials, so a new key there is
    # a key change for them (below).
    for machine in (1, 2):
        ran = on(machine, "partagpuctl", "run", "--node", "lab-3", "--", "true", timeout=60)
        assert ran.returncode == 0, f"{ran.stdout}\n{ran.stderr}"
        outputs.append(ran.stdout + ran.stderr)

    # Machine 3 is imaged again with the code in a world-readable file: it joins nothing.
    lab_ok("stop", "3")
    shutil.rmtree(LAB_DIR / "m3" / "state")
    (LAB_DIR / "m3" / "partagpu.toml").chmod(0o644)
    lab_ok("start", "3")
    refused, _ = wait_until("the refusal in machine 3's journal", lambda: [
        e for e in events(3, outputs) if e["kind"] == "config-code-refused"], 20, 0.5)
    assert refused[0]["severity"] == "warning" and "mode 0644" in refused[0]["message"], refused
    # Machines 1 and 2 announce the room all along: long enough for a join to have happened.
    wait_until("machine 3 to see the room", lambda: any(
        r["room_id"] == room_id for r in ctl_json(3, "room", "list", outputs=outputs)), 20, 1)
    assert not ctl_json(3, "room", "show", outputs=outputs)["joined"]
    assert not any(e["kind"] == "config-room" for e in events(3, outputs))

    # Machine 3 is fixed (0600) but boots cut off from the lab: it creates its own room. When
    # its link comes back, the two rooms (same label, same code) become one, the lower id's.
    # Its state is wiped, so it also has a new identity key, which machines 1 and 2 knew
    # another of at its address. Room ids are random: it boots again (up to 6 times) until its
    # room is the lower one, the case where the others must join a machine whose key changed
    # (it left the lab split before protocol.md §11 "Pins belong to a room").
    (LAB_DIR / "m3" / "partagpu.toml").chmod(0o600)
    link = ["ip", "-n", "pglab-3", "link", "set", "eth0"]
    assert run([*link, "down"]).returncode == 0
    try:
        for attempt in range(1, 7):
            lab_ok("stop", "3")
            shutil.rmtree(LAB_DIR / "m3" / "state")
            lab_ok("start", "3")
            alone, _ = wait_until("machine 3 to create a room alone", lambda: ctl_json(
                3, "room", "show", outputs=outputs)["room_id"], 30, 1)
            assert alone != room_id
            if alone < room_id:
                break
        print(f"machine 3's room is the {'lower' if alone < room_id else 'higher'} one "
              f"after {attempt} boot(s) cut off")
    finally:
        assert run([*link, "up"]).returncode == 0
    merged, took = wait_until("one room again", lambda: one_room(outputs), 60, 1)
    print(f"merged after {took:.1f} s")
    assert merged == min(alone, room_id)
    moved = [e["message"] for m in MACHINES for e in events(m, outputs)
             if e["kind"] == "config-room" and e["message"].startswith("Moved")]
    # (Moves of the first boot may be there too: machines 1-3 may have made two rooms.)
    assert any(f"from the room {max(alone, room_id)} to" in m and merged in m for m in moved), moved

    # An owner who leaves the room stays out after a restart: the state directory wins.
    left = on(2, "partagpuctl", "room", "leave")
    assert left.returncode == 0, left.stderr
    outputs.append(left.stdout + left.stderr)
    lab_ok("restart", "2")
    wait_until("machine 2 to see the room", lambda: any(
        r["room_id"] == merged for r in ctl_json(2, "room", "list", outputs=outputs)), 20, 1)
    assert not ctl_json(2, "room", "show", outputs=outputs)["joined"]
    log = (LAB_DIR / "m2" / "partagpud.log").read_text()
    assert "start=LeftIt" in log.rsplit("--- virtual-lab: starting partagpud", 1)[1], log[-2000:]

    # The code is only in the two 0600 files meant to hold it.
    checked = 0
    for path in Path(LAB_DIR).rglob("*"):
        if not path.is_file():
            continue
        if path.name in ("secrets.json", "partagpu.toml"):
            assert path.stat().st_mode & 0o777 == 0o600, path
            continue
        outputs.append(path.read_bytes().decode("utf-8", "replace"))
        checked += 1
    assert checked >= 9, "no logs were checked"
    for text in outputs:
        assert not code_leaks(text, words)
        for word in words:
            assert not re.search(rf"\b{word}\b", text, re.IGNORECASE), f"a code word is in:\n{text[:2000]}"
