# SPDX-License-Identifier: GPL-3.0-or-later
"""partagpu.discover() and read_fleet() against a fake partagpud on a private dbus-daemon."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import partagpu
from conftest import PYTHON_DIR
from fake_partagpud import FLEET, ROOM, fake_partagpud
from fleet_samples import (
    GIB, GPU_UUID, LOCAL_ID, NOW_MS, OFFLINE_ID, ONLINE_ID, ROOM_ID, fleet_properties,
    local_member, offline_member, online_member,
)
from partagpu import Gpu, Limits, Peer, Runtime, ServiceError, ServiceUnavailableError

NOW = datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=timezone.utc)


def test_discover_lists_this_machine_first_then_members(system_bus):
    with fake_partagpud(system_bus, fleet_properties()) as service:
        peers = partagpu.discover()
    assert [peer.node_id for peer in peers] == [LOCAL_ID, ONLINE_ID, OFFLINE_ID]
    assert [(peer.local, peer.online) for peer in peers] == [(True, True), (False, True), (False, False)]
    # One Get of Fleet1.Members: discover() reads nothing it does not need.
    assert service.calls == [("Get", (FLEET, "Members"))]


def test_discover_decodes_every_key(system_bus):
    with fake_partagpud(system_bus, fleet_properties()):
        local, online, _ = partagpu.discover(timeout=2.0)
    assert local == Peer(
        name="pc-01", node_id=LOCAL_ID, fingerprint="abandon ability able about above absent",
        local=True, verified=True, online=True, address=None, last_seen=NOW,
        updated=NOW - timedelta(milliseconds=1500), version="0.1.0", state="sharing",
        limits=Limits(cpu_percent=50, ram_bytes=4 * GIB, gpu_percent=75),
        cpu_model="AMD Ryzen 7 5800X", cpu_cores=16, cpu_usage_percent=12.5,
        memory_total_bytes=32 * GIB, memory_available_bytes=24 * GIB,
        load_average=(0.5, 0.25, 0.125),
        gpus=(Gpu(index=0, name="NVIDIA GeForce RTX 3060", uuid=GPU_UUID,
                  memory_total_bytes=12 * GIB, memory_used_bytes=3 * GIB, utilization_percent=40),),
        gpu_status="available", jobs_running=1,
        runtimes=(Runtime("torch", "3.12.3", "2.5.1+cu121", "12.1"), Runtime("system", "3.12.3")))
    assert local.last_seen.tzinfo is timezone.utc
    # The member with keys from the future: they are skipped, the known ones still read.
    assert (online.address, online.state, online.cpu_cores, online.gpus) == ("10.0.0.5:7655", "paused", 2, ())
    assert online.gpu_status == "unavailable: no NVML on this machine"
    assert online.limits == Limits(cpu_percent=25, ram_bytes=GIB // 2, gpu_percent=0)
    assert online.jobs_running == 3
    assert online.runtimes == (Runtime(name="cpu", python="3.11.9", torch="2.5.1+cpu", cuda=None),)


def test_missing_keys_take_neutral_defaults(system_bus):
    with fake_partagpud(system_bus, fleet_properties()):
        offline = partagpu.discover()[2]
    assert (offline.name, offline.verified, offline.online) == ("pc-03", True, False)
    assert offline.last_seen == NOW - timedelta(minutes=5)
    assert offline.updated is None and offline.address is None
    assert (offline.fingerprint, offline.version, offline.cpu_model) == ("", "", "")
    assert offline.state == "unknown" and offline.local is False
    assert offline.limits == Limits(0, 0, 0) and offline.gpus == ()
    assert offline.load_average == (0.0, 0.0, 0.0)
    assert offline.gpu_status == "unavailable: not reported"
    assert (offline.jobs_running, offline.runtimes) == (0, ())


def test_this_machine_comes_first_even_when_the_service_lists_it_later(system_bus):
    properties = fleet_properties()
    properties[FLEET]["Members"] = ("aa{sv}", [online_member(), offline_member(), local_member()])
    with fake_partagpud(system_bus, properties):
        assert [peer.name for peer in partagpu.discover()] == ["pc-01", "pc-02", "pc-03"]


def test_repr_is_one_short_line(system_bus):
    with fake_partagpud(system_bus, fleet_properties()):
        local, online, offline = partagpu.discover()
    assert repr(online) == ("Peer('pc-02', paused, online, 2 CPUs 87% busy, 0 GPUs, "
                            "lends CPU 25% RAM 512 MiB GPU 0%)")
    assert str(local) == ("Peer('pc-01', sharing, local, 16 CPUs 12% busy, 1 GPU, "
                          "lends CPU 50% RAM 4.0 GiB GPU 75%)")
    assert repr(offline).startswith("Peer('pc-03', unknown, offline, 0 CPUs")
    assert repr(local.gpus[0]) == "Gpu(0, 'NVIDIA GeForce RTX 3060', 40% busy, 3.0 GiB of 12.0 GiB used)"
    assert repr(local.limits) == "Limits(CPU 50% RAM 4.0 GiB GPU 75%)"


def test_to_json_gives_times_in_ms_and_null_for_unknowns(system_bus):
    with fake_partagpud(system_bus, fleet_properties()):
        local, online, offline = partagpu.discover()
    assert local.to_json()["last_seen_ms"] == NOW_MS
    assert local.to_json()["updated_ms"] == NOW_MS - 1500
    assert local.to_json()["address"] is None and online.to_json()["address"] == "10.0.0.5:7655"
    assert offline.to_json()["updated_ms"] is None
    assert local.to_json()["gpus"][0] == {
        "index": 0, "name": "NVIDIA GeForce RTX 3060", "uuid": GPU_UUID,
        "memory_total_bytes": 12 * GIB, "memory_used_bytes": 3 * GIB, "utilization_percent": 40}
    assert local.to_json()["jobs_running"] == 1
    assert local.to_json()["runtimes"] == [
        {"name": "torch", "python": "3.12.3", "torch": "2.5.1+cu121", "cuda": "12.1"},
        {"name": "system", "python": "3.12.3", "torch": None, "cuda": None}]
    assert local.runtimes[0].describe() == "torch (Python 3.12.3, torch 2.5.1+cu121, CUDA 12.1)"
    assert offline.to_json()["runtimes"] == [] and offline.to_json()["jobs_running"] == 0


def test_read_fleet_reads_room_and_announcements(system_bus):
    with fake_partagpud(system_bus, fleet_properties()) as service:
        fleet = partagpu.read_fleet()
    assert (fleet.room.room_id, fleet.room.label) == (ROOM_ID, "salle 12")
    assert [peer.name for peer in fleet.members] == ["pc-01", "pc-02", "pc-03"]
    document = fleet.to_json()
    assert document["unverified"] == [{"address": "10.0.0.9:7655", "problem": "the room code did not match"}]
    assert document["other_rooms"] == [{"label": "salle 13", "machines": 4}, {"label": "", "machines": 1}]
    assert document["interfaces"] == [{"name": "eth0", "address": "10.0.0.4/24"},
                                      {"name": "wlan0", "address": "192.168.1.20/24"}]
    assert service.calls == [("GetAll", (FLEET,)), ("GetAll", (ROOM,))]


def test_read_fleet_outside_a_room_has_no_room(system_bus):
    with fake_partagpud(system_bus, fleet_properties(joined=False)):
        fleet = partagpu.read_fleet()
    assert fleet.room is None and [peer.name for peer in fleet.members] == ["pc-01"]


def test_a_known_key_of_another_type_is_a_service_error(system_bus):
    properties = fleet_properties()
    broken = online_member()
    broken["cpu_cores"] = ("s", "two")
    properties[FLEET]["Members"] = ("aa{sv}", [local_member(), broken])
    with fake_partagpud(system_bus, properties), pytest.raises(ServiceError) as raised:
        partagpu.discover()
    assert str(raised.value) == (f"partagpud sent 'cpu_cores' of member {ONLINE_ID} as D-Bus type "
                                 "'s', expected 'u'")


def test_a_property_of_another_type_is_a_service_error(system_bus):
    properties = fleet_properties()
    properties[FLEET]["Members"] = ("a(ss)", [("pc-01", "x")])
    with fake_partagpud(system_bus, properties), pytest.raises(ServiceError, match="Members"):
        partagpu.discover()


def test_a_service_without_fleet1_is_too_old(system_bus):
    properties = fleet_properties()
    del properties[FLEET]
    with fake_partagpud(system_bus, properties), pytest.raises(ServiceError) as raised:
        partagpu.discover()
    assert not isinstance(raised.value, ServiceUnavailableError)
    assert "does not offer Fleet1.Members" in str(raised.value)
    assert "UnknownInterface" in str(raised.value)


def test_no_service_on_the_bus(system_bus):
    with pytest.raises(ServiceUnavailableError) as raised:
        partagpu.discover()
    assert str(raised.value) == (
        "partagpud is not running on this machine: no org.partagpu.PartaGPU.Daemon on the "
        f"system bus at {system_bus} (from DBUS_SYSTEM_BUS_ADDRESS)")
    assert isinstance(raised.value, partagpu.PartaGPUError)


def test_importing_partagpu_touches_neither_jeepney_nor_a_bus():
    script = ("import sys, partagpu, partagpu.pgr\n"
              "assert 'jeepney' not in sys.modules, 'jeepney imported early'\n"
              "assert partagpu.discover.__module__ == 'partagpu.fleet'\n"
              "assert 'jeepney' in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=PYTHON_DIR, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stderr
