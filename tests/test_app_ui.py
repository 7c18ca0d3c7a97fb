# SPDX-License-Identifier: GPL-3.0-or-later
"""The GNOME app under Xvfb, in English and French, against a real partagpud.

A private system bus runs partagpud ("lab-ui", a fake GPU, limits 40 % / 2 GiB / 30 %) in
a room that a second machine joined (after one wrong code, so the journal has an event),
with a job running. For each language and page the app starts on a private session bus
with `--page NAME`, and its test hook (src/app/src/snapshot.rs) saves GTK's own rendering
of the window and the text of every visible label; the test checks that real values are
there and that the room code is not. Screenshots: target/test-output/app-ui/.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from app_support import APP, app_env, display, locale_dir, session_bus  # noqa: F401 (fixtures)
from conftest import BIN_DIR, REPO, Bus, Daemon, code_leaks, ctl, wait_for

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


@pytest.fixture
def lab(bus, workdir):
    """This machine in a room with a second one, a wrong code journalled, a job running."""
    with contextlib.ExitStack() as cleanup:
        yield prepare_lab(bus, workdir, cleanup)


def prepare_lab(bus, workdir, cleanup):
    machine = workdir / "machine"
    machine.mkdir(mode=0o755)
    gpus = machine / "gpus.json"
    gpus.write_text(json.dumps([{"index": 0, "name": "NVIDIA RTX A4000", "uuid": "GPU-1", "memory_total_bytes": 16 * GIB,
                                 "memory_used_bytes": 3 * GIB, "utilization_percent": 42}]))
    here = Daemon(bus, machine, config='display_name = "lab-ui"\n', fake_gpus=gpus)
    cleanup.callback(here.stop)
    here.start()
    ctl(bus, "limits", "set", "--cpu", "40", "--ram", "2G", "--gpu", "30", check=True)
    created = ctl(bus, "room", "new", "--label", "Salle B12", check=True).stdout
    code = [line.strip() for line in created.splitlines() if line.strip()][1].split()
    assert len(code) == 4, created
    room = json.loads(ctl(bus, "room", "show", "--json", check=True).stdout)

    other_root = workdir / "m2"
    other_root.mkdir(mode=0o755)
    other_bus = Bus(other_root)
    cleanup.callback(other_bus.stop)
    (other_root / "machine").mkdir(mode=0o755)
    other = Daemon(other_bus, other_root / "machine", config='display_name = "lab-two"\n', peer_port=17656)
    cleanup.callback(other.stop)
    other.start()
    peer = ["--peer", f"127.0.0.1:{here.peer_port}", "--room", room["room_id"]]
    wrong = ["zoo"] * 4 if code != ["zoo"] * 4 else ["abandon"] * 4
    assert ctl(other_bus, "room", "join", *wrong, *peer).returncode != 0
    ctl(other_bus, "room", "join", *code, *peer, check=True)
    wait_for(lambda: len(json.loads(ctl(bus, "peers", "--json", check=True).stdout)["members"]) == 2,
             what="the second machine in the fleet")

    workspace = workdir / "workspace"
    workspace.mkdir()
    (workspace / "job.py").write_text("import time\nfor i in range(300):\n    print('step', i, flush=True)\n"
                                      "    time.sleep(1)\n")
    job = subprocess.Popen([str(BIN_DIR / "partagpuctl"), "run", "--workspace", str(workspace), "--", "python3", "job.py"],
                           env=bus.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Ctrl+C of `run` cancels the job, before the services stop.
    cleanup.callback(lambda: (job.send_signal(signal.SIGINT), job.wait(15)))
    wait_for(lambda: "running" in ctl(bus, "jobs").stdout, what="the job running")
    return {"code": code, "room": room}


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
def test_every_page_shows_real_values(bus, lab, display, session_bus, locale_dir, language):
    texts = {page: snapshot(bus, display, session_bus, locale_dir, language, page) for page in PAGES}
    for page, text in texts.items():
        assert HEADINGS[language][page] in text, f"{page}:\n{text}"
        assert not code_leaks(text, lab["code"]), page
    sharing = texts["sharing"]
    assert "lab-ui" in sharing and "NVIDIA RTX A4000" in sharing
    assert "slider: 40" in sharing and f"slider: {2 * GIB}" in sharing and "slider: 30" in sharing
    assert "python3 job.py" in sharing
    room = texts["room"]
    assert "Salle B12" in room and "lab-two" in room and lab["room"]["fingerprint"] in room
    jobs = texts["jobs"]
    assert "python3 job.py" in jobs and "step 0" in jobs
    security = texts["security"]
    assert ("warning" if language == "en" else "avertissement") in security
    assert "partagpu.distribute(" in texts["guide"]
    if language == "fr":
        assert "Mon partage" in sharing and "en cours" in jobs


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
        assert (icons / "symbolic" / "apps" / f"partagpu-{state}-symbolic.svg").exists()
