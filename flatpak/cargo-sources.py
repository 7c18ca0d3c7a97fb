#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the Flatpak sources that let cargo build the workspace offline.

    cargo-sources.py [--lock Cargo.lock] [--dl TEMPLATE] [--output cargo-sources.json]

flatpak-builder has no network while it builds, so every crate of Cargo.lock is fetched
beforehand as an "archive" source, unpacked into cargo/vendor/NAME-VERSION with the
.cargo-checksum.json cargo wants there, and cargo/config.toml points crates-io at that
directory (CARGO_HOME is the module's cargo/ folder, see org.partagpu.PartaGPU.json).

TEMPLATE is the registry's download template, the "dl" field of its index's config.json,
with cargo's markers ({crate}, {version}, {prefix}, {lowerprefix}, {sha256-checksum}; none
means "/{crate}/{version}/download" is appended, as cargo does). Without --dl it is read
from cargo's local index cache, so the sources point where this machine's cargo fetches
(a lab's mirror included). The output is generated, not committed (flatpak/README.md).
Only the Python 3.11 standard library is used.
"""

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENDOR = "cargo/vendor"
MARKERS = ("{crate}", "{version}", "{prefix}", "{lowerprefix}", "{sha256-checksum}")
# Written as cargo/config.toml; relative paths there are relative to the folder above
# cargo/, i.e. the module's build directory.
CARGO_CONFIG = f"""[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "{VENDOR}"

[net]
offline = true
"""


class Failure(Exception):
    """Something the person running the script must fix; printed without a traceback."""


def locked_crates(lock_path: Path) -> list[dict]:
    """The registry packages of Cargo.lock, in its order. Workspace members (no source)
    need nothing; git dependencies or a second registry are refused rather than silently
    left out, because the offline build would then fail much later inside flatpak-builder.
    The one registry allowed is the lock's: cargo config.toml below replaces crates-io."""
    with open(lock_path, "rb") as file:
        lock = tomllib.load(file)
    crates = []
    registry = None
    for package in lock.get("package", []):
        source = package.get("source")
        if source is None:
            continue
        name = f"{package['name']} {package['version']}"
        if not source.startswith("registry+") or registry not in (None, source):
            raise Failure(f"{name} comes from {source}: only the packages of one registry can be "
                          "vendored by this script (publish the dependency or add a source for it by hand)")
        registry = source
        if "checksum" not in package:
            raise Failure(f"{name} has no checksum in {lock_path}")
        crates.append(package)
    return crates


def _prefix(name: str) -> str:
    # cargo's index layout: 1/, 2/, 3/a/, ab/cd/.
    if len(name) <= 2:
        return str(len(name))
    if len(name) == 3:
        return f"3/{name[0]}"
    return f"{name[:2]}/{name[2:4]}"


def crate_url(template: str, package: dict) -> str:
    name, version = package["name"], package["version"]
    if not any(marker in template for marker in MARKERS):
        return f"{template.rstrip('/')}/{name}/{version}/download"
    return (template.replace("{crate}", name).replace("{version}", version)
            .replace("{prefix}", _prefix(name)).replace("{lowerprefix}", _prefix(name).lower())
            .replace("{sha256-checksum}", package["checksum"]))


def flatpak_sources(crates: list[dict], template: str) -> list[dict]:
    sources = []
    for package in crates:
        dest = f"{VENDOR}/{package['name']}-{package['version']}"
        checksum = package["checksum"]
        sources.append({
            "type": "archive",
            # The URL ends in /download: flatpak-builder cannot guess the format from it.
            "archive-type": "tar-gzip",
            "url": crate_url(template, package),
            "sha256": checksum,
            "dest": dest,
        })
        # cargo checks a directory source against this file; "files" empty: nothing per file.
        sources.append({
            "type": "inline",
            "contents": json.dumps({"package": checksum, "files": {}}),
            "dest": dest,
            "dest-filename": ".cargo-checksum.json",
        })
    sources.append({
        "type": "inline",
        "contents": CARGO_CONFIG,
        "dest": "cargo",
        "dest-filename": "config.toml",
    })
    return sources


def render(sources: list[dict]) -> str:
    return json.dumps(sources, indent=4) + "\n"


def template_from_cargo_cache() -> str:
    """The "dl" of the index(es) cargo has cached here; must be one value."""
    cargo_home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
    found = set()
    for config in sorted((cargo_home / "registry" / "index").glob("*/config.json")):
        dl = json.loads(config.read_text()).get("dl")
        if dl:
            found.add(dl)
    if len(found) != 1:
        raise Failure(f"{len(found)} download templates in cargo's index cache under {cargo_home}: "
                      "pass --dl with the \"dl\" of the crates-io index's config.json")
    return found.pop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--lock", type=Path, default=HERE.parent / "Cargo.lock")
    parser.add_argument("--output", type=Path, default=HERE / "cargo-sources.json")
    parser.add_argument("--dl", help="the registry's download template (its config.json \"dl\")")
    args = parser.parse_args(argv)
    try:
        template = args.dl or template_from_cargo_cache()
        crates = locked_crates(args.lock)
        text = render(flatpak_sources(crates, template))
    except Failure as failure:
        print(f"cargo-sources.py: {failure}", file=sys.stderr)
        return 1
    # Written whole at the end: a failure above leaves the previous file untouched.
    args.output.write_text(text)
    print(f"{args.output}: {len(crates)} crates", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
