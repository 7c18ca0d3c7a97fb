# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m partagpu peers [--json]`` as a subprocess against a fake partagpud."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import PYTHON_DIR
from fake_partagpud import fake_partagpud
from fleet_samples import GIB, GPU_UUID, LOCAL_ID, ROOM_ID, fleet_properties

MEMBER_KEYS = {"node_id", "fingerprint", "name", "local", "verified", "online", "address",
               "last_seen_ms", "updated_ms", "version", "state", "limits", "cpu", "memory",
               "load_average", "gpus", "gpu_status", "jobs_running", "runtimes"}


def run_peers(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    # DBUS_SYSTEM_BUS_ADDRESS comes from the system_bus fixture through os.environ.
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    return subprocess.run([sys.executable, "-m", "partagpu", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_json_has_the_shape_partagpuctl_prints(system_bus):
    sent_at = now_ms()
    with fake_partagpud(system_bus, fleet_properties(now_ms=sent_at)):
        result = run_peers("peers", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)  # one document, nothing around it
    assert set(document) == {"room", "members", "unverified", "other_rooms", "interfaces"}
    assert document["room"] == {"room_id": ROOM_ID, "label": "salle 12"}
    assert [member["name"] for member in document["members"]] == ["pc-01", "pc-02", "pc-03"]
    for member in document["members"]:
        assert set(member) == MEMBER_KEYS
    local = document["members"][0]
    assert local == {
        "node_id": LOCAL_ID, "fingerprint": "abandon ability able about above absent",
        "name": "pc-01", "local": True, "verified": True, "online": True, "address": None,
        "last_seen_ms": sent_at, "updated_ms": sent_at - 1500, "version": "0.1.0",
        "state": "sharing",
        "limits": {"cpu_percent": 50, "ram_bytes": 4 * GIB, "gpu_percent": 75},
        "cpu": {"model": "AMD Ryzen 7 5800X", "cores": 16, "usage_percent": 12.5},
        "memory": {"total_bytes": 32 * GIB, "available_bytes": 24 * GIB},
        "load_average": [0.5, 0.25, 0.125],
        "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3060", "uuid": GPU_UUID,
                  "memory_total_bytes": 12 * GIB, "memory_used_bytes": 3 * GIB,
                  "utilization_percent": 40}],
        "gpu_status": "available", "jobs_running": 1,
        "runtimes": [{"name": "torch", "python": "3.12.3", "torch": "2.5.1+cu121", "cuda": "12.1"},
                     {"name": "system", "python": "3.12.3", "torch": None, "cuda": None}]}
    assert document["members"][2]["updated_ms"] is None
    assert document["members"][1]["address"] == "10.0.0.5:7655"
    assert document["unverified"] == [{"address": "10.0.0.9:7655",
                                       "problem": "the room code did not match"}]
    assert document["other_rooms"] == [{"label": "salle 13", "machines": 4}, {"label": "", "machines": 1}]
    assert document["interfaces"][0] == {"name": "eth0", "address": "10.0.0.4/24"}


def test_json_outside_a_room_has_a_null_room(system_bus):
    with fake_partagpud(system_bus, fleet_properties(now_ms=now_ms(), joined=False)):
        result = run_peers("peers", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["room"] is None and len(document["members"]) == 1


def test_human_output_is_a_table(system_bus):
    with fake_partagpud(system_bus, fleet_properties(now_ms=now_ms())):
        result = run_peers("peers")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Room 'salle 12' ({ROOM_ID}), 3 machines"
    assert lines[1].split() == ["NAME", "STATE", "CPU", "RAM", "GPU", "JOBS", "LENDS", "ADDRESS",
                                "ONLINE", "RUNTIMES"]
    # Columns line up: every cell starts where its heading does.
    starts = [lines[1].index(heading) for heading in ("STATE", "JOBS", "LENDS", "ONLINE", "RUNTIMES")]
    local, online, offline = lines[2:5]
    assert [local[start - 2:start] for start in starts] == ["  "] * 5
    assert local.split("  ")[0] == "pc-01 (this machine)"
    assert local[starts[0]:].startswith("sharing")
    for row, cells in [
        (local, ["sharing", "16 CPUs 12%", "32.0 GiB 25%", "1 GPU 40%", "1",
                 "CPU 50% RAM 4.0 GiB GPU 75%", "-", "yes",
                 "torch (torch 2.5.1+cu121) · system (Python 3.12.3)"]),
        (online, ["paused", "2 CPUs 87%", "8.0 GiB 75%", "unavailable", "3",
                  "CPU 25% RAM 512 MiB GPU 0%", "10.0.0.5:7655", "yes", "cpu (torch 2.5.1+cpu)"]),
        (offline, ["unknown", "0 CPUs 0%", "-", "unavailable", "-", "CPU 0% RAM 0 B GPU 0%", "-",
                   "no, seen 5 min ago", "none"]),
    ]:
        assert [cell.strip() for cell in row.split("  ") if cell.strip()][1:] == cells
    assert lines[5:] == [
        "Not verified: 10.0.0.9:7655 (the room code did not match)",
        "Other room on the network: salle 13, 4 machines",
        "Other room on the network: (no label), 1 machine",
        "Discovery on: eth0 10.0.0.4/24, wlan0 192.168.1.20/24",
    ]


def test_no_service_is_one_line_on_stderr_and_status_1(system_bus):
    result = run_peers("peers", "--json")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("partagpu peers: partagpud is not running on this machine: no "
                             f"org.partagpu.PartaGPU.Daemon on the system bus at {system_bus} "
                             "(from DBUS_SYSTEM_BUS_ADDRESS)\n")


def test_unreachable_bus_is_status_1(monkeypatch):
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/partagpu/bus")
    result = run_peers("peers")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("partagpu peers: cannot connect to the system bus at "
                                    "unix:path=/nonexistent/partagpu/bus (from DBUS_SYSTEM_BUS_ADDRESS)")
    assert result.stderr.count("\n") == 1


def test_usage_mistakes_are_status_1():
    missing = run_peers()
    assert missing.returncode == 1 and "COMMAND" in missing.stderr and missing.stdout == ""
    bad_timeout = run_peers("peers", "--timeout", "0")
    assert bad_timeout.returncode == 1 and "--timeout" in bad_timeout.stderr
