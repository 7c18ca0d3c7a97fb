# SPDX-License-Identifier: GPL-3.0-or-later
"""partagpuctl against a running partagpud on a private system bus."""

import json
import re

from conftest import BIN_DIR, ctl, status

GIB = 1 << 30


def test_status_shows_the_machine_in_text_and_json(bus, daemon):
    text = ctl(bus, "status", check=True).stdout
    assert text.startswith("test-machine — sharing\n")
    assert "Peer port   17655" in text
    data = status(bus)
    assert data["display_name"] == "test-machine"
    assert data["state"] == "sharing" and data["sharing_enabled"] and not data["paused"]
    meminfo = open("/proc/meminfo").read()
    total_kib = int(re.search(r"MemTotal:\s+(\d+) kB", meminfo).group(1))
    assert data["resources"]["memory"]["total_bytes"] == total_kib * 1024
    assert data["limits"] == {"cpu_percent": 50, "ram_bytes": total_kib * 1024 // 2, "gpu_percent": 50}
    assert data["resources"]["gpus"] == []
    assert data["resources"]["gpu_probe"]["state"] == "unavailable"
    assert data["resources"]["cpu"]["cores"] >= 1
    assert data["peer_port"] == 17655


def test_limits_set_changes_only_what_is_given(bus, daemon):
    out = ctl(bus, "limits", "set", "--cpu", "50", "--ram", "2G", "--gpu", "30", check=True).stdout
    assert out.strip() == "Lending CPU 50 % · RAM 2.0 GiB · GPU 30 %"
    ctl(bus, "limits", "set", "--gpu", "75%", check=True)
    limits = json.loads(ctl(bus, "limits", "show", "--json", check=True).stdout)
    assert limits == {"cpu_percent": 50, "ram_bytes": 2 * GIB, "gpu_percent": 75}


def test_out_of_range_limits_fail_with_one_clear_line_and_change_nothing(bus, daemon):
    ctl(bus, "limits", "set", "--cpu", "40", "--ram", "1G", "--gpu", "20", check=True)
    cases = [
        (["--cpu", "150"], "partagpuctl: CPU limit 150 % is out of range: it must be between 0 and 100 %"),
        (["--gpu", "101", "--cpu", "10"], "partagpuctl: GPU limit 101 % is out of range: it must be between 0 and 100 %"),
        (["--ram", "100T"], "partagpuctl: RAM limit 100.0 TiB is more than this machine has"),
        (["--ram", "2 elephants"], "partagpuctl: '2 elephants' is not a size"),
        ([], "partagpuctl: give at least one of --cpu, --ram or --gpu"),
    ]
    for args, message in cases:
        result = ctl(bus, "limits", "set", *args)
        assert result.returncode == 1, args
        assert result.stderr.startswith(message), result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stdout == ""
    assert status(bus)["limits"] == {"cpu_percent": 40, "ram_bytes": GIB, "gpu_percent": 20}


def test_usage_errors_exit_2(bus, daemon):
    result = ctl(bus, "limits", "set", "--cpu", "half")
    assert result.returncode == 2
    assert "'half' is not a percentage" in result.stderr
    assert ctl(bus, "sharing", "maybe").returncode == 2


def test_pause_resume_and_sharing_switch_the_state(bus, daemon):
    assert "Paused" in ctl(bus, "pause", check=True).stdout
    assert status(bus)["state"] == "paused"
    ctl(bus, "sharing", "off", check=True)
    data = status(bus)
    assert (data["state"], data["paused"], data["sharing_enabled"]) == ("off", True, False)
    ctl(bus, "resume", check=True)
    ctl(bus, "sharing", "on", check=True)
    assert status(bus)["state"] == "sharing"


def test_rename_is_validated(bus, daemon):
    ctl(bus, "rename", "  Salle B12 — poste 3 ", check=True)
    assert status(bus)["display_name"] == "Salle B12 — poste 3"
    result = ctl(bus, "rename", "x" * 65)
    assert result.returncode == 1
    assert "at most 64" in result.stderr
    assert status(bus)["display_name"] == "Salle B12 — poste 3"


def test_security_log_is_empty_and_valid_json(bus, daemon):
    assert json.loads(ctl(bus, "security-log", "--json", check=True).stdout) == []
    assert ctl(bus, "security-log", check=True).stdout == "The security journal is empty.\n"


def test_version_and_help():
    import subprocess

    cargo_toml = (BIN_DIR.parent.parent / "Cargo.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', cargo_toml, re.M).group(1)
    out = subprocess.run([str(BIN_DIR / "partagpuctl"), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"partagpuctl {version}"
    help_text = subprocess.run([str(BIN_DIR / "partagpuctl"), "--help"], capture_output=True, text=True,
                               check=True).stdout
    for command in ("status", "limits", "pause", "resume", "sharing", "security-log"):
        assert command in help_text


def test_a_missing_service_is_one_clear_line(bus):
    result = ctl(bus, "status")
    assert result.returncode == 1
    assert result.stderr == ("partagpuctl: partagpud is not running (nobody owns org.partagpu.PartaGPU.Daemon "
                             "on the system bus); start it with: systemctl start partagpud\n")


def test_a_missing_bus_is_one_clear_line(workdir):
    import os
    import subprocess

    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={workdir}/no-such-socket")
    result = subprocess.run([str(BIN_DIR / "partagpuctl"), "status"], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("partagpuctl: cannot connect to the system bus")
    assert result.stderr.count("\n") == 1
