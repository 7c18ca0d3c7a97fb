# SPDX-License-Identifier: GPL-3.0-or-later
"""Rooms through the real service: `partagpuctl room …` against partagpud on private system
buses, two machines talking PGR/1 over TCP on 127.0.0.1 (mDNS is tested in the virtual lab).

Checks what a user sees (messages, exit codes) and what is left on disk: the code only in the
0600 secrets file, never in another file, the log, a property or an error message.
"""

import json
import os
import stat

import pytest

from conftest import NOBODY, Bus, Daemon, code_leaks, ctl, wait_for

MANAGE = "org.partagpu.PartaGPU.Daemon.manage-room"
REVEAL = "org.partagpu.PartaGPU.Daemon.reveal-code"


def create(bus, label="Salle B12"):
    result = ctl(bus, "room", "new", "--label", label, check=True)
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    code = lines[1].split()
    assert len(code) == 4, result.stdout
    return code


def show(bus):
    return json.loads(ctl(bus, "room", "show", "--json", check=True).stdout)


def journal(bus):
    return json.loads(ctl(bus, "security-log", "--json", check=True).stdout)


def files_containing(root, words):
    found = set()
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            if code_leaks(open(path, "rb").read().decode("utf-8", "replace"), words):
                found.add(os.path.relpath(path, root))
    return found


@pytest.fixture
def second(workdir):
    root = workdir / "m2"
    root.mkdir(mode=0o755)
    bus = Bus(root)
    machine = root / "machine"
    machine.mkdir(mode=0o755)
    daemon = Daemon(bus, machine, peer_port=17656).start()
    yield daemon
    daemon.stop()
    bus.stop()


def join(daemon, creator, words, *extra):
    room_id = show(creator.bus)["room_id"]
    return ctl(daemon.bus, "room", "join", *words, "--peer", f"127.0.0.1:{creator.peer_port}", "--room", room_id,
               *extra)


def test_a_new_room_shows_its_code_once_and_keeps_it_only_in_the_secrets_file(daemon, machine_dir):
    before = show(daemon.bus)
    assert before["joined"] is False and len(before["fingerprint"].split()) == 6
    code = create(daemon.bus)
    info = show(daemon.bus)
    assert info["joined"] and info["label"] == "Salle B12" and info["epoch"] == 0
    assert len(info["room_id"]) == 32 and info["node_id"] == before["node_id"]
    assert not code_leaks(json.dumps(info), code)
    secrets = daemon.state_dir / "secrets.json"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert files_containing(machine_dir, code) == {"state/secrets.json"}
    again = ctl(daemon.bus, "room", "new")
    assert again.returncode == 1 and "already in the room" in again.stderr
    daemon.restart()
    assert show(daemon.bus) == info
    assert ctl(daemon.bus, "room", "reveal", check=True).stdout.split() == code


def test_reveal_needs_its_own_polkit_action(daemon, polkit):
    code = create(daemon.bus)
    polkit.allow(MANAGE)
    refused = ctl(daemon.bus, "room", "reveal", user=NOBODY)
    assert refused.returncode == 1 and "not authorized to see the room code" in refused.stderr
    assert not code_leaks(refused.stderr + refused.stdout, code)
    polkit.allow(MANAGE, REVEAL)
    assert ctl(daemon.bus, "room", "reveal", user=NOBODY, check=True).stdout.split() == code
    assert [action for _, _, action in polkit.checks()] == [REVEAL, REVEAL]


def test_two_machines_join_and_a_wrong_code_is_refused_on_both_sides_then_banned(daemon, second):
    code = create(daemon.bus)
    joined = join(second, daemon, code)
    assert joined.returncode == 0, joined.stderr
    assert "Joined the room \"Salle B12\"" in joined.stdout
    assert show(second.bus)["room_id"] == show(daemon.bus)["room_id"]
    assert show(second.bus)["label"] == "Salle B12"
    assert [e["kind"] for e in journal(second.bus)] == ["new-machine"]
    wait_for(lambda: "new-machine" in [e["kind"] for e in journal(daemon.bus)], what="the server's pin")

    ctl(second.bus, "room", "leave", check=True)
    wrong = ["zoo" if code[0] != "zoo" else "abandon", *code[1:]]
    refused = join(second, daemon, wrong)
    assert refused.returncode == 1
    assert refused.stderr.startswith("partagpuctl: wrong code"), refused.stderr
    assert not code_leaks(refused.stderr, code[1:])
    assert show(second.bus)["joined"] is False, "nothing is saved after a refused code"
    assert "wrong-code" in [e["kind"] for e in journal(second.bus)]
    wait_for(lambda: "wrong-code" in [e["kind"] for e in journal(daemon.bus)], what="the server's journal")
    for _ in range(4):
        join(second, daemon, wrong)
    wait_for(lambda: "ban" in [e["kind"] for e in journal(daemon.bus)], what="a ban")
    ban = next(e for e in journal(daemon.bus) if e["kind"] == "ban")
    assert ban["source"] == "127.0.0.1" and ban["severity"] == "critical"
    throttled = join(second, daemon, code)
    assert throttled.returncode == 1 and "too many wrong codes" in throttled.stderr
    for log in (daemon.log, second.log):
        assert not code_leaks(log.read_text(), code), log


def test_a_typo_is_refused_locally_and_spends_no_guess(daemon, second):
    code = create(daemon.bus)
    typo = [*code[:3], "zzzz"]
    result = join(second, daemon, typo)
    assert result.returncode == 1 and "word 4" in result.stderr, result.stderr
    assert journal(second.bus) == [] and journal(daemon.bus) == []


def test_rotation_changes_the_code_and_epoch_and_members_rejoin(daemon, second):
    code = create(daemon.bus)
    assert join(second, daemon, code).returncode == 0
    rotated = ctl(daemon.bus, "room", "rotate", check=True)
    new_code = [line for line in rotated.stdout.splitlines() if line.strip()][1].split()
    assert new_code != code and show(daemon.bus)["epoch"] == 1
    old = join(second, daemon, code, "--epoch", "1")
    assert old.returncode == 1 and "wrong code" in old.stderr
    rejoined = join(second, daemon, new_code, "--epoch", "1")
    assert rejoined.returncode == 0, rejoined.stderr
    assert show(second.bus)["epoch"] == 1
    assert ctl(second.bus, "room", "reveal", check=True).stdout.split() == new_code
