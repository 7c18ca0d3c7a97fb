# SPDX-License-Identifier: GPL-3.0-or-later
"""Misbehaving jobs: one kind per argument."""
import os
import sys
import time

kind = sys.argv[1]
if kind == "ram":
    blocks = []
    while True:
        blocks.append(bytearray(32 << 20))
elif kind == "forks":
    children = 0
    try:
        while True:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            children += 1
    except OSError as error:
        print(f"fork refused after {children} children: {error}", flush=True)
        sys.exit(3)
elif kind == "cpu":
    for _ in range(3):
        if os.fork() == 0:
            break
    end = time.time() + 4
    while time.time() < end:
        pass
    for _ in range(3):
        try:
            os.wait()
        except ChildProcessError:
            break
elif kind == "ticks":
    i = 0
    while True:
        print("tick", i, flush=True)
        i += 1
        time.sleep(0.05)
