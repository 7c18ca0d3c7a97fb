# SPDX-License-Identifier: GPL-3.0-or-later
"""The window opens as it was last left (issue 8's GSettings schema, src/app/src/window_state.rs).

With the schema compiled from data/ and GLib's keyfile backend in a private config folder, the
app opens at the stored size; after a resize, Ctrl+W closes the window and the new size is in
the settings; Ctrl+Q quits. Without the schema (a build tree) it opens at its default size.
"""

import re
import shutil
import subprocess
import time

import pytest

from app_support import APP, app_env, display, locale_dir, session_bus  # noqa: F401 (fixtures)
from conftest import REPO, wait_for

pytestmark = pytest.mark.skipif(
    not APP.exists() or shutil.which("Xvfb") is None or shutil.which("xdotool") is None
    or shutil.which("glib-compile-schemas") is None,
    reason="needs the built app (cargo build), Xvfb, xdotool and glib-compile-schemas (scripts/lib/deps.sh)")

SECTION = "[org/partagpu/PartaGPU]"


def window_id(env):
    result = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "^PartaGPU$"], env=env,
                            capture_output=True, text=True, check=True, timeout=30)
    return result.stdout.split()[0]


def geometry(env, window):
    out = subprocess.run(["xdotool", "getwindowgeometry", window], env=env, capture_output=True, text=True,
                         check=True).stdout
    width, height = re.search(r"Geometry: (\d+)x(\d+)", out).groups()
    return int(width), int(height)


def stored(keyfile):
    return dict(re.findall(r"^(window-\w+)=(\S+)$", keyfile.read_text(), re.M)) if keyfile.exists() else {}


@pytest.fixture
def settings_env(workdir):
    schemas = workdir / "schemas"
    schemas.mkdir()
    subprocess.run(["glib-compile-schemas", "--strict", "--targetdir", str(schemas), str(REPO / "data")], check=True)
    keyfile = workdir / "config" / "glib-2.0" / "settings" / "keyfile"
    keyfile.parent.mkdir(parents=True)
    return keyfile, {"GSETTINGS_SCHEMA_DIR": str(schemas), "GSETTINGS_BACKEND": "keyfile",
                     "XDG_CONFIG_HOME": str(workdir / "config")}


def start(bus, display, session_bus, locale_dir, log, **extra):
    env = app_env(bus, display, session_bus, locale_dir, "en", RUST_LOG="info", **extra)
    return env, subprocess.Popen([str(APP)], env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def test_the_window_comes_back_at_the_size_it_was_left(bus, daemon, display, session_bus, locale_dir, settings_env,
                                                       workdir):
    keyfile, extra = settings_env
    keyfile.write_text(f"{SECTION}\nwindow-width=700\nwindow-height=540\n")
    env, app = start(bus, display, session_bus, locale_dir, workdir / "app.log", **extra)
    try:
        window = window_id(env)
        wait_for(lambda: geometry(env, window) == (700, 540), timeout=10, what="the stored size 700x540")
        subprocess.run(["xdotool", "windowsize", window, "820", "610"], env=env, check=True)
        wait_for(lambda: geometry(env, window) == (820, 610), timeout=10, what="the resize to 820x610")
        time.sleep(0.5)  # GTK takes the new size as its default size on the configure event
        subprocess.run(["xdotool", "windowfocus", "--sync", window, "key", "ctrl+w"], env=env, check=True)
        wait_for(lambda: stored(keyfile).get("window-width") == "820", timeout=10,
                 what=f"the new size in the settings, {keyfile.read_text()!r}")
        assert stored(keyfile) == {"window-width": "820", "window-height": "610", "window-maximized": "false"}
        # No tray host: closing the only window ends the app.
        app.wait(10)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(5)
    assert "could not store" not in (workdir / "app.log").read_text()


def test_ctrl_q_quits_and_without_the_schema_the_default_size_is_used(bus, daemon, display, session_bus,
                                                                       locale_dir, workdir):
    env, app = start(bus, display, session_bus, locale_dir, workdir / "app.log",
                     GSETTINGS_SCHEMA_DIR=str(workdir / "none"))
    try:
        window = window_id(env)
        wait_for(lambda: geometry(env, window) == (980, 860), timeout=10, what="the default size 980x860")
        subprocess.run(["xdotool", "windowfocus", "--sync", window, "key", "ctrl+q"], env=env, check=True)
        assert app.wait(10) == 0
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(5)
