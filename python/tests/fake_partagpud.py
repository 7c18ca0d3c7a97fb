# SPDX-License-Identifier: GPL-3.0-or-later
"""A private ``dbus-daemon`` and a fake partagpud on it, for the D-Bus client tests.

The fake owns ``org.partagpu.PartaGPU.Daemon`` and answers
``org.freedesktop.DBus.Properties.Get``/``GetAll`` on ``/org/partagpu/PartaGPU/Daemon`` from
a table ``{interface: {property: (signature, value)}}``, over a real bus, so the client's
messages, the bus's routing and jeepney's (de)serialisation are all exercised.

Given a :class:`FakeJobs`, it also serves a minimal in-memory ``Jobs1``: Submit and
Distribute create a :class:`FakeJob` from a script the test wrote (output chunks played one
per ``Logs`` call, a final state, artifacts sent through real file descriptors), or answer
the error the test asked for.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jeepney import HeaderFields, Message, MessageType, new_error, new_method_return
from jeepney.bus_messages import DBusNameFlags, message_bus
from jeepney.bus import get_connectable_addresses
from jeepney.io.blocking import Proxy, prep_socket

# jeepney's own connection waits for ever on a bus that does not answer Hello; this one
# gives up, so a broken test bus fails the test instead of hanging it.
from partagpu.dbus_client import _DeadlineConnection

SERVICE_NAME = "org.partagpu.PartaGPU.Daemon"
OBJECT_PATH = "/org/partagpu/PartaGPU/Daemon"
FLEET = f"{SERVICE_NAME}.Fleet1"
ROOM = f"{SERVICE_NAME}.Room1"
JOBS = f"{SERVICE_NAME}.Jobs1"
PROPERTIES = "org.freedesktop.DBus.Properties"
ERROR_PREFIX = f"{SERVICE_NAME}.Error."
SUBMITTER = "ab" * 16
TERMINAL = {"succeeded", "failed", "cancelled", "preempted", "lost"}

DBUS_DAEMON = shutil.which("dbus-daemon")

# Anyone may own any name, send and receive anything: the bus only routes the test's messages.
# (Without the receive rule this dbus-daemon holds back even its own reply to Hello.)
_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


@contextlib.contextmanager
def short_tmp_dir() -> Iterator[Path]:
    """A fresh folder under /tmp: unix socket paths must stay under 108 bytes, which
    pytest's tmp_path (named after the test) does not guarantee."""
    with tempfile.TemporaryDirectory(prefix="partagpu-") as folder:
        yield Path(folder)


@contextlib.contextmanager
def private_bus() -> Iterator[str]:
    """Runs a dbus-daemon of its own and yields its address."""
    assert DBUS_DAEMON is not None
    with short_tmp_dir() as folder:
        config = folder / "bus.conf"
        config.write_text(_BUS_CONFIG.format(socket=folder / "bus"), encoding="utf-8")
        process = subprocess.Popen(
            [DBUS_DAEMON, f"--config-file={config}", "--nofork", "--print-address"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            address = process.stdout.readline().strip()  # printed once it listens
            if not address:
                raise RuntimeError(f"dbus-daemon did not start: {process.stderr.read()}")
            yield address
        finally:
            process.terminate()
            process.wait(10)


@dataclass
class FakeJob:
    """A scripted job: ``chunks`` of output, one handed out per Logs call, then the job
    ends in ``final`` with ``reason``/``exit_code`` and ``artifacts`` (name → content; for a
    failed training, the last checkpoint the service kept).
    With ``hold``, it keeps running (no more output) until Cancel; a cancel plays
    ``on_cancel`` chunks then ends ``cancelled``."""

    chunks: list[bytes] = field(default_factory=list)
    final: str = "succeeded"
    reason: str | None = None
    exit_code: int | None = 0
    artifacts: dict[str, bytes] = field(default_factory=dict)
    hold: bool = False
    on_cancel: list[bytes] = field(default_factory=lambda: [b"KeyboardInterrupt\n"])
    parts: list[dict[str, Any]] = field(default_factory=list)
    # announced (name → (size, sha256)) differently from the content, to test the checks
    announced: dict[str, tuple[int, str]] = field(default_factory=dict)
    # filled in by the fake
    record: dict[str, Any] = field(default_factory=dict)
    log: bytearray = field(default_factory=bytearray)
    cancelled: int = 0

    def _advance(self) -> None:
        if self.record["state"] in TERMINAL:
            return
        self.record["state"] = "running"
        self.record.setdefault("started_ms", 1_700_000_000_000)
        if self.chunks:
            self.log += self.chunks.pop(0)
        elif not self.hold:
            self._end(self.final, self.reason, self.exit_code)

    def _end(self, state: str, reason: str | None, exit_code: int | None) -> None:
        import hashlib

        self.record.update(state=state, reason=reason, exit_code=exit_code,
                           ended_ms=self.record["started_ms"] + 12_345, log_bytes=len(self.log))
        self.record["artifacts"] = [
            {"name": name, **dict(zip(("size", "sha256"), self.announced.get(
                name, (len(data), hashlib.sha256(data).hexdigest()))))}
            for name, data in self.artifacts.items()] if state in ("succeeded", "failed") else []
        for part in self.record.get("parts", []):
            part["state"] = state


@dataclass
class FakeJobs:
    """The Jobs1 state: ``make`` builds the job for each Submit/Distribute (given the method,
    the spec dict, the workspace bytes and the node argument); ``errors`` maps a method name
    to the (error name without prefix, message) it answers instead."""

    make: Callable[[str, dict[str, Any], bytes, str], FakeJob] = lambda *_: FakeJob()
    errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    jobs: dict[str, FakeJob] = field(default_factory=dict)
    received: list[tuple[str, dict[str, Any], bytes, str]] = field(default_factory=list)
    # What each DistributeResuming's file descriptor held, read as the service reads it.
    checkpoints: list[bytes] = field(default_factory=list)

    def find(self, handle: str) -> FakeJob:
        found = [job for name, job in self.jobs.items()
                 if name == handle or job.record["id"].startswith(handle)]
        if len(found) != 1:
            raise LookupError(f"no job {handle!r} here")
        return found[0]

    def answer(self, call: Message, member: str) -> Message:
        if member in self.errors:
            name, message = self.errors[member]
            return new_error(call, ERROR_PREFIX + name, "s", (message,))
        try:
            return self._answer(call, member, call.body)
        except LookupError as error:
            return new_error(call, ERROR_PREFIX + "JobNotFound", "s", (str(error.args[0]),))

    def _answer(self, call: Message, member: str, body: tuple[Any, ...]) -> Message:
        if member == "DistributeResuming":
            with body[3].to_file("rb") as passed:
                self.checkpoints.append(passed.read())
            member = "Distribute"
        if member in ("Submit", "Distribute"):
            spec = json.loads(body[0])
            self.received.append((member, spec, bytes(body[1]), body[2]))
            job = self.make(member, spec, bytes(body[1]), body[2])
            handle = f"{SUBMITTER[:12]}-{spec['id']}-{spec['attempt']}"
            job.record = {"job": handle, "id": spec["id"], "attempt": spec["attempt"],
                          "submitter": SUBMITTER, "submitter_name": "pc-01",
                          "node": "cd" * 16, "node_name": body[2] or "pc-01",
                          "role": "group" if member == "Distribute" else "both",
                          "argv": spec["argv"], "state": "accepted", "reason": None,
                          "exit_code": None, "created_ms": 1_699_999_999_000,
                          "artifacts": [], "artifact_patterns": spec["artifacts"]}
            if job.parts:
                job.record["parts"] = job.parts
            self.jobs[handle] = job
            return new_method_return(call, "s", (handle,))
        if member == "List":
            records = [job.record for job in reversed(self.jobs.values())]
            return new_method_return(call, "s", (json.dumps(records),))
        job = self.find(body[0])
        if member == "Show":
            return new_method_return(call, "s", (json.dumps(job.record),))
        if member == "Logs":
            offset, most = body[1], body[2]
            job._advance()
            data = bytes(job.log[offset:offset + most])
            following = offset + len(data)
            complete = job.record["state"] in TERMINAL and following >= len(job.log)
            return new_method_return(call, "aytb", (data, following, complete))
        if member == "Cancel":
            job.cancelled += 1
            if job.record["state"] not in TERMINAL:
                job.chunks = [*job.chunks, *job.on_cancel]
                job.hold, job.final = False, "cancelled"
                job.reason, job.exit_code = "cancelled by its submitter", None
            return new_method_return(call, "", ())
        if member == "OpenArtifact":
            if body[1] not in job.artifacts:
                raise LookupError(f"job {body[0]} has no artifact {body[1]!r}")
            # A regular file as the service sends, unlinked at once; the fake closes its fd.
            file = tempfile.TemporaryFile()
            file.write(job.artifacts[body[1]])
            file.seek(0)
            return _with_fd(call, os.dup(file.fileno()))
        return new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s",
                         (f"no method {member}",))


def _with_fd(call: Message, fd: int) -> Message:
    reply = new_method_return(call, "h", (fd,))
    reply.fd_to_close = fd  # closed by the fake once sent
    return reply


class FakePartagpud:
    """Owns the service name on ``address`` and answers property reads (and Jobs1 calls
    when given ``jobs``) in a thread."""

    def __init__(self, address: str, properties: dict[str, dict[str, tuple[str, Any]]],
                 jobs: FakeJobs | None = None) -> None:
        self.properties = properties
        self.jobs = jobs
        self.calls: list[tuple[str, tuple[Any, ...]]] = []  # (member, body), in order
        self._stop = threading.Event()
        sock = prep_socket(next(get_connectable_addresses(address)), enable_fds=True, timeout=5)
        self._connection = _DeadlineConnection(sock, hello_timeout=5, enable_fds=True)
        (owned,) = Proxy(message_bus, self._connection, timeout=5).RequestName(
            SERVICE_NAME, DBusNameFlags.do_not_queue)
        if owned != 1:  # DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER
            raise RuntimeError(f"could not own {SERVICE_NAME} (RequestName answered {owned})")
        self._thread = threading.Thread(target=self._serve, name="fake-partagpud", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._connection.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._connection.receive(timeout=0.05)
            except TimeoutError:
                continue
            if message.header.message_type is MessageType.method_call:
                reply = self._answer(message)
                self._connection.send(reply)
                fd = getattr(reply, "fd_to_close", None)
                if fd is not None:
                    os.close(fd)

    def _answer(self, call: Message) -> Message:
        fields = call.header.fields
        member = fields.get(HeaderFields.member)
        self.calls.append((member, tuple(call.body)))
        if fields.get(HeaderFields.path) != OBJECT_PATH:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownObject", "s",
                             (f"no object {fields.get(HeaderFields.path)}",))
        if fields.get(HeaderFields.interface) == JOBS and self.jobs is not None:
            return self.jobs.answer(call, member)
        if fields.get(HeaderFields.interface) != PROPERTIES or member not in ("Get", "GetAll"):
            return new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s",
                             (f"no method {member}",))
        interface = call.body[0]
        if interface not in self.properties:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownInterface", "s",
                             (f"no interface {interface}",))
        values = self.properties[interface]
        if member == "GetAll":
            return new_method_return(call, "a{sv}", (values,))
        name = call.body[1]
        if name not in values:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownProperty", "s",
                             (f"no property {name}",))
        return new_method_return(call, "v", (values[name],))


@contextlib.contextmanager
def fake_partagpud(address: str, properties: dict[str, dict[str, tuple[str, Any]]],
                   jobs: FakeJobs | None = None):
    service = FakePartagpud(address, properties, jobs)
    try:
        yield service
    finally:
        service.close()
