# SPDX-License-Identifier: GPL-3.0-or-later
"""The meson build (issue 8): `meson setup` and `meson test` pass with every validator really
run (none skipped), and `meson install` puts exactly the files docs/packaging.md lists where
it says, with the install paths filled in. The cargo build reuses target/debug (what
scripts/test built), so this costs seconds.
"""

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("meson") is None, reason="needs meson (scripts/lib/deps.sh)")

VERSION = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
APP_FILES = {
    "usr/bin/partagpu",
    "usr/share/applications/org.partagpu.PartaGPU.desktop",
    "etc/xdg/autostart/org.partagpu.PartaGPU.desktop",
    "usr/share/metainfo/org.partagpu.PartaGPU.metainfo.xml",
    "usr/share/glib-2.0/schemas/org.partagpu.PartaGPU.gschema.xml",
    "usr/share/icons/hicolor/scalable/apps/org.partagpu.PartaGPU.svg",
    "usr/share/locale/fr/LC_MESSAGES/partagpu.mo",
} | {f"usr/share/icons/hicolor/symbolic/apps/{name}-symbolic.svg" for name in
     ["org.partagpu.PartaGPU", *(f"org.partagpu.PartaGPU-{state}" for state in ("sharing", "paused", "off", "busy"))]}
SERVICE_FILES = {
    "usr/bin/partagpuctl",
    "usr/libexec/partagpud",
    "usr/lib/systemd/system/partagpud.service",
    "usr/lib/sysusers.d/partagpu.conf",
    "usr/lib/tmpfiles.d/partagpu.conf",
    "usr/share/dbus-1/interfaces/org.partagpu.PartaGPU.Daemon.xml",
    "usr/share/dbus-1/system.d/org.partagpu.PartaGPU.Daemon.conf",
    "usr/share/dbus-1/system-services/org.partagpu.PartaGPU.Daemon.service",
    "usr/share/polkit-1/actions/org.partagpu.PartaGPU.Daemon.policy",
    "usr/share/partagpu/polkit/50-partagpu-lab-staff.rules",
    "usr/share/doc/partagpu/packaging.md",
    "usr/share/doc/partagpu/partagpu.example.toml",
}
VALIDATORS = {"desktop-file-validate org.partagpu.PartaGPU.desktop",
              "desktop-file-validate org.partagpu.PartaGPU.Autostart.desktop",
              "appstreamcli-validate", "glib-compile-schemas", "systemd-analyze-verify", "potfiles"}


def meson(*args, **kwargs):
    return subprocess.run(["meson", *args], check=True, capture_output=True, text=True, **kwargs)


def configured(builddir, *options):
    shutil.rmtree(builddir, ignore_errors=True)
    meson("setup", "--prefix=/usr", "--sysconfdir=/etc", "--buildtype=debug",
          "-Dsystemdsystemunitdir=/usr/lib/systemd/system", f"-Dcargo_target_dir={REPO / 'target'}",
          "-Dcargo_tests=false", *options, str(builddir), cwd=REPO)
    return builddir


def installed(builddir, destdir):
    meson("install", "-C", str(builddir), "--quiet", "--destdir", str(destdir))
    return {str(path.relative_to(destdir)) for path in destdir.rglob("*") if not path.is_dir()}


@pytest.fixture(scope="module")
def full_build():
    return configured(REPO / "target" / "meson-test" / "full")


def test_version_is_the_workspace_one(full_build):
    info = json.loads(meson("introspect", "--projectinfo", str(full_build)).stdout)
    assert info["version"] == VERSION


def test_meson_test_runs_every_validator_and_passes(full_build):
    result = subprocess.run(["meson", "test", "-C", str(full_build), "--print-errorlogs"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    log = full_build / "meson-logs" / "testlog.json"
    # Names are "project:suite / test".
    results = {entry["name"].split(" / ", 1)[1]: entry["result"]
               for entry in map(json.loads, log.read_text().splitlines())}
    # "SKIP" would mean a tool is missing: scripts/lib/deps.sh installs them all.
    assert all(result == "OK" for result in results.values()), results
    assert VALIDATORS <= results.keys(), results.keys()
    xml_checked = {name.removeprefix("xmllint ") for name in results if name.startswith("xmllint ")}
    xml_sources = {path.name for directory in ["data", "dbus", "polkit"]
                   for path in (REPO / directory).glob("*")
                   if path.is_file() and path.read_bytes().startswith(b"<?xml")}
    assert xml_sources <= xml_checked, xml_sources - xml_checked


def test_install_puts_every_file_in_its_place(full_build, tmp_path):
    files = installed(full_build, tmp_path)
    assert files == APP_FILES | SERVICE_FILES, (files ^ (APP_FILES | SERVICE_FILES))
    unit = (tmp_path / "usr/lib/systemd/system/partagpud.service").read_text()
    assert "ExecStart=/usr/libexec/partagpud\n" in unit and "BusName=org.partagpu.PartaGPU.Daemon\n" in unit
    assert not re.search(r"@\w+@", unit), unit
    activation = (tmp_path / "usr/share/dbus-1/system-services/org.partagpu.PartaGPU.Daemon.service").read_text()
    assert "Exec=/usr/libexec/partagpud\n" in activation and "SystemdService=partagpud.service\n" in activation
    # The actions speak French through po/fr.po and the ITS rules.
    policy = (tmp_path / "usr/share/polkit-1/actions/org.partagpu.PartaGPU.Daemon.policy").read_text()
    assert '<description xml:lang="fr">Suspendre ou reprendre le prêt de cette machine</description>' in policy
    catalog = subprocess.run(["msgunfmt", str(tmp_path / "usr/share/locale/fr/LC_MESSAGES/partagpu.mo")],
                             capture_output=True, text=True, check=True).stdout
    assert 'msgstr "Mes tâches"' in catalog
    for binary in ["usr/bin/partagpu", "usr/bin/partagpuctl", "usr/libexec/partagpud"]:
        assert (tmp_path / binary).stat().st_mode & 0o111, binary
    version = subprocess.run([tmp_path / "usr/bin/partagpuctl", "--version"], capture_output=True, text=True)
    assert version.stdout.split() == ["partagpuctl", VERSION]


def test_the_app_alone_installs_no_system_file(tmp_path):
    """-Ddaemon=false, what the Flatpak builds: the app, its tray and desktop files only."""
    builddir = configured(REPO / "target" / "meson-test" / "app", "-Ddaemon=false")
    assert installed(builddir, tmp_path) == APP_FILES


def test_the_unit_check_fails_on_a_misspelt_directive(tmp_path):
    """systemd-analyze verify only warns on an unknown directive; our wrapper fails on it."""
    unit = tmp_path / "partagpud.service"
    unit.write_text("[Service]\nType=simple\nExecStart=/bin/true\nProtectSystm=strict\n")
    result = subprocess.run(["python3", REPO / "tests/meson_verify_unit.py", shutil.which("systemd-analyze"),
                             unit, "/bin/true"], capture_output=True, text=True)
    assert result.returncode != 0 and "ProtectSystm" in result.stderr, result.stderr
    unit.write_text("[Service]\nType=simple\nExecStart=/bin/true\nProtectSystem=strict\n")
    result = subprocess.run(["python3", REPO / "tests/meson_verify_unit.py", shutil.which("systemd-analyze"),
                             unit, "/bin/true"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
