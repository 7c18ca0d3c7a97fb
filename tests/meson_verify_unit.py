#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`meson test` of the systemd unit: systemd-analyze verify, strictly.

    meson_verify_unit.py SYSTEMD_ANALYZE UNIT BINARY

verify checks that ExecStart= exists, and before `meson install` the daemon is only in the
build tree: the unit is verified as a copy in a scratch directory whose ExecStart= is BINARY.
verify exits 0 on an unknown or misspelt directive and only warns, so any output fails too.
"""

import subprocess
import sys
import tempfile
from pathlib import Path


def main(analyze: str, unit: str, binary: str) -> int:
    text = Path(unit).read_text()
    lines = [f"ExecStart={Path(binary).resolve()}" if line.startswith("ExecStart=") else line for line in text.splitlines()]
    if lines == text.splitlines():
        print(f"{unit} has no ExecStart= line", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / Path(unit).name
        copy.write_text("\n".join(lines) + "\n")
        result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if output:
        print(output, file=sys.stderr)
    return result.returncode or (1 if output else 0)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
