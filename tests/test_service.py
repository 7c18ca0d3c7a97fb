# SPDX-License-Identifier: GPL-3.0-or-later
"""partagpud's bus interface, persistence and start-up errors, on a private system bus."""

import json
import os
import signal
import subprocess
import time

import dbus
import pytest
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

from conftest import BUS_NAME, IFACE, OBJECT_PATH, Daemon, ctl, status, wait_for

GIB = 1 << 30


def proxy(bus, interface):
    connection = dbus.bus.BusConnection(bus.address)
    return dbus.Interface(connection.get_object(BUS_NAME, OBJECT_PATH), IFACE + interface)


def properties(bus, interface):
    connection = dbus.bus.BusConnection(bus.address)
    props = dbus.Interface(connection.get_object(BUS_NAME, OBJECT_PATH), "org.freedesktop.DBus.Properties")
    return props.GetAll(IFACE + interface)


def collect_property_changes(bus, action, seconds=4.0, until=None):
    """Runs `action`, then gathers PropertiesChanged signals of our object for up to `seconds`."""
    DBusGMainLoop(set_as_default=True)
    connection = dbus.bus.BusConnection(bus.address, mainloop=DBusGMainLoop())
    changes = []
    loop = GLib.MainLoop()

    def on_changed(interface, changed, invalidated):
        changes.append((str(interface), {str(k): v for k, v in changed.items()}))
        if until and until(changes):
            loop.quit()

    connection.add_signal_receiver(on_changed, "PropertiesChanged", "org.freedesktop.DBus.Properties",
                                   path=OBJECT_PATH)
    GLib.timeout_add(50, lambda: action() and False)
    GLib.timeout_add(int(seconds * 1000), loop.quit)
    loop.run()
    connection.close()
    return changes


def test_machine_properties_describe_this_host(bus, daemon):
    machine = properties(bus, "Machine1")
    assert machine["Version"] == status(bus)["version"]
    assert int(machine["CpuCores"]) == os.cpu_count()
    assert 0 < int(machine["MemoryAvailable"]) <= int(machine["MemoryTotal"])
    assert machine["GpuStatus"] == "unavailable: no NVIDIA driver found (libnvidia-ml.so.1 cannot be loaded)"
    assert list(machine["Gpus"]) == []
    assert int(machine["PeerPort"]) == 17655
    assert len(machine["LoadAverage"]) == 3


def test_set_limits_refuses_malformed_dictionaries_before_anything_changes(bus, daemon):
    sharing = proxy(bus, "Sharing1")
    cases = [
        ({}, "no limit given"),
        ({"cpu-percent": dbus.String("50")}, "limit 'cpu-percent' must be of type u"),
        ({"ram-bytes": dbus.UInt32(5)}, "limit 'ram-bytes' must be of type t"),
        ({"colour": dbus.UInt32(5)}, "unknown limit 'colour'"),
        ({"cpu-percent": dbus.UInt32(10), "gpu-percent": dbus.UInt32(300)}, "GPU limit 300 %"),
    ]
    for limits, message in cases:
        with pytest.raises(dbus.DBusException) as raised:
            sharing.SetLimits(dbus.Dictionary(limits, signature="sv"))
        assert raised.value.get_dbus_name() == "org.partagpu.PartaGPU.Daemon.Error.InvalidArgument"
        assert message in raised.value.get_dbus_message()
    assert status(bus)["limits"]["cpu_percent"] == 50


def test_changes_are_signalled_with_the_new_values(bus, daemon):
    changes = collect_property_changes(
        bus, lambda: ctl(bus, "pause", check=True) and ctl(bus, "limits", "set", "--cpu", "33", check=True),
        until=lambda c: sum(1 for interface, _ in c if interface == IFACE + "Sharing1") >= 3)
    sharing = {}
    for interface, changed in changes:
        if interface == IFACE + "Sharing1":
            sharing.update(changed)
    assert sharing == {"Paused": True, "State": "paused", "CpuLimit": 33}


def test_live_gpu_load_is_probed_and_signalled(bus, machine_dir):
    gpus = machine_dir / "gpus.json"
    gpu = {"index": 0, "name": "NVIDIA RTX A4000", "uuid": "GPU-1234", "memory_total_bytes": 16 * GIB,
           "memory_used_bytes": GIB, "utilization_percent": 5}
    gpus.write_text(json.dumps([gpu]))
    daemon = Daemon(bus, machine_dir, fake_gpus=gpus).start()
    try:
        machine = properties(bus, "Machine1")
        assert machine["GpuStatus"] == "available"
        assert [tuple(g) for g in machine["Gpus"]] == [(0, "NVIDIA RTX A4000", "GPU-1234", 16 * GIB, GIB, 5)]
        busy = dict(gpu, utilization_percent=97, memory_used_bytes=12 * GIB)
        changes = collect_property_changes(
            bus, lambda: gpus.write_text(json.dumps([busy])), seconds=6,
            until=lambda c: any("Gpus" in changed for _, changed in c))
        [new] = [changed["Gpus"] for _, changed in changes if "Gpus" in changed]
        assert tuple(new[0])[4:] == (12 * GIB, 97)
        assert status(bus)["resources"]["gpus"][0]["utilization_percent"] == 97
    finally:
        daemon.stop()


def test_the_policy_survives_a_restart_and_a_kill(bus, daemon):
    ctl(bus, "limits", "set", "--cpu", "70", "--ram", "1G", "--gpu", "10", check=True)
    ctl(bus, "pause", check=True)
    daemon.restart()
    data = status(bus)
    assert data["limits"] == {"cpu_percent": 70, "ram_bytes": GIB, "gpu_percent": 10}
    assert data["paused"] is True
    # Acknowledged means on disk: even SIGKILL right after the reply loses nothing.
    ctl(bus, "limits", "set", "--cpu", "15", check=True)
    daemon.process.send_signal(signal.SIGKILL)
    daemon.process.wait(5)
    wait_for(lambda: not bus.name_has_owner(BUS_NAME), what="the name to be released")
    daemon.start()
    assert status(bus)["limits"]["cpu_percent"] == 15


def test_a_corrupt_policy_is_kept_aside_and_defaults_are_used(bus, daemon):
    ctl(bus, "limits", "set", "--cpu", "70", check=True)
    daemon.stop()
    policy = daemon.state_dir / "policy.json"
    policy.write_text('{"format": 1, "policy": {"enabled": tr')
    daemon.start()
    assert status(bus)["limits"]["cpu_percent"] == 50
    kept = [p for p in daemon.state_dir.iterdir() if p.name.startswith("policy.json.corrupt-")]
    assert len(kept) == 1 and kept[0].read_text() == '{"format": 1, "policy": {"enabled": tr'
    assert "saved sharing policy is unusable" in daemon.log.read_text()


def test_one_state_directory_and_one_bus_name_per_service(bus, daemon, workdir):
    second = subprocess.run(daemon.argv(), env=bus.env(), capture_output=True, text=True, timeout=10)
    assert second.returncode == 1
    assert f"another partagpud already uses the state directory {daemon.state_dir}" in second.stderr
    other = workdir / "other"
    other.mkdir()
    third = Daemon(bus, other)
    result = subprocess.run(third.argv(), env=bus.env(), capture_output=True, text=True, timeout=10)
    assert result.returncode == 1
    assert "another process already owns org.partagpu.PartaGPU.Daemon on this system bus" in result.stderr
    assert status(bus)["display_name"] == "test-machine"


@pytest.mark.parametrize("config, message", [
    ('display_name = "x"\ncolour = "red"\n', "unknown field `colour`"),
    ("[sharing]\ncpu_percent = 120\n", "CPU limit 120 % is out of range"),
    ("[sharing\n", "partagpu.toml"),
])
def test_a_bad_config_file_stops_the_service_with_its_reason(bus, machine_dir, config, message):
    daemon = Daemon(bus, machine_dir, config=config)
    result = subprocess.run(daemon.argv(), env=bus.env(), capture_output=True, text=True, timeout=10)
    assert result.returncode == 1
    assert message in result.stderr
    assert not bus.name_has_owner(BUS_NAME)


def test_sigterm_releases_the_name_and_removes_the_pid_file(bus, daemon):
    pid_file = daemon.runtime_dir / "partagpud.pid"
    assert int(pid_file.read_text()) == daemon.process.pid
    started = time.monotonic()
    daemon.stop()
    assert time.monotonic() - started < 5
    assert daemon.process.returncode == 0
    assert not pid_file.exists()
    assert "partagpud stopped" in daemon.log.read_text()
