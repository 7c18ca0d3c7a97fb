# SPDX-License-Identifier: GPL-3.0-or-later
"""The tray (issue 7), against a real partagpud on a private system bus.

A minimal StatusNotifierWatcher (tests/sni_watcher.py) stands for the desktop's tray host on
a private session bus. The app starts as its autostart entry does (`--background`): the item
registers, its icon follows the machine (sharing, paused, busy), and clicking its menu's
items through com.canonical.dbusmenu pauses and resumes the real service, opens the window
and quits. Without a watcher the app says so once in its log and keeps running.
"""

import json
import select
import shutil
import signal
import subprocess
import time

import dbus
import pytest

from app_support import APP, app_env, display, locale_dir, session_bus  # noqa: F401 (fixtures)
from conftest import BIN_DIR, REPO, SYSTEM_PYTHON, status, wait_for

ITEM = "org.kde.StatusNotifierItem"
MENU = "com.canonical.dbusmenu"
PROPERTIES = "org.freedesktop.DBus.Properties"

pytestmark = pytest.mark.skipif(not APP.exists() or shutil.which("Xvfb") is None or shutil.which("xwininfo") is None,
                                reason="needs the built app (cargo build), Xvfb and xwininfo (scripts/lib/deps.sh)")


@pytest.fixture
def watcher(session_bus):
    process = subprocess.Popen([SYSTEM_PYTHON, str(REPO / "tests" / "sni_watcher.py")], stdout=subprocess.PIPE,
                               text=True, env={"DBUS_SESSION_BUS_ADDRESS": session_bus, "PATH": "/usr/bin:/bin"})
    assert json.loads(process.stdout.readline()) == {"watching": "org.kde.StatusNotifierWatcher"}
    yield process
    process.terminate()
    process.wait(5)


def next_line(process, timeout):
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"nothing from the watcher within {timeout} s"
    return json.loads(process.stdout.readline())


class Tray:
    """The app's item as a tray host sees it."""

    def __init__(self, session_bus, registration):
        self.bus = dbus.bus.BusConnection(session_bus)
        self.item = self.bus.get_object(registration["service"], registration["path"])

    def prop(self, name):
        return self.item.Get(ITEM, name, dbus_interface=PROPERTIES)

    def menu(self):
        """{label: (id, enabled)} of the top-level menu."""
        menu = self.bus.get_object(self.item.bus_name, self.prop("Menu"))
        _, (_, _, children) = menu.GetLayout(0, -1, [], dbus_interface=MENU)
        entries = {}
        for child_id, props, _ in children:
            if "label" in props:
                entries[str(props["label"])] = (int(child_id), bool(props.get("enabled", True)))
        return entries

    def click(self, label):
        entries = self.menu()
        assert label in entries, entries
        menu = self.bus.get_object(self.item.bus_name, self.prop("Menu"))
        menu.Event(entries[label][0], "clicked", dbus.Int32(0, variant_level=1), dbus.UInt32(0), dbus_interface=MENU)

    def wait_icon(self, icon, timeout=10):
        wait_for(lambda: self.prop("IconName") == icon, timeout=timeout, what=f"the tray icon {icon}")


def window_shown(display):
    result = subprocess.run(["xwininfo", "-display", display, "-name", "PartaGPU"], capture_output=True, text=True)
    return result.returncode == 0 and "IsViewable" in result.stdout


def start_app(bus, display, session_bus, locale_dir, language, log, *args):
    env = app_env(bus, display, session_bus, locale_dir, language, RUST_LOG="info")
    return subprocess.Popen([str(APP), *args], env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def test_the_tray_pauses_resumes_shows_busy_opens_and_quits(bus, daemon, display, session_bus, locale_dir, watcher,
                                                             workdir):
    app = start_app(bus, display, session_bus, locale_dir, "en", workdir / "app.log", "--background")
    try:
        tray = Tray(session_bus, next_line(watcher, 20))
        tray.wait_icon("org.partagpu.PartaGPU-sharing-symbolic")
        assert tray.prop("Id") == "org.partagpu.PartaGPU"
        assert tray.prop("ToolTip")[3] == "Sharing: nothing runs here"
        entries = tray.menu()
        assert entries["Sharing: nothing runs here"][1] is False
        assert {"Pause sharing", "Open PartaGPU", "Quit"} <= entries.keys()
        assert not window_shown(display), "--background must not open the window"

        tray.click("Pause sharing")
        wait_for(lambda: status(bus)["state"] == "paused", what="the machine paused by the tray")
        tray.wait_icon("org.partagpu.PartaGPU-paused-symbolic")
        assert "Resume sharing" in tray.menu()
        tray.click("Resume sharing")
        wait_for(lambda: status(bus)["state"] == "sharing", what="the machine sharing again")
        tray.wait_icon("org.partagpu.PartaGPU-sharing-symbolic")

        job = run_a_job(bus, workdir)
        try:
            tray.wait_icon("org.partagpu.PartaGPU-busy-symbolic", timeout=20)
            assert tray.prop("ToolTip")[3] == "Sharing: 1 job runs here"
        finally:
            job.send_signal(signal.SIGINT)
            job.wait(15)
        tray.wait_icon("org.partagpu.PartaGPU-sharing-symbolic", timeout=20)

        tray.click("Open PartaGPU")
        wait_for(lambda: window_shown(display), what="the window opened from the tray")
        tray.click("Quit")
        assert app.wait(15) == 0
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(5)
    assert "no tray host" not in (workdir / "app.log").read_text()


def test_the_menu_is_french_with_a_french_session(bus, daemon, display, session_bus, locale_dir, watcher, workdir):
    app = start_app(bus, display, session_bus, locale_dir, "fr", workdir / "app.log")
    try:
        tray = Tray(session_bus, next_line(watcher, 20))
        tray.wait_icon("org.partagpu.PartaGPU-sharing-symbolic")
        wait_for(lambda: window_shown(display), what="the window of a plain start")
        assert {"Partage : rien ne tourne ici", "Suspendre le partage", "Ouvrir PartaGPU", "Quitter"} <= tray.menu().keys()
        tray.click("Quitter")
        assert app.wait(15) == 0
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(5)


def test_without_a_tray_host_the_app_logs_once_and_keeps_running(bus, daemon, display, session_bus, locale_dir,
                                                                  workdir):
    log = workdir / "app.log"
    app = start_app(bus, display, session_bus, locale_dir, "en", log, "--background")
    try:
        wait_for(lambda: "no tray host" in log.read_text(), timeout=20, what="the line saying there is no tray host")
        time.sleep(2)
        assert app.poll() is None, log.read_text()
        assert log.read_text().count("no tray host") == 1
        assert "ERROR" not in log.read_text()
    finally:
        app.send_signal(signal.SIGTERM)
        app.wait(10)


def run_a_job(bus, workdir):
    workspace = workdir / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "job.py").write_text("import time\ntime.sleep(120)\n")
    job = subprocess.Popen([str(BIN_DIR / "partagpuctl"), "run", "--workspace", str(workspace), "--", "python3", "job.py"],
                           env=bus.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return job
