# SPDX-License-Identifier: GPL-3.0-or-later
"""A job (docs/jobs.md): :class:`Job` follows one by its handle, :func:`list_jobs` reads
the local partagpud's jobs (``Jobs1``).

A :class:`Job` reaches the machine that knows it through a :class:`JobTransport`: by
default :class:`BusTransport`, the local partagpud on the system bus (one connection, opened
on first use and again after :meth:`Job.close`); from a machine without the service,
:mod:`partagpu.remote`'s, a member of the room over PGR/1. Its record is a dict as the
service sends it, unknown keys kept.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ContextManager, Protocol

from partagpu.dbus_client import JOBS_INTERFACE, ServiceClient
from partagpu.errors import ServiceError
from partagpu.workspace import receive_artifact

TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled", "preempted", "lost"})
DEPARTED = frozenset({"preempted", "lost"})  # how a part leaves an elastic training
LOG_CHUNK = 1 << 20
POLL_S = 0.25


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ServiceError(f"partagpud sent {what} that is not JSON") from None


def list_jobs(timeout: float = 10.0) -> list[dict[str, Any]]:
    """Every job the local partagpud knows, newest first, as records (``Jobs1.List``)."""
    with ServiceClient(timeout) as client:
        (text,) = client.call(JOBS_INTERFACE, "List", timeout=timeout)
    records = _json(text, "a job list")
    if not isinstance(records, list):
        raise ServiceError("partagpud sent a job list that is not a JSON array")
    return records


def _where(record: dict[str, Any]) -> str:
    role = record.get("role")
    if role == "group":
        return "→ " + ", ".join(p.get("node_name") or p.get("node", "?")
                                for p in record.get("parts") or [])
    if role == "here":
        return f"{record.get('submitter_name') or str(record.get('submitter', '?'))[:12]} → here"
    if role == "submitted":
        return f"→ {record.get('node_name') or str(record.get('node', '?'))[:12]}"
    return "here"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def format_jobs(records: list[dict[str, Any]], now_ms: int) -> str:
    """The table of ``python -m partagpu jobs``: JOB (id prefix), STATE, WHERE (``here``,
    ``→ lab-2``, ``lab-1 → here``, ``→ lab-1, lab-2`` for a training), COMMAND, AGE, RAN."""
    rows = [("JOB", "STATE", "WHERE", "COMMAND", "AGE", "RAN")]
    for record in records:
        command = " ".join(record.get("argv") or [])
        started, ended = record.get("started_ms"), record.get("ended_ms")
        rows.append((str(record.get("id", ""))[:8], str(record.get("state", "?")), _where(record),
                     command if len(command) <= 40 else command[:39] + "…",
                     _duration(max(now_ms - record.get("created_ms", now_ms), 0) / 1000) + " ago",
                     _duration(((ended or now_ms) - started) / 1000) if started else "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in rows)


# Saves one artifact: (name, size, sha256, output directory) → its path, checked.
SaveArtifact = Callable[[str, int, str, "str | Path"], Path]


class JobTransport(Protocol):
    """What a :class:`Job` asks of the machine that knows it."""

    def show(self, handle: str) -> dict[str, Any]:
        """The job's record now."""

    def read_log(self, handle: str, offset: int, limit: int) -> tuple[bytes, int, bool]:
        """Up to ``limit`` bytes of output from ``offset``: (bytes, next offset, complete)."""

    def cancel(self, handle: str) -> None:
        """Asks for the job to stop."""

    def artifacts(self, handle: str) -> ContextManager[SaveArtifact]:
        """A context in which the job's artifacts are saved one by one."""

    def close(self) -> None:
        """Releases the connection(s); the next call may open another."""


class BusTransport:
    """The local partagpud's ``Jobs1`` over one system-bus connection, opened on first use."""

    def __init__(self, timeout: float = 30.0) -> None:
        self._timeout = timeout
        self._client: ServiceClient | None = None

    def _call(self, member: str, signature: str = "", *body: Any) -> tuple[Any, ...]:
        if self._client is None:
            self._client = ServiceClient(self._timeout, enable_fds=True)
        return self._client.call(JOBS_INTERFACE, member, signature, body, timeout=self._timeout)

    def show(self, handle: str) -> dict[str, Any]:
        (text,) = self._call("Show", "s", handle)
        record = _json(text, f"a record of {handle}")
        if not isinstance(record, dict):
            raise ServiceError(f"partagpud sent a record of {handle} that is not an object")
        return record

    def read_log(self, handle: str, offset: int, limit: int) -> tuple[bytes, int, bool]:
        data, following, complete = self._call("Logs", "stu", handle, offset, limit)
        return bytes(data), following, complete

    def cancel(self, handle: str) -> None:
        self._call("Cancel", "s", handle)

    @contextlib.contextmanager
    def artifacts(self, handle: str) -> Iterator[SaveArtifact]:
        def save(name: str, size: int, sha256: str, output: str | Path) -> Path:
            (descriptor,) = self._call("OpenArtifact", "ss", handle, name)
            with descriptor.to_file("rb") as source:
                return receive_artifact(source, output, name, size, sha256)
        yield save

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class Job:
    """One job (or distributed training), named by ``handle``, reached through
    ``transport`` (default: the local partagpud over D-Bus).

    ``record`` is the last record read (``refresh`` or ``status`` read it again);
    ``artifacts`` lists the record's artifacts, each with a ``path`` once fetched.
    A training of ``distribute(nodes="auto")`` has its ``plan`` and, once measured, its
    ``outcome``; any other job has None for both.
    """

    plan: Any = None
    outcome: Any = None

    def __init__(self, handle: str, record: dict[str, Any] | None = None,
                 timeout: float = 30.0, *, transport: JobTransport | None = None) -> None:
        self.handle = handle
        self._record = record
        self._transport: JobTransport = transport or BusTransport(timeout)
        self._offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._fetched: dict[str, Path] = {}

    def close(self) -> None:
        """Closes the connection to the service (the next call opens another)."""
        self._transport.close()

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- state ---------------------------------------------------------------------------
    def refresh(self) -> dict[str, Any]:
        """Reads the record again (``Show``; over PGR/1, the last one the member sent) and
        returns it."""
        record = self._transport.show(self.handle)
        self._record = record
        return record

    @property
    def record(self) -> dict[str, Any]:
        """The last record read (read once if none was)."""
        return self._record if self._record is not None else self.refresh()

    @property
    def status(self) -> str:
        """The state now (reads the record again): ``accepted``, ``running``, ``succeeded``…"""
        return str(self.refresh().get("state", "unknown"))

    @property
    def done(self) -> bool:
        """Whether the last record read is in a terminal state."""
        return self.record.get("state") in TERMINAL_STATES

    @property
    def artifacts(self) -> list[dict[str, Any]]:
        """The artifacts of the last record: ``name``, ``size``, ``sha256`` (+ ``path``)."""
        found = [dict(a) for a in self.record.get("artifacts") or [] if isinstance(a, dict)]
        for artifact in found:
            if artifact.get("name") in self._fetched:
                artifact["path"] = self._fetched[artifact["name"]]
        return found

    def cancel(self) -> None:
        """Asks the service to stop the job (SIGINT, then SIGTERM, then SIGKILL)."""
        self._transport.cancel(self.handle)

    # -- output --------------------------------------------------------------------------
    def read_lines(self) -> tuple[list[str], bool]:
        """One ``Logs`` call from where reading stopped: the complete lines received (and the
        unfinished last one once the log is complete), and whether it is complete."""
        data, following, complete = self._transport.read_log(self.handle, self._offset, LOG_CHUNK)
        self._offset = following
        text = self._partial + self._decoder.decode(data, final=complete)
        lines = text.splitlines(keepends=True)
        self._partial = ""
        if lines and not lines[-1].endswith("\n") and not complete:
            self._partial = lines.pop()
        return lines, complete

    def logs(self, follow: bool = False, poll: float = POLL_S) -> Iterator[str]:
        """The output, line by line, resuming where the last read of this object stopped;
        with ``follow``, waits for more until the job ends."""
        while True:
            lines, complete = self.read_lines()
            yield from lines
            if complete or not follow:
                if not follow and self._partial:
                    yield self._partial
                    self._partial = ""
                return
            if not lines:
                time.sleep(poll)

    def wait(self, timeout: float | None = None, poll: float = 0.5) -> dict[str, Any]:
        """Waits until the job ends and returns its record; ``TimeoutError`` after
        ``timeout`` seconds (the job keeps running)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (record := self.refresh()).get("state") not in TERMINAL_STATES:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {self.handle} did not end within {timeout:g} s")
            time.sleep(poll)
        return record

    # -- artifacts -----------------------------------------------------------------------
    def fetch(self, output: str | Path = ".") -> list[Path]:
        """Saves every artifact of the record under ``output`` (checked by size and SHA-256)
        and returns their paths."""
        saved: list[Path] = []
        artifacts = self.refresh().get("artifacts") or []
        if not artifacts:
            return saved
        with self._transport.artifacts(self.handle) as save:
            for artifact in artifacts:
                name, size, sha256 = artifact["name"], int(artifact["size"]), str(artifact["sha256"])
                path = save(name, size, sha256, output)
                self._fetched[name] = path
                saved.append(path)
        return saved

    # -- reports -------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Where and how it ran: ``machines`` (names), ``ranks`` (name → node rank), ``lost``
        (machines an elastic training went on without: lost or preempted), ``rejoined`` (those
        that left it and came back),
        ``processes`` (total), ``wall_s``, ``state``, ``reason``, ``exit_code``, and for a
        training using :mod:`partagpu.ddp`, ``training`` (its reports: prediction, steps,
        ``slowest`` of the last few steps, ``slowed_steps``: how many of the ``compared_steps``
        each machine held back) or None."""
        record = self.record
        parts = record.get("parts") or []
        if parts:
            # A machine that left an elastic training and came back, or took it again when it
            # started again without node 0, has a part per attempt: the newest comes last.
            newest = {}
            for part in parts:
                newest[part.get("node_name") or part.get("node", "?")] = part
            newest = dict(sorted(newest.items(), key=lambda item: item[1].get("node_rank", 0)))
            machines = list(newest)
            ranks = {name: p.get("node_rank", 0) for name, p in newest.items()}
            processes = sum(int(p.get("processes", 1)) for p in newest.values())
        else:
            machines = [record.get("node_name") or record.get("node") or "?"]
            ranks, processes = {machines[0]: 0}, 1
        started, ended = record.get("started_ms"), record.get("ended_ms")
        if started and not ended and record.get("state") not in TERMINAL_STATES:
            ended = time.time_ns() // 1_000_000
        wall = (ended - started) / 1000 if started and ended else None
        departed = {p.get("node_name") or p.get("node", "?") for p in parts if p.get("state") in DEPARTED}
        lost = [name for name in machines if name in departed and newest[name].get("state") in DEPARTED]
        rejoined = [name for name in machines if name in departed and name not in lost]
        return {"job": self.handle, "machines": machines, "ranks": ranks, "lost": lost, "rejoined": rejoined,
                "processes": processes, "wall_s": wall, "state": record.get("state"),
                "reason": record.get("reason"), "exit_code": record.get("exit_code"),
                "training": record.get("training")}

    def __repr__(self) -> str:
        if self._record is None:
            return f"Job({self.handle!r})"
        info = self.summary()
        text = f"Job({self.handle!r}, {info['state']} on {', '.join(info['machines'])}"
        if info["wall_s"] is not None:
            text += f", {info['wall_s']:.1f} s"
        if info["reason"]:
            text += f": {info['reason']}"
        return text + ")"
