# SPDX-License-Identifier: GPL-3.0-or-later
"""The .deb for lab imaging (scripts/package, packaging/debian/, docs/packaging.md).

Builds it with the debug profile (reusing target/debug), checks it with lintian and
dpkg-deb, then installs it with apt into a fresh Debian 12 chroot (package_chroot.py) so
its Depends resolve from the mirror, runs the binaries there, and purges it: nothing named
partagpu may be left but the job user's passwd line.
"""

import os
import shutil
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

import package_chroot
from conftest import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chroot, mount)")

VERSION = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
DEB = REPO / "dist" / f"partagpu_{VERSION}_amd64.deb"
OURS = ["/usr/bin/partagpu", "/usr/bin/partagpuctl", "/usr/libexec/partagpud"]
UNIT_LINK = "/etc/systemd/system/multi-user.target.wants/partagpud.service"


def log(message):
    print(f"[test_package] {message}", flush=True)


@pytest.fixture(scope="module")
def deb():
    started = time.monotonic()
    subprocess.run([REPO / "scripts/package", "--profile", "debug", "--no-lintian"], check=True)
    log(f"scripts/package --profile debug: {time.monotonic() - started:.0f} s")
    return DEB


def test_lintian_reports_no_error(deb):
    started = time.monotonic()
    result = subprocess.run(["lintian", "--display-info", str(deb)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log(f"lintian: {time.monotonic() - started:.0f} s\n{result.stdout}")
    errors = [line for line in result.stdout.splitlines() if line.startswith("E:")]
    assert not errors, "\n".join(errors)


def test_control_fields_and_contents(deb, tmp_path):
    field = lambda name: subprocess.run(["dpkg-deb", "-f", str(deb), name], text=True,
                                        check=True, capture_output=True).stdout.strip()
    assert field("Version") == VERSION
    assert field("Architecture") == "amd64"
    depends = {alt.split()[0] for part in field("Depends").split(",") for alt in part.split("|")}
    for package in ["libgtk-4-1", "libadwaita-1-0", "libc6", "bubblewrap", "dbus", "polkitd",
                    "nftables", "python3"]:
        assert package in depends, f"{package} not in Depends: {field('Depends')}"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    for binary in OURS:
        sections = subprocess.run(["readelf", "-S", str(tmp_path / binary.lstrip("/"))],
                                  text=True, check=True, capture_output=True).stdout
        assert ".debug_info" not in sections and ".symtab" not in sections, f"{binary} not stripped"
    assert (tmp_path / "lib/systemd/system/partagpud.service").is_file()
    assert (tmp_path / "usr/share/doc/partagpu/copyright").is_file()


@pytest.fixture(scope="module")
def chroot():
    mirror = package_chroot.host_mirror()
    if mirror is None:
        pytest.skip(f"no apt source for {package_chroot.SUITE} in /etc/apt: no mirror to bootstrap from")
    if not mirror_ok(mirror):
        pytest.skip(f"the host's mirror for {package_chroot.SUITE} cannot be reached; debootstrap cannot run")
    started = time.monotonic()
    tarball = package_chroot.base_tarball(mirror, log)
    workdir = Path(tempfile.mkdtemp(prefix="partagpu-chroot-"))
    try:
        box = package_chroot.Chroot(tarball, workdir)
        log(f"fresh {package_chroot.SUITE} chroot ready: {time.monotonic() - started:.0f} s")
        try:
            yield box
        finally:
            box.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def mirror_ok(mirror):
    return shutil.which("debootstrap") is not None and package_chroot.mirror_reachable(mirror)


def timed(box, what, *command):
    started = time.monotonic()
    result = box.run(*command)
    log(f"{what}: {time.monotonic() - started:.0f} s")
    return result


def test_install_run_and_purge_in_fresh_debian(deb, chroot):
    box = chroot
    shutil.copy(deb, box.path("/tmp"))
    before = package_chroot.files_named(box.root, "partagpu")
    assert before == [f"/tmp/{deb.name}"], before

    timed(box, "apt-get update", "apt-get", "update", "-qq")
    timed(box, "apt-get install (Depends from the mirror)", "apt-get", "install", "-y", "-q",
          "--no-install-recommends", f"/tmp/{deb.name}")

    # Every library of every binary is there: Depends cover what the binaries link.
    for binary in OURS:
        libraries = box.run("ldd", binary).stdout
        assert "not found" not in libraries, f"{binary}:\n{libraries}"
    assert box.run("partagpuctl", "--version").stdout.split() == ["partagpuctl", VERSION]
    help_text = box.run("/usr/libexec/partagpud", "--help").stdout
    assert "--state-dir" in help_text, help_text

    # An upgrade runs prerm upgrade and postinst configure <old version>: both must succeed.
    timed(box, "dpkg -i again (the upgrade path)", "dpkg", "-i", f"/tmp/{deb.name}")

    passwd = box.run("getent", "passwd", "partagpu-job").stdout
    assert passwd.startswith("partagpu-job:") and passwd.rstrip().endswith("nologin"), passwd
    # Enabled for the first boot of the image, not started: systemd does not run here.
    assert box.path(UNIT_LINK).is_symlink()
    assert os.readlink(box.path(UNIT_LINK)) == "/lib/systemd/system/partagpud.service"
    assert box.path("/var/lib/partagpu").is_dir()
    # Debian 12 is no Ubuntu >= 24.04: no AppArmor profile for bwrap.
    assert not box.path("/etc/apparmor.d/partagpu-bwrap").exists()

    # What postinst does on an Ubuntu >= 24.04 image (AppArmor 4's abi, Ubuntu's os-release).
    os_release = box.path("/etc/os-release")
    saved = os_release.read_bytes()
    box.path("/etc/apparmor.d/abi").mkdir(parents=True)
    box.path("/etc/apparmor.d/abi/4.0").write_text("# stand-in for AppArmor 4's abi\n")
    os_release.unlink()
    os_release.write_text('ID=ubuntu\nVERSION_ID="24.04"\n')
    box.run("/var/lib/dpkg/info/partagpu.postinst", "configure", VERSION)
    profile = box.path("/etc/apparmor.d/partagpu-bwrap").read_text()
    assert profile == box.path("/usr/share/partagpu/apparmor/partagpu-bwrap").read_text()
    assert "profile partagpu-bwrap /usr/bin/bwrap flags=(unconfined)" in profile and "userns," in profile
    os_release.unlink()
    os_release.write_bytes(saved)
    shutil.rmtree(box.path("/etc/apparmor.d"))

    # What a lab machine accumulates: the admin's config, the service's state and scratch.
    box.path("/etc/partagpu").mkdir(exist_ok=True)
    box.path("/etc/partagpu/partagpu.toml").write_text('[room]\nlabel = "Lab"\n')
    box.path("/var/lib/partagpu/journal").write_text("x\n")
    box.path("/run/partagpu/jobs").mkdir(parents=True, exist_ok=True)
    installed = [p for p in box.run("dpkg", "-L", "partagpu").stdout.split("\n") if p not in ("", "/.")]

    timed(box, "apt-get purge", "apt-get", "purge", "-y", "-q", "partagpu")
    box.path(f"/tmp/{deb.name}").unlink()
    left = package_chroot.files_named(box.root, "partagpu")
    assert left == [], f"left after purge: {left}"
    for path in installed:
        if box.path(path).is_dir():  # /lib too, a symlink to usr/lib on Debian 12
            # A directory may stay only when another package owns it too (/usr/bin, ...).
            assert box.run("dpkg", "-S", path, check=False).returncode == 0, f"{path} left"
        else:
            assert not os.path.lexists(box.path(path)), f"{path} left after purge"
    assert not os.path.lexists(box.path(UNIT_LINK))
    # Debian keeps system users on purge (docs/packaging.md, "The .deb").
    assert box.run("getent", "passwd", "partagpu-job", check=False).returncode == 0
    box.run("apt-get", "autoclean", "-qq")
