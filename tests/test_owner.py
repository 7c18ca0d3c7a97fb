# SPDX-License-Identifier: GPL-3.0-or-later
"""[owner] auto_pause: partagpud pauses sharing when a local session of the machine is in use
and resumes after resume_after_idle_s of idleness, reading the sessions from logind
(python-dbusmock's logind template on the test bus: no logind runs without systemd).

Only its own pause is undone: a pause by hand stays; a resume by hand while the owner is
present is respected; a restart keeps an automatic pause automatic."""

import subprocess
import time

import pytest

from conftest import SYSTEM_PYTHON, Daemon, ctl, status, wait_for

SESSION_PATH = "/org/freedesktop/login1/session/c1"
CONFIG = 'display_name = "test-machine"\n[owner]\nauto_pause = true\nresume_after_idle_s = 2\n'


class Logind:
    def __init__(self, bus):
        self.bus = bus
        self.process = subprocess.Popen(
            [SYSTEM_PYTHON, "-m", "dbusmock", "--system", "--template", "logind"],
            env=bus.env(), stdout=subprocess.DEVNULL, stderr=open(bus.root / "logind.log", "w"))
        wait_for(lambda: bus.name_has_owner("org.freedesktop.login1"), what="the logind mock")
        self._mock("/org/freedesktop/login1", "AddSession", "c1", "seat0", 1000, "eleve", True)

    def _mock(self, path, method, *args):
        connection = self.bus.connect()
        try:
            target = connection.get_object("org.freedesktop.login1", path)
            return getattr(target, method)(*args, dbus_interface="org.freedesktop.DBus.Mock")
        finally:
            connection.close()

    def idle(self, value):
        import dbus

        self._mock(SESSION_PATH, "UpdateProperties", "org.freedesktop.login1.Session",
                   {"IdleHint": dbus.Boolean(value)})

    def stop(self):
        self.process.terminate()
        self.process.wait(5)


@pytest.fixture
def logind(bus):
    mock = Logind(bus)
    mock.idle(True)
    yield mock
    mock.stop()


def paused(bus):
    return status(bus)["paused"]


def test_the_owner_coming_back_pauses_and_leaving_resumes(bus, machine_dir, logind):
    daemon = Daemon(bus, machine_dir, config=CONFIG).start()
    try:
        time.sleep(1.5)
        assert paused(bus) is False  # an idle session is nobody at the machine
        logind.idle(False)
        started = time.monotonic()
        wait_for(lambda: paused(bus), timeout=5, what="the pause when the owner is back")
        print(f"paused {time.monotonic() - started:.2f} s after the session went active")
        assert "the owner is using this machine: pausing sharing" in daemon.log.read_text()
        logind.idle(True)
        started = time.monotonic()
        wait_for(lambda: not paused(bus), timeout=10, what="the resume after 2 s idle")
        assert time.monotonic() - started >= 1.5  # not before resume_after_idle_s
    finally:
        daemon.stop()


def test_a_pause_by_hand_is_never_resumed_and_a_resume_by_hand_is_respected(bus, machine_dir, logind):
    daemon = Daemon(bus, machine_dir, config=CONFIG).start()
    try:
        ctl(bus, "pause", check=True)
        logind.idle(False)
        time.sleep(1)
        logind.idle(True)
        time.sleep(4)
        assert paused(bus) is True, "the owner's own pause must stay"
        ctl(bus, "resume", check=True)
        logind.idle(False)
        wait_for(lambda: paused(bus), timeout=5, what="the automatic pause")
        ctl(bus, "resume", check=True)  # the owner wants to keep lending while working
        time.sleep(2)
        assert paused(bus) is False
    finally:
        daemon.stop()


def test_an_automatic_pause_survives_a_restart_and_is_still_undone(bus, machine_dir, logind):
    daemon = Daemon(bus, machine_dir, config=CONFIG).start()
    try:
        logind.idle(False)
        wait_for(lambda: paused(bus), timeout=5, what="the automatic pause")
        daemon.stop()
        logind.idle(True)
        daemon.start()
        wait_for(lambda: not paused(bus), timeout=10, what="the resume after the restart")
    finally:
        daemon.stop()


def test_without_logind_the_service_runs_and_says_so_once(bus, machine_dir):
    daemon = Daemon(bus, machine_dir, config=CONFIG).start()
    try:
        time.sleep(2)
        assert paused(bus) is False
        log = daemon.log.read_text()
        assert log.count("cannot read the sessions from logind") == 1, log
    finally:
        daemon.stop()
