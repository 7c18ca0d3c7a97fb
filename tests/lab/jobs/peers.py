# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs inside a peers-mode job: tries the allowed port and two refused ones, prints JSON."""
import errno
import json
import socket
import sys

host, allowed = sys.argv[1], int(sys.argv[2])

def connect(port):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            return s.recv(16).decode() or "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, type(error).__name__)

print(json.dumps({"allowed": connect(allowed), "service_port": connect(7655), "other": connect(allowed + 100)}))
