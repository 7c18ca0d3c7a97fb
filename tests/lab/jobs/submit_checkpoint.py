# SPDX-License-Identifier: GPL-3.0-or-later
"""Submits jobs over PGR/1 (§7.6 `submit`) with a checkpoint to start from, as the
coordinator of a new launch of a training does: the checkpoint follows the workspace. Run
with a Python that has the partagpu package: submit_checkpoint.py PEER WORD WORD WORD WORD.
Prints one JSON object: what each case got back."""

import hashlib
import io
import json
import os
import sys
import tarfile

from partagpu.remote import Room
from partagpu.remote.wire import parse_log, parse_reply, receive_reply, send_request, send_stream
from partagpu.pgr.records import RecordType

# Bigger than a whole workspace may be (16 MiB): it could not travel inside one.
BIG = 20 << 20
READ = ("import hashlib, pathlib; p = pathlib.Path('c.pt'); "
        "print(len(p.read_bytes()), hashlib.sha256(p.read_bytes()).hexdigest(), oct(p.stat().st_mode & 0o777))")


def workspace():
    """A workspace whose own c.pt is stale: the checkpoint sent after it replaces it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("c.pt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"stale"))
    return buffer.getvalue()


def spec(room, tar, checkpoint):
    return {
        "id": os.urandom(16).hex(), "attempt": 0, "submitter": room.node_id,
        "argv": ["python3", "-c", READ], "workspace_bytes": len(tar),
        "workspace_sha256": hashlib.sha256(tar).hexdigest(), "resume_checkpoint": checkpoint,
    }


def send(room, announced, sent):
    """One submit: the workspace, then `sent` for the checkpoint `announced`; the session
    and the answer (or the reason the member closed the connection)."""
    session, _ = room.dial()
    tar = workspace()
    job = spec(room, tar, announced)
    try:
        send_request(session, {"op": "submit", "spec": job})
        send_stream(session, tar)
        send_stream(session, sent)
        reply = receive_reply(session)
    except Exception as error:  # the member closing is what a case expects
        return session, job, {"closed": str(error)}
    return session, job, {"ok": reply.ok, "error": reply.error, "record": reply.record}


def follow(session, job, handle):
    send_request(session, {"op": "follow", "job": handle, "offset": 0})
    log = b""
    while True:
        record_type, body = session.recv(60)
        if record_type is RecordType.LOG:
            log += parse_log(body)[1]
        elif record_type is RecordType.RESPONSE:
            reply = parse_reply(body)
            if reply.done or not reply.ok:
                return {"state": (reply.record or {}).get("state"), "log": log.decode(), "error": reply.error}


def main():
    peer, words = sys.argv[1], " ".join(sys.argv[2:])
    room = Room(words, peer=peer)
    data = os.urandom(BIG)
    good = {"name": "c.pt", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    results = {}
    flipped = bytes([data[0] ^ 1]) + data[1:]
    session, _, results["damaged"] = send(room, good, flipped)
    session.close()
    session, _, results["longer"] = send(room, dict(good, size=1000), data[:2000])
    session.close()
    session, job, answer = send(room, good, data)
    results["accepted"] = answer
    if answer.get("ok"):
        handle = f"{room.node_id[:12]}-{job['id']}-0"
        results["ran"] = follow(session, job, handle)
    session.close()
    results["expected"] = f"{len(data)} {good['sha256']} 0o644"
    print(json.dumps(results))


main()
