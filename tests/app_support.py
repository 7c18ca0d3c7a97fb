# SPDX-License-Identifier: GPL-3.0-or-later
"""What the app's tests share: an Xvfb display, a private session bus, the compiled French
catalogue, and the app's environment."""

import os
import subprocess
import time

import pytest

from conftest import BIN_DIR, REPO

APP = BIN_DIR / "partagpu"
ATSPI_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"


@pytest.fixture
def display(workdir):
    """An Xvfb display, given once a client can open it, with Xvfb's messages kept. It runs
    with -noreset: by default an X server resets when its last client leaves, and a client
    whose connection arrives during that reset is dropped before it is answered (a known X
    server race, xorg/xserver issue 1102). Here this check and the at-spi launcher connect
    and leave just before the app does; twice in CI, under load, the app then could not
    open the display."""
    log = workdir / "xvfb.log"
    read, write = os.pipe()
    with open(log, "w") as errors:
        server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x1700x24", "-nolisten", "tcp",
                                   "-noreset"],
                                  pass_fds=(write,), stderr=errors)
    os.close(write)
    with os.fdopen(read) as pipe:
        name = f":{pipe.readline().strip()}"
    deadline = time.monotonic() + 15
    while subprocess.run(["xwininfo", "-root", "-display", name], capture_output=True, timeout=10).returncode != 0:
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise AssertionError(f"Xvfb's display {name!r} cannot be opened: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    yield name
    server.terminate()
    server.wait(5)


@pytest.fixture
def session_bus(workdir):
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    address = daemon.stdout.readline().strip()
    yield address
    daemon.terminate()
    daemon.wait(5)


@pytest.fixture
def locale_dir(workdir):
    target = workdir / "locale" / "fr" / "LC_MESSAGES"
    target.mkdir(parents=True)
    subprocess.run(["msgfmt", "-o", str(target / "partagpu.mo"), str(REPO / "po" / "fr.po")], check=True)
    return workdir / "locale"


@pytest.fixture
def accessibility_bus(session_bus, display):
    """The session bus, with AT-SPI's bus launcher on it (org.a11y.Bus), as a desktop session
    has: GTK then exports the app's accessibility tree, which tests/atspi_dump.py reads."""
    launcher = subprocess.Popen([ATSPI_LAUNCHER, "--launch-immediately"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                env=dict(os.environ, DBUS_SESSION_BUS_ADDRESS=session_bus, DISPLAY=display))
    yield session_bus
    launcher.terminate()
    launcher.wait(5)


def app_env(bus, display, session_bus, locale_dir, language, accessible=False, **extra):
    """The app's environment: the machine's system bus, the display, a session bus, and
    `language` (LANGUAGE, as a desktop session sets it). Without `accessible`, GTK's AT-SPI
    bridge is off (there is no accessibility bus to wait for)."""
    quiet = {} if accessible else {"GTK_A11Y": "none", "NO_AT_BRIDGE": "1"}
    env = bus.env(DISPLAY=display, GSK_RENDERER="cairo", LANG="C.UTF-8", LANGUAGE=language,
                  PARTAGPU_LOCALEDIR=str(locale_dir), **quiet, **extra)
    # After bus.env, which drops the caller's session bus so nothing reaches the desktop's.
    env["DBUS_SESSION_BUS_ADDRESS"] = session_bus
    env.pop("LC_ALL", None)
    return env
