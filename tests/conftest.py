# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for system tests: a private system bus with our policy file, python-dbusmock's
polkitd template, and real partagpud processes.

Everything runs for real: `dbus-daemon` loads `dbus/org.partagpu.PartaGPU.Daemon.conf`
through `scripts/lab/system-bus.conf.in`, the service is the built `partagpud`, the CLI the
built `partagpuctl`. Only polkit is a mock (no polkitd runs on a private bus).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN_DIR = Path(os.environ.get("PARTAGPU_BIN_DIR", REPO / "target" / "debug"))
BUS_NAME = "org.partagpu.PartaGPU.Daemon"
OBJECT_PATH = "/org/partagpu/PartaGPU/Daemon"
IFACE = "org.partagpu.PartaGPU.Daemon."
NOBODY = 65534
# The interpreter whose site-packages has dbus-python and dbusmock (Debian's).
SYSTEM_PYTHON = "/usr/bin/python3"


def wait_for(predicate, timeout=10.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Bus:
    """A private dbus-daemon of type system, as the lab machines have."""

    def __init__(self, root: Path):
        self.root = root
        self.socket = root / "system_bus_socket"
        self.address = f"unix:path={self.socket}"
        config = (REPO / "scripts/lab/system-bus.conf.in").read_text()
        config = config.replace("@SOCKET@", str(self.socket)).replace(
            "@POLICY@", str(REPO / "dbus/org.partagpu.PartaGPU.Daemon.conf"))
        (root / "bus.conf").write_text(config)
        self.process = subprocess.Popen(
            ["dbus-daemon", f"--config-file={root / 'bus.conf'}", "--nofork", "--nopidfile"],
            stderr=open(root / "dbus.log", "w"))
        wait_for(self.socket.exists, what="the bus socket")

    def env(self, **extra):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address, **extra)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        return env

    def connect(self):
        import dbus  # Debian's python3-dbus, pulled in by python3-dbusmock

        return dbus.bus.BusConnection(self.address)

    def name_has_owner(self, name):
        connection = self.connect()
        try:
            return bool(connection.name_has_owner(name))
        finally:
            connection.close()

    def name_owner(self, name):
        connection = self.connect()
        try:
            return str(connection.get_name_owner(name))
        finally:
            connection.close()

    def stop(self):
        self.process.terminate()
        self.process.wait(5)


class Polkit:
    """python-dbusmock's polkitd template on the bus; denies everything until told."""

    def __init__(self, bus: Bus):
        self.bus = bus
        self.process = subprocess.Popen(
            [SYSTEM_PYTHON, "-m", "dbusmock", "--system", "--template", "polkitd"],
            env=bus.env(), stdout=subprocess.DEVNULL, stderr=open(bus.root / "polkit.log", "w"))
        wait_for(lambda: bus.name_has_owner("org.freedesktop.PolicyKit1"), what="the polkit mock")

    def _mock(self, method, *args):
        connection = self.bus.connect()
        try:
            mock = connection.get_object("org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority")
            return getattr(mock, method)(*args, dbus_interface="org.freedesktop.DBus.Mock")
        finally:
            connection.close()

    def allow(self, *actions):
        self._mock("SetAllowed", list(actions))

    def checks(self):
        """Every CheckAuthorization call so far: (subject kind, subject details, action)."""
        calls = self._mock("GetCalls")
        return [(str(args[0][0]), {str(k): str(v) for k, v in args[0][1].items()}, str(args[1]))
                for _, method, args in calls if method == "CheckAuthorization"]

    def stop(self):
        self.process.terminate()
        self.process.wait(5)


class Daemon:
    """One partagpud with its own state, runtime dir and config."""

    def __init__(self, bus: Bus, root: Path, config: str = 'display_name = "test-machine"\n', fake_gpus=None,
                 peer_port=17655):
        self.bus = bus
        self.peer_port = peer_port
        self.root = root
        self.state_dir = root / "state"
        self.runtime_dir = root / "run"
        self.config = root / "partagpu.toml"
        self.config.write_text(config)
        self.fake_gpus = fake_gpus
        self.log = root / "partagpud.log"
        self.process = None

    def argv(self):
        argv = [str(BIN_DIR / "partagpud"), "--state-dir", str(self.state_dir), "--runtime-dir",
                str(self.runtime_dir), "--config", str(self.config), "--peer-port", str(self.peer_port),
                # Host tests stay off the real network: loopback only, no mDNS announcements.
                "--listen-address", "127.0.0.1", "--no-discovery"]
        if self.fake_gpus:
            argv += ["--fake-gpus", str(self.fake_gpus)]
        return argv

    def start(self, wait=True):
        self.process = subprocess.Popen(self.argv(), env=self.bus.env(), stderr=open(self.log, "a"),
                                        stdout=subprocess.DEVNULL)
        if wait:
            wait_for(lambda: self.process.poll() is not None or self.bus.name_has_owner(BUS_NAME),
                     what="partagpud on the bus")
            assert self.process.poll() is None, f"partagpud exited:\n{self.log.read_text()}"
        return self

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)
        wait_for(lambda: not self.bus.name_has_owner(BUS_NAME), what="the name to be released")

    def restart(self):
        self.stop()
        return self.start()


def code_leaks(text: str, words) -> bool:
    """Whether `text` shows two consecutive words of a room code, in any separator form
    ("w1 w2", "w1-w2", …). Single words prove nothing: fingerprints and names use the same
    BIP-39 lists, so a lone common word may appear by chance."""
    return any(re.search(rf"\b{re.escape(a)}[^a-z]{{1,3}}{re.escape(b)}\b", text, re.IGNORECASE)
               for a, b in zip(words, words[1:]))


def ctl(bus: Bus, *args, user=None, check=False):
    """Runs partagpuctl on `bus`, as root or as uid `user`."""
    argv = [str(BIN_DIR / "partagpuctl"), *args]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    result = subprocess.run(argv, env=bus.env(), capture_output=True, text=True, timeout=30)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def status(bus: Bus):
    return json.loads(ctl(bus, "status", "--json", check=True).stdout)


LAB_DIR = Path(os.environ.get("PARTAGPU_LAB_DIR", "/tmp/partagpu-lab"))
LAB_FAILURES = Path(os.environ.get("PARTAGPU_LAB_FAILURES", "/tmp/partagpu-lab-failures"))
LAB_LOG_TAIL = 60


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """When a test fails while a virtual lab is up, its services' logs go with the report (and
    are copied under LAB_FAILURES): the lab is torn down right after, and a failure seen once
    in CI must be explainable from its log alone."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or not LAB_DIR.is_dir():
        return
    kept = LAB_FAILURES / re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid)
    for log in sorted(LAB_DIR.glob("m*/partagpud.log")):
        machine = log.parent.name
        text = log.read_text(errors="replace")
        kept.mkdir(parents=True, exist_ok=True)
        (kept / f"{machine}-partagpud.log").write_text(text)
        tail = "\n".join(text.splitlines()[-LAB_LOG_TAIL:])
        report.sections.append((f"{machine}/partagpud.log (last {LAB_LOG_TAIL} lines, all in {kept})", tail))


@pytest.fixture(scope="session", autouse=True)
def built_binaries():
    for name in ("partagpud", "partagpuctl"):
        if not (BIN_DIR / name).exists():
            pytest.exit(f"{BIN_DIR / name} is missing: build first (cargo build)", returncode=2)
    for tool in ("dbus-daemon", "setpriv"):
        if shutil.which(tool) is None:
            pytest.exit(f"{tool} is missing: run scripts/test, which installs it", returncode=2)


@pytest.fixture
def workdir():
    # Non-root test users must reach the bus socket inside.
    root = Path(tempfile.mkdtemp(prefix="partagpu-test-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def bus(workdir):
    bus = Bus(workdir)
    yield bus
    bus.stop()


@pytest.fixture
def polkit(bus):
    mock = Polkit(bus)
    yield mock
    mock.stop()


@pytest.fixture
def machine_dir(workdir):
    path = workdir / "machine"
    path.mkdir(mode=0o755)
    return path


@pytest.fixture
def daemon(bus, machine_dir):
    instance = Daemon(bus, machine_dir).start()
    yield instance
    instance.stop()
