#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes fuzz/seeds/<target>/ from the PGR/1 known-answer vectors (src/core/tests/vectors).

The seeds start each fuzz target at inputs that get past the cheap checks: the vector
connection's hellos, flight and Finished, the NODE_AUTH signatures, every records.json case
(error cases included: unknown types and KEY_UPDATEs with a body need an authentic record) and
every normalisation input. The layouts are those documented at the top of each target.

Run after changing a vector or a target's input layout: fuzz/make_seeds.py
"""

import json
import shutil
import struct
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
VECTORS = FUZZ.parent / "src" / "core" / "tests" / "vectors"
SEEDS = FUZZ / "seeds"


def cases(name):
    return json.loads((VECTORS / f"{name}.json").read_text())["cases"]


def h(text):
    return bytes.fromhex(text)


def write(target, name, data):
    path = SEEDS / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def flip(data, index, mask=0x01):
    out = bytearray(data)
    out[index] ^= mask
    return bytes(out)


def main():
    shutil.rmtree(SEEDS, ignore_errors=True)
    t = cases("transcript")[0]
    hello, flight, cf = h(t["client_hello"]), h(t["server_flight"]), h(t["client_finished"])

    write("client_hello", "vector", hello)
    write("client_hello", "bad-flags", flip(hello, 7))
    write("client_hello", "bad-side", flip(hello, 24, 0x03))

    write("server_hello", "vector-flight", flight)
    write("server_hello", "vector-hello", flight[:41])
    write("server_hello", "vector-flight-bad-sf", flip(flight, 72))

    write("server_handshake", "vector", hello + cf)
    write("server_handshake", "vector-bad-cf", hello + flip(cf, 0))
    write("server_handshake", "vector-hello-only", hello)
    write("server_handshake", "unknown-room", flip(hello, 8) + cf)

    for i, c in enumerate(cases("node_auth")):
        layout = bytes([c["role"]]) + h(c["th"]) + h(c["seed"]) + h(c["body"])
        write("node_auth", f"vector-{i}", layout)
        write("node_auth", f"vector-{i}-body", h(c["body"]))

    for i, c in enumerate(cases("records")):
        seed = bytes([0, c["dir"]]) + struct.pack(">Q", c["seq"]) + h(c["wire"])
        write("record_decoder", f"stateless-{i:02}", seed)

    def op_honest(type_index, body):
        return bytes([2, type_index]) + struct.pack(">H", len(body)) + body

    key_update = 10  # index of KEY_UPDATE in RecordType::ALL
    connection = (
        bytes([1, 1])  # stateful, client-to-server
        + op_honest(1, b'{"purpose":"control","versions":[1],"caps":[]}')
        + bytes([6])  # replay the last accepted record
        + bytes([1, 0x03]) + struct.pack(">H", 2) + b"{}"  # authentic, unknown type 0x03
        + bytes([1, 0x50]) + struct.pack(">H", 1) + b"x"  # authentic KEY_UPDATE with a body
        + op_honest(key_update, b"")
        + op_honest(4, bytes(range(256)) * 4)  # DATA under the next key
        + bytes([3, 8]) + struct.pack(">H", 0) + b"" + struct.pack(">H", 5) + bytes([0x80])
        + bytes([4, 9]) + struct.pack(">H", 0)  # PING for the other direction
        + bytes([5, 9]) + struct.pack(">H", 0) + bytes([0])  # PING one seq ahead
        + bytes([7, 11]) + struct.pack(">H", 4) + b"bye!" + struct.pack(">H", 2)  # truncated
    )
    write("record_decoder", "connection", connection)

    for i, c in enumerate(cases("normalisation")):
        write("room_code", f"vector-{i:02}", h(c["input_hex"]))


if __name__ == "__main__":
    main()
