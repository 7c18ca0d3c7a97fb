# SPDX-License-Identifier: GPL-3.0-or-later
"""A member's side of PGR/1 job connections (§7.6) on 127.0.0.1, for the tests of
``partagpu.remote``: the real Python handshake (``accept_session``, purpose "job"), then
``distribute``, ``follow``, ``cancel`` and ``artifact`` as partagpud serves them
(``src/daemon/src/peer/jobs.rs``).

It is strict where partagpud is: a HELLO, REQUEST, DATA or DATA_END that partagpud would
refuse is written to ``errors`` and the connection is closed with the reason, so a test that
ends with ``errors == []`` shows the client behaved. A training is a script of steps
played while the client follows: ``("log", bytes)``, ``("state", name)``, ``("hold",)``
(until a cancel arrives), ``("sleep", s)`` (silence, PINGs answered), ``("mute", s)`` (no
answer at all, then the connection breaks) and ``("drop",)`` (the connection breaks).
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
from typing import Any

from partagpu.pgr.codes import RoomCode
from partagpu.pgr.control_hello import encode_hello
from partagpu.pgr.errors import ConnectionClosedError, PgrError
from partagpu.pgr.node_auth import NodeIdentity
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.records import RecordType
from partagpu.pgr.session import Session, accept_session

CODE = "zoo zebra wrist abandon"
ROOM_ID = bytes(range(16))
EPOCH = 3
CHUNK = 60_000
TERMINAL = {"succeeded", "failed", "cancelled", "preempted", "lost"}
PARTS = [{"job": "p0", "node": "cd" * 16, "node_name": "lab-1", "node_rank": 0, "processes": 1,
          "state": "running"},
         {"job": "p1", "node": "ef" * 16, "node_name": "lab-2", "node_rank": 1, "processes": 1,
          "state": "running"}]


class _Refused(Exception):
    """What partagpud would close the connection for."""


class FakeMember:
    """Serves job connections until :meth:`stop`; ``steps`` is the training's script,
    ``artifacts`` (name → bytes) what it brings back, ``damage`` (name → "flip",
    "bad-end" or "longer") how an artifact is spoiled on the way."""

    def __init__(self, steps: list[tuple], artifacts: dict[str, bytes] | None = None, *,
                 damage: dict[str, str] | None = None, refuse: str | None = None) -> None:
        self.steps, self.artifacts, self.refuse = steps, artifacts or {}, refuse
        self.damage = damage or {}
        self.identity = NodeIdentity.generate()
        self.password = RoomPassword.derive(RoomCode.parse(CODE), ROOM_ID)
        self.errors: list[str] = []
        self.handshake_failures: list[PgrError] = []
        self.requests: list[dict[str, Any]] = []
        self.workspaces: list[bytes] = []
        self.checkpoints: list[bytes] = []
        self.closes: list[str] = []
        self.pings = 0
        self.jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.peer = f"127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self._listener.close()

    def settle(self, until: Any, timeout: float = 5.0) -> None:
        """Waits until ``until()`` holds: the server's threads lag the client a little."""
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError("the fake member did not get there in time")
            time.sleep(0.01)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    # -- one connection ------------------------------------------------------------------
    def _serve(self, sock: socket.socket) -> None:
        hello = {"purpose": "job", "versions": [1], "caps": [],
                 "room": {"label": "Salle B12", "epoch": EPOCH}}
        try:
            session = accept_session(sock, self.password, ROOM_ID, EPOCH, self.identity, hello,
                                     purposes=("job",))
        except PgrError as error:
            self.handshake_failures.append(error)
            return
        try:
            if session.peer_hello != {"purpose": "job", "versions": [1], "caps": []}:
                raise _Refused(f"a job HELLO with more than purpose, versions, caps: "
                               f"{session.peer_hello}")
            self._requests(session)
        except _Refused as refusal:
            self.errors.append(str(refusal))
            session.close(str(refusal))
        except ConnectionClosedError:
            session.close()  # the client went away: its right, at any point
        except Exception as error:  # noqa: BLE001 — a bug of the fake fails the test too
            self.errors.append(f"the fake member failed: {error!r}")
            session.close()

    def _requests(self, session: Session) -> None:
        while True:
            try:
                record_type, body = session.recv(30)
            except ConnectionClosedError:
                return
            if record_type is RecordType.CLOSE:
                self.closes.append(body.decode())
                return
            if record_type is RecordType.PING:
                self.pings += 1
                session.send(RecordType.PONG)
                continue
            if record_type is not RecordType.REQUEST:
                raise _Refused(f"{record_type.name}: a record out of place on a job connection")
            request = json.loads(body)
            self.requests.append(request)
            op = request.get("op")
            fields = {"distribute": {"op", "spec", "nodes"}, "follow": {"op", "job", "offset"},
                      "cancel": {"op", "job"}, "artifact": {"op", "job", "name"}}.get(op)
            if fields is None or set(request) != fields:
                raise _Refused(f"a job request that is not valid: {request}")
            if op == "distribute":
                self._distribute(session, request)
                continue
            job = self.jobs.get(request["job"])
            if job is None or job["record"]["submitter"] != session.peer_node_id:
                self._refuse(session, f"no job {request['job']!r} of yours on this machine")
            elif op == "follow":
                if self._follow(session, job, request["offset"]) == "dropped":
                    return
            elif op == "cancel":
                self._cancel(job)
                self._reply(session, {"ok": True, "record": job["record"], "done": False})
            else:
                self._send_artifact(session, job, request["name"])

    def _reply(self, session: Session, reply: dict[str, Any]) -> None:
        session.send(RecordType.RESPONSE, encode_hello(reply))

    def _refuse(self, session: Session, error: str) -> None:
        self._reply(session, {"ok": False, "error": error, "done": False})

    @staticmethod
    def _stream(session: Session, limit: int, what: str) -> tuple[bytes, bool]:
        """DATA records up to ``limit`` bytes, then their DATA_END: the bytes and whether
        the DATA_END matches them."""
        data = bytearray()
        while True:
            record_type, body = session.recv(10)
            if record_type is RecordType.DATA:
                if len(body) > CHUNK or len(data) + len(body) > limit:
                    raise _Refused(f"a {what} larger than it announced, or a DATA over 60000 bytes")
                data += body
            elif record_type is RecordType.DATA_END and len(body) == 40:
                return bytes(data), body == hashlib.sha256(data).digest() + struct.pack("!Q", len(data))
            else:
                raise _Refused(f"{record_type.name}: a record out of place in a {what} upload")

    def _distribute(self, session: Session, request: dict[str, Any]) -> None:
        spec, node = request["spec"], session.peer_node_id
        data, intact = self._stream(session, spec["workspace_bytes"], "workspace")
        if not intact:
            return self._refuse(session, "the workspace arrived damaged (length or SHA-256)")
        self.workspaces.append(data)
        resume = spec.get("resume_checkpoint")
        if resume is not None:
            checkpoint, intact = self._stream(session, resume["size"], "checkpoint")
            if not intact or hashlib.sha256(checkpoint).hexdigest() != resume["sha256"]:
                return self._refuse(session, "the checkpoint to start from arrived damaged (length or SHA-256)")
            self.checkpoints.append(checkpoint)
        if spec["submitter"] != node:
            return self._refuse(session, "the training's submitter is not the machine that sent it")
        if self.refuse:
            return self._refuse(session, self.refuse)
        handle = f"{node[:12]}-{spec['id']}-{spec['attempt']}"
        record = {"job": handle, "id": spec["id"], "attempt": spec["attempt"], "submitter": node,
                  "submitter_name": node[:8], "node": self.identity.node_id.hex(),
                  "node_name": "lab-1", "role": "group", "argv": spec["argv"],
                  "runtime": spec["runtime"], "state": "accepted", "reason": None,
                  "exit_code": None, "created_ms": 1_000, "started_ms": None, "ended_ms": None,
                  "artifacts": [], "log_bytes": 0, "parts": PARTS}
        with self._lock:
            self.jobs[handle] = {"record": record, "log": bytearray(), "step": 0, "cancels": 0}
        self._reply(session, {"ok": True, "record": record, "done": False})

    # -- following -----------------------------------------------------------------------
    def _follow(self, session: Session, job: dict[str, Any], offset: int) -> str:
        if not isinstance(offset, int) or not 0 <= offset <= len(job["log"]):
            raise _Refused(f"a follow from offset {offset}, beyond the {len(job['log'])} bytes "
                           "sent")
        self._send_log(session, offset, bytes(job["log"][offset:]))
        told = None
        while True:
            if self._incoming_while_following(session, job) == "closed":
                return "dropped"
            record = job["record"]
            if told != record["state"]:
                self._reply(session, {"ok": True, "record": record, "done": False})
                told = record["state"]
            if job["step"] >= len(self.steps):
                if record["state"] not in TERMINAL:
                    raise AssertionError("the test's script ends before the training does")
                self._reply(session, {"ok": True, "record": record, "done": True})
                return "done"
            step = self.steps[job["step"]]
            if step[0] == "hold" and not job["cancels"]:
                time.sleep(0.02)
                continue
            job["step"] += 1
            if step[0] == "log":
                self._send_log(session, len(job["log"]), step[1])
                job["log"] += step[1]
            elif step[0] == "state":
                self._set_state(job, step[1])
            elif step[0] == "sleep":
                until = time.monotonic() + step[1]
                while time.monotonic() < until:
                    if self._incoming_while_following(session, job) == "closed":
                        return "dropped"
                    time.sleep(0.01)
            elif step[0] in ("drop", "mute"):
                time.sleep(step[1] if step[0] == "mute" else 0)  # reading nothing meanwhile
                session._abort()  # no CLOSE: as a cable pulled out
                return "dropped"
            time.sleep(0.02)

    def _incoming_while_following(self, session: Session, job: dict[str, Any]) -> str:
        cancel = {"op": "cancel", "job": job["record"]["job"]}
        while session.wait_for_record(0):
            record_type, body = session.recv(5)
            if record_type is RecordType.PING:
                self.pings += 1
                session.send(RecordType.PONG)
            elif record_type is RecordType.REQUEST and json.loads(body) == cancel:
                self.requests.append(cancel)
                self._cancel(job)
            elif record_type is RecordType.CLOSE:
                self.closes.append(body.decode())
                return "closed"
            else:
                raise _Refused(f"{record_type.name}: a request other than cancel while "
                               "following a job")
        return "open"

    def _send_log(self, session: Session, offset: int, data: bytes) -> None:
        for start in range(0, len(data), CHUNK):
            body = struct.pack("!Q", offset + start) + data[start:start + CHUNK]
            session.send(RecordType.LOG, body)

    def _cancel(self, job: dict[str, Any]) -> None:
        job["cancels"] += 1
        self._set_state(job, "cancelled", "cancelled by its submitter")

    def _set_state(self, job: dict[str, Any], state: str, reason: str | None = None) -> None:
        if job["record"]["state"] in TERMINAL:
            return  # a terminal state never changes (docs/jobs.md), a cancel may come first
        record = dict(job["record"], state=state, reason=reason)
        if state == "running":
            record["started_ms"] = 2_000
        if state in TERMINAL:
            record.update(ended_ms=14_345, exit_code=0 if state == "succeeded" else 1)
            if state == "succeeded":
                record["artifacts"] = [{"name": name, "size": len(data),
                                        "sha256": hashlib.sha256(data).hexdigest()}
                                       for name, data in self.artifacts.items()]
        job["record"] = record

    def _send_artifact(self, session: Session, job: dict[str, Any], name: str) -> None:
        if job["record"]["state"] != "succeeded" or name not in self.artifacts:
            return self._refuse(session, f"the job has no artifact {name!r}")
        data, damage = self.artifacts[name], self.damage.get(name)
        sent = (bytes([data[0] ^ 1]) + data[1:] if damage == "flip"
                else data + b"!" if damage == "longer" else data)
        for start in range(0, len(sent), CHUNK):
            session.send(RecordType.DATA, sent[start:start + CHUNK])
        digest = b"\0" * 32 if damage == "bad-end" else hashlib.sha256(sent).digest()
        session.send(RecordType.DATA_END, digest + struct.pack("!Q", len(sent)))
