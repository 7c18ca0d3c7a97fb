# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests of scripts/virtual-lab: machines, their buses and daemons, the bridge, cleanup, shaping.

Run as root: `python3 -m pytest -v tests/test_virtual_lab.py`. Self-contained (no conftest).
Network namespace names are global, so the tests use the lab's real names and refuse to run
while a lab is already up. Traffic goes only to the lab's own 10.98.0.x addresses.
"""

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "scripts" / "virtual-lab"
LAB_DIR = Path(os.environ.get("PARTAGPU_LAB_DIR", "/tmp/partagpu-lab"))
BIN_DIR = Path(os.environ.get("PARTAGPU_BIN_DIR", REPO / "target" / "debug"))
PY = sys.executable
CGROUP_NAME = "partagpu-lab"


# --- helpers -------------------------------------------------------------------------------------


def run(cmd, timeout=60, check=False, **kwargs):
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, check=check, **kwargs
    )


def lab(*args, timeout=120, env=None, input=None):
    """Runs scripts/virtual-lab with ARGS; returns the CompletedProcess."""
    return run([LAB, *args], timeout=timeout, env=env, input=input)


def lab_ok(*args, timeout=120):
    r = lab(*args, timeout=timeout)
    assert r.returncode == 0, f"virtual-lab {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def on(machine, *cmd, timeout=60, input=None):
    """Runs CMD on lab machine MACHINE through `virtual-lab exec`."""
    return lab("exec", str(machine), "--", *cmd, timeout=timeout, input=input)


def status_json(machine):
    r = on(machine, "partagpuctl", "status", "--json", timeout=30)
    assert r.returncode == 0, f"status on machine {machine}: {r.returncode} {r.stderr}"
    return json.loads(r.stdout)


def lab_netns():
    out = run(["ip", "netns", "list"], check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("pglab-")]


def root_links():
    out = run(["ip", "-o", "link", "show"], check=True).stdout
    return [re.split(r"[@:]", line.split(": ", 1)[1])[0] for line in out.splitlines()]


def cgroup_roots():
    roots = set()
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[2] in ("cgroup", "cgroup2"):
                roots.add(fields[1])
    return sorted(roots)


def machine_cgroup_roots():
    """The hierarchies where the script gives each machine a cgroup."""
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return ["/sys/fs/cgroup"]
    return [
        f"/sys/fs/cgroup/{c}"
        for c in ("cpu", "memory", "pids", "freezer", "unified")
        if Path(f"/sys/fs/cgroup/{c}/cgroup.procs").exists()
    ]


def lab_cgroup_dirs():
    return [f"{root}/{CGROUP_NAME}" for root in cgroup_roots() if Path(root, CGROUP_NAME).exists()]


def pid_alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_mentioning(text):
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append((entry.name, cmdline))
    return found


def machine_pids(machine):
    m = LAB_DIR / f"m{machine}"
    return {name: int((m / f"{name}.pid").read_text()) for name in ("dbus", "partagpud")}


def netns_inode(name):
    return os.stat(f"/run/netns/{name}").st_ino


def process_netns_inode(pid):
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def process_cgroups(pid):
    """{hierarchy id or controller list: path} from /proc/PID/cgroup."""
    result = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        result[controllers] = path
    return result


def assert_in_machine_cgroups(pid, machine):
    cgroups = process_cgroups(pid)
    want = f"/{CGROUP_NAME}/m{machine}"
    for root in machine_cgroup_roots():
        name = Path(root).name
        key = "" if name in ("unified", "cgroup") else name
        matching = [path for ctrls, path in cgroups.items() if key in ctrls.split(",") or ctrls == key]
        assert matching, f"pid {pid}: no {root} line in {cgroups}"
        assert any(path.startswith(want) for path in matching), f"pid {pid} not in {root}{want}: {cgroups}"


def assert_lab_gone(pids=()):
    assert lab_netns() == [], f"namespaces left: {lab_netns()}"
    assert [link for link in root_links() if link.startswith("pgl")] == []
    assert processes_mentioning(str(LAB_DIR)) == []
    for pid in pids:
        assert not pid_alive(pid), f"pid {pid} survived down"
    assert lab_cgroup_dirs() == [], f"cgroups left: {lab_cgroup_dirs()}"
    assert not LAB_DIR.exists()


def read_line(proc, timeout):
    """The next stdout line of PROC within TIMEOUT seconds, or fail."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        proc.kill()
        pytest.fail(f"no output from {proc.args} within {timeout} s; stderr: {proc.stderr.read()}")
    line = proc.stdout.readline()
    assert line, f"{proc.args} ended early; stderr: {proc.stderr.read()}"
    return line.strip()


def start_on(machine, code):
    """Starts `python3 -c CODE` on MACHINE, in the background."""
    return subprocess.Popen(
        [str(LAB), "exec", str(machine), "--", PY, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc, timeout=20):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{proc.args} did not finish in {timeout} s: {err}")
    assert proc.returncode == 0, f"{proc.args} -> {proc.returncode}: {err}"
    return out


# --- preconditions and fixtures ------------------------------------------------------------------


def _netns_usable():
    probe = f"pgprobe-{os.getpid()}"
    if run(["ip", "netns", "add", probe]).returncode != 0:
        return False
    run(["ip", "netns", "del", probe])
    return True


if os.geteuid() != 0:
    pytest.skip("virtual-lab tests need root (network namespaces, cgroups)", allow_module_level=True)
if shutil.which("ip") is None or not _netns_usable():
    pytest.skip("`ip netns` is not usable here", allow_module_level=True)
if lab_netns() or (LAB_DIR / "lab.env").exists():
    pytest.skip(
        "a virtual lab is already up; these tests use the same names: run `scripts/virtual-lab down` first",
        allow_module_level=True,
    )


@pytest.fixture
def clean_lab():
    """Each test starts without a lab and always ends with `down`, even when it fails."""
    for binary in ("partagpud", "partagpuctl"):
        if not os.access(BIN_DIR / binary, os.X_OK):
            pytest.fail(f"{BIN_DIR / binary} is missing: build first (cargo build)")
    try:
        yield
    finally:
        r = lab("down", timeout=120)
        assert r.returncode == 0, f"down failed: {r.stdout}\n{r.stderr}"


# --- tests ---------------------------------------------------------------------------------------


def test_machines_buses_limits_restart(clean_lab):
    lab_ok("up", "3")
    for i in (1, 2, 3):
        assert status_json(i)["display_name"] == f"lab-{i}"
        pids = machine_pids(i)
        for name, pid in pids.items():
            assert pid_alive(pid), f"machine {i}: {name} pid {pid} is not running"
            assert process_netns_inode(pid) == netns_inode(f"pglab-{i}"), f"machine {i}: {name} not in pglab-{i}"
            assert_in_machine_cgroups(pid, i)

    # exec: inside the machine's netns, cgroups and env; stdin, stdout and exit code pass through.
    r = on(2, "sh", "-c", 'cat /proc/self/cgroup >&2; echo "$PARTAGPU_LAB_MACHINE $DBUS_SYSTEM_BUS_ADDRESS"; '
           "ip -4 -o addr show dev eth0; cat; exit 7", input="from-stdin\n")
    assert r.returncode == 7
    lines = r.stdout.splitlines()
    assert lines[0] == f"2 unix:path={LAB_DIR}/m2/bus/system_bus_socket"
    assert "10.98.0.2/24" in lines[1]
    assert lines[2] == "from-stdin"
    assert f"/{CGROUP_NAME}/m2" in r.stderr
    r = on(1, "sh", "-c", "command -v partagpuctl")
    assert r.stdout.strip() == str(BIN_DIR.resolve() / "partagpuctl")
    # The machine sees its own cgroup tree (ip netns exec alone would hide /sys/fs/cgroup).
    r = on(1, "sh", "-c", f"ls -d {machine_cgroup_roots()[0]}/{CGROUP_NAME}/m1")
    assert r.returncode == 0, r.stderr
    for bad in ("4", "0", "x"):
        r = on(bad, "true")
        assert r.returncode == 2, f"exec {bad}: {r.returncode}"
        assert r.stderr.strip()

    defaults_1 = status_json(1)["limits"]
    r = on(2, "partagpuctl", "limits", "set", "--cpu", "50", "--ram", "2G", "--gpu", "30")
    assert r.returncode == 0, r.stderr
    limits_2 = status_json(2)["limits"]
    assert (limits_2["cpu_percent"], limits_2["ram_bytes"], limits_2["gpu_percent"]) == (50, 2147483648, 30)
    assert status_json(1)["limits"] == defaults_1, "machine 1 must not see machine 2's limits"

    old_pid = machine_pids(2)["partagpud"]
    lab_ok("restart", "2")
    new_pid = machine_pids(2)["partagpud"]
    assert new_pid != old_pid and not pid_alive(old_pid) and pid_alive(new_pid)
    assert_in_machine_cgroups(new_pid, 2)
    assert status_json(2)["limits"] == limits_2, "limits must survive a restart"

    r = on(2, "partagpuctl", "limits", "set", "--cpu", "150")
    assert r.returncode != 0
    err_lines = r.stderr.strip().splitlines()
    assert len(err_lines) == 1 and "150" in err_lines[0], f"want one stderr line about 150: {r.stderr!r}"
    assert status_json(2)["limits"] == limits_2

    r = lab_ok("status")
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3
    for i, line in enumerate(lines, 1):
        assert line.startswith(f"{i} ") and f"lab-{i}" in line and f"10.98.0.{i}" in line, line

    # power-on: refused while the machine runs; after a kill, it comes back as it was.
    r = lab("power-on", "2")
    assert r.returncode == 1 and "not off" in r.stderr, (r.returncode, r.stderr)
    killed = machine_pids(2)
    lab_ok("kill", "2")
    assert not any(pid_alive(pid) for pid in killed.values()), killed
    lab_ok("power-on", "2")
    assert all(pid_alive(pid) for pid in machine_pids(2).values())
    assert status_json(2)["limits"] == limits_2, "limits must survive a power loss"
    routes = run(["ip", "-n", "pglab-2", "route", "show"]).stdout
    assert "10.98.0.0/24 dev eth0" in routes and "224.0.0.0/4 dev eth0" in routes, routes
    reached = on(1, PY, "-c", "import socket; socket.create_connection(('10.98.0.2', 7655), timeout=5)")
    assert reached.returncode == 0, reached.stderr


def test_bridge_tcp_and_multicast(clean_lab):
    lab_ok("up", "3")
    # Unshaped lab: no tbf anywhere.
    assert "tbf" not in run(["ip", "netns", "exec", "pglab-1", "tc", "qdisc", "show", "dev", "eth0"]).stdout

    listener = start_on(2, """
import socket
s = socket.socket()
s.bind(("10.98.0.2", 7700))
s.listen(1)
s.settimeout(20)
print("ready", flush=True)
c, peer = s.accept()
c.settimeout(10)
c.sendall(b"pong:" + c.recv(100))
print(peer[0], flush=True)
""")
    try:
        assert read_line(listener, 20) == "ready"
        client = on(1, PY, "-c", """
import socket
c = socket.create_connection(("10.98.0.2", 7700), timeout=5)
c.sendall(b"ping")
print(c.recv(100).decode())
""", timeout=30)
        assert client.returncode == 0, client.stderr
        assert client.stdout.strip() == "pong:ping"
        assert read_line(listener, 10) == "10.98.0.1"
        finish(listener)
    finally:
        if listener.poll() is None:
            listener.kill()

    token = uuid.uuid4().hex
    receiver = start_on(3, f"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("", 5353))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
             socket.inet_aton("224.0.0.251") + socket.inet_aton("10.98.0.3"))
s.settimeout(15)
print("ready", flush=True)
while True:
    data, sender = s.recvfrom(9000)
    if data == b"{token}":
        print(sender[0], flush=True)
        break
""")
    try:
        assert read_line(receiver, 20) == "ready"
        sender = on(1, PY, "-c", f"""
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # no IP_MULTICAST_IF: the route picks eth0
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
for _ in range(5):
    s.sendto(b"{token}", ("224.0.0.251", 5353))
    time.sleep(0.2)
""", timeout=30)
        assert sender.returncode == 0, sender.stderr
        assert read_line(receiver, 15) == "10.98.0.1"
        finish(receiver)
    finally:
        if receiver.poll() is None:
            receiver.kill()


def test_down_removes_everything(clean_lab, tmp_path):
    lab_ok("up", "2")
    pids = [pid for i in (1, 2) for pid in machine_pids(i).values()]
    # A process started by exec belongs to the machine too.
    sleeper = subprocess.Popen([str(LAB), "exec", "1", "--", "sleep", "300"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline and not any(
        f"/{CGROUP_NAME}/m1" in p for p in process_cgroups(sleeper.pid).values()
    ):
        time.sleep(0.1)
    assert pid_alive(sleeper.pid)
    assert_in_machine_cgroups(sleeper.pid, 1)
    r = lab("down")
    assert r.returncode == 0, r.stderr
    assert sleeper.wait(timeout=10) != 0
    assert_lab_gone(pids + [sleeper.pid])
    assert lab("down").returncode == 0, "down must be idempotent"
    r = lab("status")
    assert r.returncode == 1 and "no lab" in r.stdout

    # Crash: daemons killed, lab dir deleted by hand; down still cleans netns and cgroups.
    lab_ok("up", "2")
    pids = [pid for i in (1, 2) for pid in machine_pids(i).values()]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(LAB_DIR)
    assert lab_netns() and lab_cgroup_dirs()
    r = lab("down")
    assert r.returncode == 0, r.stderr
    assert_lab_gone(pids)

    # A half-done up: the daemon of machine 1 dies at once; up says why and down cleans.
    bad_bin = tmp_path / "bin"
    bad_bin.mkdir()
    (bad_bin / "partagpud").write_text("#!/bin/sh\necho 'boom: cannot start' >&2\nexit 1\n")
    (bad_bin / "partagpud").chmod(0o755)
    (bad_bin / "partagpuctl").symlink_to(BIN_DIR.resolve() / "partagpuctl")
    started = time.time()
    r = lab("up", "2", env={**os.environ, "PARTAGPU_BIN_DIR": str(bad_bin)})
    assert r.returncode != 0
    assert "boom: cannot start" in r.stderr, r.stderr
    assert time.time() - started < 15, "a daemon that exits must be noticed without waiting 15 s"
    r = lab("down")
    assert r.returncode == 0, r.stderr
    assert_lab_gone()


def test_link_rate_and_refusals(clean_lab, tmp_path):
    for n in ("9", "0", "x"):
        r = lab("up", n)
        assert r.returncode == 2, f"up {n}: {r.returncode} {r.stderr}"
        assert r.stderr.strip()
    assert lab("up", "1", "--link-rate", "fast").returncode == 2
    r = lab("up", "1", env={**os.environ, "PARTAGPU_BIN_DIR": str(tmp_path)})
    assert r.returncode != 0 and "cargo build" in r.stderr
    assert lab_netns() == [] and not LAB_DIR.exists()

    lab_ok("up", "2", "--link-rate", "100mbit")
    for i in (1, 2):
        up = run(["ip", "netns", "exec", f"pglab-{i}", "tc", "qdisc", "show", "dev", "eth0"]).stdout
        down = run(["ip", "netns", "exec", "pglab-sw", "tc", "qdisc", "show", "dev", f"pgl{i}"]).stdout
        for where, out in ((f"eth0 of pglab-{i}", up), (f"pgl{i} in pglab-sw", down)):
            assert re.search(r"qdisc tbf .*rate 100Mbit", out), f"{where}: {out}"

    r = lab("up", "1")
    assert r.returncode != 0 and "down" in r.stderr, "a second up must be refused"
    assert sorted(lab_netns()) == ["pglab-1", "pglab-2", "pglab-sw"]

    # The shaping is real: 4 MB take at least ~0.3 s at 100 Mbit/s (unshaped: a few ms).
    size = 4 * 1024 * 1024
    receiver = start_on(2, """
import socket, time
s = socket.socket()
s.bind(("10.98.0.2", 7701))
s.listen(1)
s.settimeout(20)
print("ready", flush=True)
c, _ = s.accept()
start = time.monotonic()
total = 0
while chunk := c.recv(1 << 16):
    total += len(chunk)
print(total, time.monotonic() - start, flush=True)
""")
    try:
        assert read_line(receiver, 20) == "ready"
        sender = on(1, PY, "-c", f"""
import socket
c = socket.create_connection(("10.98.0.2", 7701), timeout=5)
c.sendall(bytes({size}))
c.close()
""", timeout=30)
        assert sender.returncode == 0, sender.stderr
        total, elapsed = read_line(receiver, 20).split()
        assert int(total) == size
        assert float(elapsed) >= 0.2, f"{size} bytes in {elapsed} s: faster than 100 Mbit/s"
        finish(receiver)
    finally:
        if receiver.poll() is None:
            receiver.kill()
