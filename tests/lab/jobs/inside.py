# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs INSIDE a job's sandbox and prints one JSON line of what it can see and do (T4)."""
import errno
import json
import os
import socket
import subprocess

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))

def write(path):
    with open(path, "w") as f:
        f.write("x")

status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
try:
    userns = subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode
except OSError:
    userns = "no unshare binary"
print(json.dumps({
    "uid": os.getuid(),
    "cap_eff": status["CapEff"].strip(),
    "no_new_privs": status.get("NoNewPrivs", "").strip(),
    "interfaces": interfaces,
    "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
    "visible": {p: os.path.exists(p) for p in ("/home", "/root", "/etc/shadow", "/run/dbus/system_bus_socket",
                                             "/tmp/.X11-unix", "/var/lib/partagpu", "/sys/fs/cgroup")},
    "write_usr": attempt(lambda: write("/usr/pg-test")),
    "write_root": attempt(lambda: write("/pg-test")),
    "write_etc": attempt(lambda: write("/etc/passwd")),
    "write_workspace": attempt(lambda: write("/workspace/pg-test")),
    "userns": userns,
    "connect_host": attempt(lambda: socket.create_connection(("10.98.0.1", 7655), timeout=2)),
    "env": sorted(os.environ),
    "cwd": os.getcwd(),
}))
