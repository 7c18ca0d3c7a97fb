# SPDX-License-Identifier: GPL-3.0-or-later
"""The GNOME app under Xvfb, in English and French, against a 3-machine virtual lab.

Machines 1-3 of scripts/virtual-lab are in the room "Salle B12", found over real mDNS and
linked over real PGR/1; machine 1 has a (fake) GPU and limits 40 % / 2 GiB / 30 %; machine 2
tried one wrong code first, so machine 1's journal has an event; a job from machine 1 runs
on lab-2 and one from machine 3 runs on machine 1. For each language and page the app starts
on the host, on machine 1's system bus and a private session bus, with `--page NAME`; its
test hook (src/app/src/snapshot.rs) saves GTK's own rendering of the window and the text of
every visible label; the test checks that real values are there and that the room code is
not. Screenshots: target/test-output/app-ui/. Without a service, the app says what to do.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from app_support import APP, accessibility_bus, app_env, display, locale_dir, session_bus  # noqa: F401 (fixtures)
from conftest import REPO, code_leaks
from test_lab_fleet import wait_until
from test_virtual_lab import LAB, LAB_DIR, lab, lab_ok, on

OUTPUT = Path(os.environ.get("PARTAGPU_TEST_OUTPUT", REPO / "target" / "test-output")) / "app-ui"
GIB = 1 << 30
PAGES = ("sharing", "room", "jobs", "security", "guide")

# What each page must show, per language (besides the values checked in the test).
HEADINGS = {
    "en": {"sharing": "What this machine lends", "room": "Machines in the room", "jobs": "Jobs submitted from this machine",
           "security": "Security journal", "guide": "What PartaGPU does"},
    "fr": {"sharing": "Ce que prête cette machine", "room": "Machines de la salle", "jobs": "Tâches lancées depuis cette machine",
           "security": "Journal de sécurité", "guide": "Ce que fait PartaGPU"},
}

pytestmark = pytest.mark.skipif(not APP.exists() or shutil.which("Xvfb") is None or shutil.which("msgfmt") is None,
                                reason="needs the built app (cargo build), Xvfb and msgfmt (scripts/lib/deps.sh)")


class LabMachine:
    """A virtual-lab machine as the app sees it: its system bus (a socket path, so the app
    can run on the host, beside Xvfb and the session bus)."""

    def __init__(self, index):
        self.address = f"unix:path={LAB_DIR / f'm{index}' / 'bus' / 'system_bus_socket'}"

    def env(self, **extra):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address, **extra)
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        return env


def background_job(machine, workspace, *args):
    """`partagpuctl run` on a lab machine, in its own session so Ctrl+C reaches it."""
    return subprocess.Popen([str(LAB), "exec", str(machine), "--", "partagpuctl", "run", "--workspace", str(workspace),
                             *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@pytest.fixture(scope="module")
def room_lab(tmp_path_factory):
    """Three lab machines in "Salle B12" (machine 1 with a GPU, limits 40 % / 2 GiB / 30 %),
    a wrong code journalled on machine 1, a job from machine 1 running on lab-2 and one from
    machine 3 running on machine 1."""
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(lambda: lab("down", timeout=120))
        lab_ok("up", "3")
        (LAB_DIR / "m1" / "gpus.json").write_text(json.dumps([{
            "index": 0, "name": "NVIDIA RTX A4000", "uuid": "GPU-1", "memory_total_bytes": 16 * GIB,
            "memory_used_bytes": 3 * GIB, "utilization_percent": 42}]))
        lab_ok("restart", "1")
        assert on(1, "partagpuctl", "limits", "set", "--cpu", "40", "--ram", "2G", "--gpu", "30").returncode == 0
        created = on(1, "partagpuctl", "room", "new", "--label", "Salle B12")
        assert created.returncode == 0, created.stderr
        code = [line.strip() for line in created.stdout.splitlines() if line.strip()][1].split()
        assert len(code) == 4, created.stdout
        wrong = ["zoo"] * 4 if code != ["zoo"] * 4 else ["abandon"] * 4
        assert on(2, "partagpuctl", "room", "join", "--room", "Salle B12", *wrong).returncode != 0
        for machine in (2, 3):
            joined = on(machine, "partagpuctl", "room", "join", "--room", "Salle B12", *code)
            assert joined.returncode == 0, joined.stderr
        wait_until("three machines online in the room", lambda: sum(
            m["online"] for m in json.loads(on(1, "partagpuctl", "peers", "--json").stdout)["members"]) == 3, timeout=20)
        room = json.loads(on(1, "partagpuctl", "room", "show", "--json").stdout)

        workspace = tmp_path_factory.mktemp("workspace")
        workspace.chmod(0o755)
        (workspace / "job.py").write_text("import time\nfor i in range(300):\n    print('step', i, flush=True)\n"
                                          "    time.sleep(1)\n")
        (workspace / "lent.py").write_text("import time\ntime.sleep(300)\n")
        for job in (background_job(1, workspace, "--node", "lab-2", "--", "python3", "job.py"),
                    background_job(3, workspace, "--node", "lab-1", "--", "python3", "lent.py")):
            # Ctrl+C of `run` cancels its job, before the lab goes down.
            cleanup.callback(lambda job=job: (os.killpg(job.pid, signal.SIGINT), job.wait(30)))
        wait_until("both jobs running", lambda: on(1, "partagpuctl", "jobs").stdout.count("running") >= 2, timeout=30)
        yield {"code": code, "room": room, "machine": LabMachine(1)}


def snapshot(bus, display, session_bus, locale_dir, language, page, prefix=""):
    OUTPUT.mkdir(parents=True, exist_ok=True)
    base = OUTPUT / f"{prefix}{language}-{page}"
    for suffix in (".png", ".txt"):
        base.with_suffix(suffix).unlink(missing_ok=True)
    env = app_env(bus, display, session_bus, locale_dir, language, PARTAGPU_TEST_SNAPSHOT=str(base),
                  PARTAGPU_TEST_SNAPSHOT_DELAY_MS="2500", PARTAGPU_TEST_WINDOW_SIZE="1100x1600")
    result = subprocess.run([str(APP), "--page", page], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert base.with_suffix(".png").stat().st_size > 10_000, result.stderr
    return base.with_suffix(".txt").read_text()


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_page_shows_real_values(room_lab, display, session_bus, locale_dir, language):
    machine = room_lab["machine"]
    texts = {page: snapshot(machine, display, session_bus, locale_dir, language, page) for page in PAGES}
    for page, text in texts.items():
        assert HEADINGS[language][page] in text, f"{page}:\n{text}"
        assert not code_leaks(text, room_lab["code"]), page
    sharing = texts["sharing"]
    assert "lab-1" in sharing and "NVIDIA RTX A4000" in sharing
    assert "slider: 40" in sharing and f"slider: {2 * GIB}" in sharing and "slider: 30" in sharing
    # Numbers are written the language's way: "2.0 GiB" lent, "2,0 GiB" in French.
    assert ("2.0 GiB" if language == "en" else "2,0 GiB") in sharing, sharing
    # Running here: the job machine 3 sent, not the one machine 1 sent to lab-2.
    assert "python3 lent.py" in sharing and "lab-3" in sharing and "python3 job.py" not in sharing
    room = texts["room"]
    assert "Salle B12" in room and room_lab["room"]["fingerprint"] in room
    assert "lab-2" in room and "lab-3" in room
    jobs = texts["jobs"]
    assert "python3 job.py" in jobs and "step 0" in jobs and "lab-2" in jobs
    security = texts["security"]
    assert ("warning" if language == "en" else "avertissement") in security
    assert "partagpu.distribute(" in texts["guide"]
    if language == "fr":
        assert "Mon partage" in sharing and "en cours" in jobs


# What a screen reader must hear, per language: the sliders and gauges of "My sharing", a
# member's load on "Room", a severity icon on "Security".
SPOKEN = {
    "en": {"sharing": ["Processor share lent", "Memory lent", "Share of each graphics card lent", "Processor in use",
                       "Memory in use"], "room": ["Processor load of lab-2"], "security": ["warning"]},
    "fr": {"sharing": ["Part du processeur prêtée", "Mémoire prêtée", "Part de chaque carte graphique prêtée",
                       "Processeur utilisé", "Mémoire utilisée"], "room": ["Charge du processeur de lab-2"],
           "security": ["avertissement"]},
}


def accessibility_tree(env, focused=False):
    result = subprocess.run(["/usr/bin/python3", str(REPO / "tests" / "atspi_dump.py"), "partagpu",
                             *(["--focused"] if focused else [])], env=env, capture_output=True, text=True, timeout=60)
    return [json.loads(line) for line in result.stdout.splitlines()] if result.returncode == 0 else []


def focus_after_tab(env, before):
    """The names of what has the focus after one more Tab. Asked again until the answer
    differs from `before` (a dump may fail, or come before GTK has moved the focus, and the
    next Tab would then skip a control unseen), for at most 5 s."""
    subprocess.run(["xdotool", "key", "Tab"], env=env, check=True, timeout=10)
    deadline = time.monotonic() + 5
    while True:
        names = [e["name"] for e in accessibility_tree(env, focused=True)]
        if (names and names != before) or time.monotonic() > deadline:
            return names
        time.sleep(0.1)


# What a screen reader announces by its own name. Containers (lists, rows, scroll panes) are
# read through their children; pictures inside a named control are decoration.
CONTROLS = {"push button", "toggle button", "check box", "radio button", "slider", "spin button", "entry",
            "password text", "text", "page tab", "link", "combo box", "switch", "level bar", "drawing area"}


def unnamed(entry):
    """Nothing to say: GTK names an object it has no name for after its class (GtkImage,
    AdwGizmo), and the description is empty. (The job log's TextView keeps only its
    description in the app under GTK 4.8, though the same builder name holds in a plain GTK
    program: docs/app.md.)"""
    return (not entry["name"].strip() or entry["name"].startswith(("Gtk", "Adw"))) and not entry["description"]


@contextlib.contextmanager
def running_app(env, page):
    """The app on `page`, and a check that fails at once, with the app's messages, once the
    app has exited (waiting for its tree would only time out)."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"a11y-{env['LANGUAGE']}-{page}.log"
    with open(path, "w") as log:
        app = subprocess.Popen([str(APP), "--page", page], env=env, stdout=log, stderr=log)

    def still_running():
        assert app.poll() is None, f"{page}: the app exited ({app.returncode}): {path.read_text()[-2000:]}"
        return True

    try:
        yield still_running
    finally:
        app.terminate()
        app.wait(10)


@pytest.mark.skipif(shutil.which("xdotool") is None or not Path("/usr/libexec/at-spi-bus-launcher").exists(),
                    reason="needs at-spi2-core, gir1.2-atspi-2.0 and xdotool (scripts/lib/deps.sh)")
@pytest.mark.parametrize("language", ["en", "fr"])
def test_screen_readers_hear_names_and_the_keyboard_reaches_every_control(room_lab, display, accessibility_bus,
                                                                          locale_dir, language):
    env = app_env(room_lab["machine"], display, accessibility_bus, locale_dir, language, accessible=True)
    for page, names in SPOKEN[language].items():
        with running_app(env, page) as still_running:
            tree = []
            wait_until(f"{page}: the accessibility tree names {names}", lambda: still_running() and (
                tree.__setitem__(slice(None), accessibility_tree(env))
                or all(any(e["name"] == name for e in tree) for name in names)), timeout=30)
            # Every control says what it is.
            nameless = [(e["role"], e["name"], e["path"]) for e in tree if e["role"] in CONTROLS and unnamed(e)]
            assert not nameless, f"{page}: {nameless}"
            assert not code_leaks(json.dumps(tree, ensure_ascii=False), room_lab["code"])
            if page != "sharing":
                continue
            sliders = {e["name"]: e.get("value") for e in tree if e["role"] == "slider"}
            assert sliders == {names[0]: 40, names[1]: 2 * GIB, names[2]: 30}, sliders
            # Tab alone goes from the page switcher to each slider, in order.
            # Xvfb has no window manager: its focus follows the pointer, so the pointer goes
            # onto the window.
            subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "PartaGPU",
                            "mousemove", "--window", "%1", "300", "300"], env=env, check=True, timeout=30)
            reached, focused = [], []
            for _ in range(25):
                focused = focus_after_tab(env, focused)
                reached += [name for name in focused if name not in reached]
            assert [name for name in reached if name in names[:3]] == names[:3], reached


def test_without_the_service_the_app_says_what_to_do(bus, display, session_bus, locale_dir):
    text = snapshot(bus, display, session_bus, locale_dir, "en", "sharing", "no-service-")
    assert "The PartaGPU service is not running" in text
    assert "sudo systemctl enable --now partagpud" in text
    # The guide needs no service, and the notice is translated.
    assert "Ce que fait PartaGPU" in snapshot(bus, display, session_bus, locale_dir, "fr", "guide", "no-service-")
    assert "Le service PartaGPU ne tourne pas" in snapshot(bus, display, session_bus, locale_dir, "fr", "room", "no-service-")


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None or shutil.which("appstreamcli") is None,
                    reason="needs desktop-file-utils and appstream (scripts/lib/deps.sh)")
def test_the_desktop_file_and_metainfo_are_valid():
    data = REPO / "data"
    subprocess.run(["desktop-file-validate", str(data / "org.partagpu.PartaGPU.desktop")], check=True)
    subprocess.run(["appstreamcli", "validate", "--no-net", "--pedantic", str(data / "org.partagpu.PartaGPU.metainfo.xml")],
                   check=True, capture_output=True)
    icons = data / "icons" / "hicolor"
    assert (icons / "scalable" / "apps" / "org.partagpu.PartaGPU.svg").exists()
    for state in ("sharing", "paused", "off", "busy"):
        assert (icons / "symbolic" / "apps" / f"org.partagpu.PartaGPU-{state}-symbolic.svg").exists()
