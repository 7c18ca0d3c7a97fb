# SPDX-License-Identifier: GPL-3.0-or-later
"""A lab imaged from one PC on which the service had already run: its state directory
(identity seed, pins, room, policy, jobs) is copied onto the others with the disk.

Each virtual-lab machine has its own machine id (`mI/machine-id`, given to partagpud with
`--machine-id-file`), as each PC of a lab does once imaged. A copied state directory then
takes a new identity, its own name and none of the other machine's pins or jobs, and keeps
the room. When the machine id is copied too, the two machines with one key refuse each other
and both journals say why; a new machine id fixes it.

Run as root (scripts/test does). Wrap in `flock /tmp/partagpu-lab.lock` when other sessions
share the host: only one lab can be up.
"""

import json
import shutil
import time

from test_virtual_lab import LAB_DIR, clean_lab, lab_ok, on  # noqa: F401  (fixture)
from test_lab_fleet import wait_until


def ctl_json(machine, *args):
    result = on(machine, "partagpuctl", *args, "--json", timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def node_id(machine):
    return ctl_json(machine, "room", "show")["node_id"]


def kinds(machine, kind):
    return [e for e in ctl_json(machine, "security-log") if e["kind"] == kind]


def verified_online(machine):
    """Names of the other members machine sees online and verified."""
    return sorted(m["name"] for m in ctl_json(machine, "peers")["members"]
                  if not m["local"] and m["online"] and m["verified"] and m["state"])


def image_machine_1_onto(machine, with_machine_id=False):
    """Machine `machine` gets machine 1's disk: its state directory (and its machine id)."""
    lab_ok("stop", str(machine))
    target = LAB_DIR / f"m{machine}"
    shutil.rmtree(target / "state")
    shutil.copytree(LAB_DIR / "m1" / "state", target / "state", symlinks=True,
                    ignore=shutil.ignore_patterns("lock"))
    if with_machine_id:
        shutil.copyfile(LAB_DIR / "m1" / "machine-id", target / "machine-id")
    lab_ok("start", str(machine))


def test_a_state_directory_copied_with_the_disk_takes_its_own_identity(clean_lab):
    lab_ok("up", "3")
    created = on(1, "partagpuctl", "room", "new", "--label", "Salle B12")
    assert created.returncode == 0, created.stderr
    code = created.stdout.splitlines()[2].split()
    joined = on(2, "partagpuctl", "room", "join", *code)
    assert joined.returncode == 0, joined.stderr
    wait_until("machine 1 and 2 linked", lambda: verified_online(1) == ["lab-2"], 30, 0.5)
    # Machine 1 follows a job it submitted to machine 2 when its disk is imaged.
    detached = on(1, "partagpuctl", "run", "--node", "lab-2", "--detach", "--", "sleep", "300", timeout=60)
    assert detached.returncode == 0, detached.stderr
    handle = detached.stdout.strip()
    job = handle.split("-")[1][:8]
    first = node_id(1)

    image_machine_1_onto(3)
    copy = node_id(3)
    assert copy != first and ctl_json(3, "room", "show")["room_id"] == ctl_json(1, "room", "show")["room_id"]
    [copied] = kinds(3, "copied-state")
    assert copied["severity"] == "warning" and first in copied["message"] and '"lab-3"' in copied["message"]
    # Its own name, and a member with its own key: all three see each other.
    assert ctl_json(3, "status")["display_name"] == "lab-3"
    members, took = wait_until("three members, each seeing the two others", lambda: all(
        verified_online(m) == sorted({"lab-1", "lab-2", "lab-3"} - {f"lab-{m}"}) for m in (1, 2, 3)), 60, 1)
    print(f"the copy is a member after {took:.1f} s")
    assert not any(kinds(m, "key-changed") or kinds(m, "same-identity") for m in (1, 2, 3))
    # Machine 1's job is still machine 1's; the copy of its record ends, and says why.
    record = next(r for r in ctl_json(3, "jobs") if r["id"].startswith(job))
    assert record["state"] == "lost" and "copied from the machine" in record["reason"], record
    assert next(r for r in ctl_json(1, "jobs") if r["id"].startswith(job))["state"] == "running"
    cancelled = on(1, "partagpuctl", "job", "cancel", handle, timeout=60)
    assert cancelled.returncode == 0, cancelled.stderr

    # Imaged again, machine id included: two machines with one key. Each refuses the other and
    # says so; the room goes on without the copy.
    image_machine_1_onto(3, with_machine_id=True)
    assert node_id(3) == first and not kinds(3, "copied-state")
    for machine, other in ((1, "10.98.0.3"), (3, "10.98.0.1")):
        same, _ = wait_until(f"machine {machine} to refuse its copy", lambda: kinds(machine, "same-identity"), 60, 1)
        assert same[0]["severity"] == "critical" and same[0]["source"] == other, same
        assert "/etc/machine-id" in same[0]["message"]
    # Machine 2 cannot tell which of the two is machine 1: it keeps the link it has and
    # refuses the other, rather than swapping between them many times a second.
    [third] = wait_until("machine 2 to refuse one of the two", lambda: kinds(2, "same-identity"), 60, 1)[0][:1]
    assert third["severity"] == "critical" and third["source"] in ("10.98.0.1", "10.98.0.3"), third
    assert "a member already linked from another machine" in third["message"]
    # Neither takes its own key for a new machine.
    assert not [e for m in (1, 3) for e in kinds(m, "new-machine") if e["node_id"] == first]
    assert verified_online(2) == ["lab-1"]
    assert verified_online(1) in ([], ["lab-2"])
    log = LAB_DIR / "m2" / "partagpud.log"
    links_before = log.read_text().count("member linked")
    time.sleep(5)
    links_after = log.read_text().count("member linked")
    assert links_after - links_before <= 2, f"machine 2 keeps relinking: {links_after - links_before} links in 5 s"

    # The admin gives machine 3 its own machine id: it takes a new identity and is a member.
    (LAB_DIR / "m3" / "machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    lab_ok("restart", "3")
    assert node_id(3) not in (first, copy)
    assert len(kinds(3, "copied-state")) == 1
    # Machine 2 takes back whichever of the two it had refused.
    wait_until("machine 3 a member again, and machine 1 and 2 linked again", lambda: (
        verified_online(1) == ["lab-2", "lab-3"] and verified_online(2) == ["lab-1", "lab-3"]), 60, 1)
