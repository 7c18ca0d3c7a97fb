# SPDX-License-Identifier: GPL-3.0-or-later
"""Submits hand-made workspaces to the local service over D-Bus (Jobs1.Submit), as a hostile
or careless client could, and prints one JSON line per case: the handle or the error."""
import hashlib
import io
import json
import os
import sys
import tarfile

import dbus


def tar_with(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name, kind=tarfile.REGTYPE, data=b"", link=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


CASES = {
    "good": lambda: tar_with([member("job.py", data=b"print('fine')\n")]),
    "traversal": lambda: tar_with([member("../escape.py", data=b"x")]),
    "absolute": lambda: tar_with([member("/etc/cron.d/evil", data=b"x")]),
    "symlink": lambda: tar_with([member("link", tarfile.SYMTYPE, link="/etc/shadow")]),
    "hardlink": lambda: tar_with([member("a", data=b"x"), member("b", tarfile.LNKTYPE, link="a")]),
    "fifo": lambda: tar_with([member("pipe", tarfile.FIFOTYPE)]),
    "device": lambda: tar_with([member("disk", tarfile.BLKTYPE)]),
    "too_many_files": lambda: tar_with([member(f"f{i}", data=b"") for i in range(4100)]),
}


def submit(jobs, tar, job_id, attempt=0, workspace_bytes=None, argv=("python3", "job.py"), **extra):
    spec = {
        "id": job_id, "attempt": attempt, "submitter": "0" * 32, "argv": list(argv),
        "workspace_bytes": len(tar) if workspace_bytes is None else workspace_bytes,
        "workspace_sha256": hashlib.sha256(tar).hexdigest(), **extra,
    }
    try:
        return {"job": str(jobs.Submit(json.dumps(spec), dbus.ByteArray(tar), "", byte_arrays=True))}
    except dbus.DBusException as error:
        return {"error": error.get_dbus_name(), "message": error.get_dbus_message()}


def main():
    bus = dbus.SystemBus()
    jobs = dbus.Interface(bus.get_object("org.partagpu.PartaGPU.Daemon", "/org/partagpu/PartaGPU/Daemon"),
                          "org.partagpu.PartaGPU.Daemon.Jobs1")
    results = {}
    for name in sys.argv[1:]:
        if name == "oversize":
            tar = tar_with([member("big.bin", data=os.urandom(17 << 20))])
            results[name] = submit(jobs, tar, os.urandom(16).hex())
        elif name == "duplicate":
            tar = CASES["good"]()
            job_id = os.urandom(16).hex()
            results[name] = [submit(jobs, tar, job_id) for _ in range(2)]
        elif name == "lying_size":
            tar = CASES["good"]()
            results[name] = submit(jobs, tar, os.urandom(16).hex(), workspace_bytes=len(tar) - 512)
        elif name == "checkpoint_not_sent":
            # Only a coordinator sends one, after the workspace over the peer port: the bus
            # carries none, so a spec naming one is refused.
            checkpoint = {"name": "c.pt", "size": 1 << 30, "sha256": "ab" * 32}
            results[name] = submit(jobs, CASES["good"](), os.urandom(16).hex(), resume_checkpoint=checkpoint)
        else:
            results[name] = submit(jobs, CASES[name](), os.urandom(16).hex())
    print(json.dumps(results))


main()
