#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""What meson asks of cargo, kept out of meson's language.

    meson_cargo.py version Cargo.toml
        prints the workspace version (meson's project version, the .deb's, the wheel's).
    meson_cargo.py build CARGO MANIFEST TARGET_DIR PROFILE OUT_DIR PACKAGE... -- BIN...
        runs ONE cargo build of the packages and puts the binaries into meson's OUT_DIR.

The environment meson sets (LOCALEDIR) reaches rustc's option_env! through cargo.
"""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path


def version(cargo_toml: str) -> None:
    with open(cargo_toml, "rb") as file:
        print(tomllib.load(file)["workspace"]["package"]["version"])


def build(cargo: str, manifest: str, target_dir: str, profile: str, out_dir: str, rest: list[str]) -> None:
    split = rest.index("--")
    packages, bins = rest[:split], rest[split + 1:]
    command = [cargo, "build", "--locked", "--manifest-path", manifest, "--target-dir", target_dir]
    if profile == "release":
        command.append("--release")
    for package in packages:
        command += ["-p", package]
    subprocess.run(command, check=True)
    built = Path(target_dir) / profile
    for name in bins:
        out = Path(out_dir) / name
        out.unlink(missing_ok=True)
        # A hard link costs nothing (debug binaries are ~150 MB); another file system gets a copy.
        try:
            os.link(built / name, out)
        except OSError:
            shutil.copy2(built / name, out)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "version":
        version(argv[1])
    elif len(argv) > 6 and argv[0] == "build" and "--" in argv:
        build(*argv[1:6], argv[6:])
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
