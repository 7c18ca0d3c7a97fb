# SPDX-License-Identifier: GPL-3.0-or-later
"""A fresh Debian 12 (bookworm) minbase chroot for tests/test_package.py.

debootstrap runs once (about a minute); its tree is kept as a tarball under
/var/cache/partagpu-dev/chroot, valid while the mirror and the recipe (RECIPE, the suite in
it) are the same. The .debs apt downloads inside are kept in /var/cache/partagpu-dev/chroot-apt
(bind-mounted on the chroot's /var/cache/apt/archives), so a second run downloads nothing.
The mirror is the host's own, read from its apt sources.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path

SUITE = "bookworm"
CACHE = Path(os.environ.get("PARTAGPU_CACHE", "/var/cache/partagpu-dev"))
# Part of the cache key: changing how the base is made must make a new one.
RECIPE = ["debootstrap", "--variant=minbase", SUITE]
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
       "DEBIAN_FRONTEND": "noninteractive", "HOME": "/root"}


def host_mirror(suite=SUITE):
    """The URI of the host's apt source that carries `suite` (one-line or deb822 format)."""
    sources = Path("/etc/apt")
    files = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*"))]
    for file in files:
        if not file.is_file():
            continue
        text = file.read_text(errors="replace")
        if file.suffix == ".sources":
            for stanza in text.split("\n\n"):
                fields = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.lstrip().startswith("#"):
                        key, value = line.split(":", 1)
                        fields[key.strip().lower()] = value.split()
                if "deb" in fields.get("types", []) and suite in fields.get("suites", []):
                    return fields["uris"][0].rstrip("/")
        else:
            for line in text.splitlines():
                words = [w for w in line.split("#", 1)[0].split() if not w.startswith("[")]
                if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                    return words[1].rstrip("/")
    return None


def mirror_reachable(mirror, suite=SUITE):
    try:
        with urllib.request.urlopen(f"{mirror}/dists/{suite}/Release", timeout=20):
            return True
    except OSError:
        return False


def base_tarball(mirror, log):
    """The cached base system's tarball, made by debootstrap when missing or stale."""
    key = hashlib.sha256("\n".join(RECIPE + [mirror]).encode()).hexdigest()
    tarball = CACHE / "chroot" / f"{SUITE}-minbase.tar"
    stamp = tarball.with_suffix(".key")
    if tarball.exists() and stamp.exists() and stamp.read_text() == key:
        return tarball
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="partagpu-debootstrap-") as tmp:
        root = Path(tmp) / "root"
        log(f"debootstrap {SUITE} minbase from the host's mirror (cached afterwards)")
        subprocess.run([*RECIPE, str(root), mirror], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["tar", "-C", str(root), "-cf", f"{tarball}.tmp", "."], check=True)
    os.replace(f"{tarball}.tmp", tarball)
    stamp.write_text(key)
    return tarball


class Chroot:
    """A throw-away copy of the base system, with /proc and the apt cache mounted."""

    def __init__(self, tarball, workdir: Path):
        self.root = workdir / "root"
        self.root.mkdir()
        self.mounts = []
        subprocess.run(["tar", "-C", str(self.root), "-xf", str(tarball)], check=True)
        # No daemon may start inside (dbus's postinst would try): the policy-rc.d convention.
        policy = self.root / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        shutil.copy("/etc/resolv.conf", self.root / "etc/resolv.conf")
        self._mount(["-t", "proc", "proc"], "proc")
        archives = CACHE / "chroot-apt"
        (archives / "partial").mkdir(parents=True, exist_ok=True)
        self._mount(["--bind", str(archives)], "var/cache/apt/archives")

    def _mount(self, how, where):
        target = self.root / where
        subprocess.run(["mount", *how, str(target)], check=True)
        self.mounts.append(target)

    def run(self, *command, check=True):
        """Runs a command inside; returns its CompletedProcess (stdout and stderr together)."""
        result = subprocess.run(["chroot", str(self.root), *command], env=ENV, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}")
        return result

    def path(self, inside):
        return self.root / str(inside).lstrip("/")

    def close(self):
        """Unmounts everything; the tree is deleted only once nothing is mounted in it."""
        for target in reversed(self.mounts):
            if subprocess.run(["umount", str(target)]).returncode != 0:
                subprocess.run(["umount", "--lazy", str(target)], check=True)
        self.mounts.clear()
        with open("/proc/self/mounts") as mounts:
            busy = [line.split()[1] for line in mounts if line.split()[1].startswith(str(self.root))]
        if busy:
            raise AssertionError(f"still mounted, not deleting {self.root}: {busy}")
        shutil.rmtree(self.root)


def files_named(root: Path, word: str, skip=("proc", "var/cache/apt/archives")):
    """Every path under root whose name contains `word`, relative, outside `skip`."""
    found = []
    skipped = {root / s for s in skip}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if Path(directory, d) not in skipped]
        for name in dirs + files:
            if word in name.lower():
                found.append("/" + str(Path(directory, name).relative_to(root)))
    return sorted(found)
