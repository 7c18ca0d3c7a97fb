# SPDX-License-Identifier: GPL-3.0-or-later
"""The machines of the room as the local partagpud sees them: :class:`Peer`, :class:`Gpu`,
:class:`Limits` and :class:`Runtime`, read from the D-Bus property ``Fleet1.Members`` (see
``dbus/org.partagpu.PartaGPU.Daemon.xml``).

A member is a D-Bus dictionary ``a{sv}``. Keys may be added by newer services, so unknown
keys are ignored; a missing key takes a neutral default (empty text, zero, false) so that a
service older or newer than this package still lists its machines. A known key with another
D-Bus type is a broken contract, not a version difference, and raises :class:`ServiceError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from partagpu.errors import ServiceError

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MIB = 1024**2
GIB = 1024**3


def format_bytes(count: int) -> str:
    """``4.0 GiB``, ``512 MiB`` or ``900 B``: one decimal is enough to compare machines."""
    if count >= GIB:
        return f"{count / GIB:.1f} GiB"
    if count >= MIB:
        return f"{count // MIB} MiB"
    return f"{count} B"


def plural(count: int, word: str) -> str:
    """``1 GPU``, ``2 GPUs``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def datetime_from_ms(ms: int) -> datetime:
    """A D-Bus ``t`` of milliseconds since the epoch as an aware UTC datetime."""
    try:
        return UNIX_EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise ServiceError(f"partagpud sent a time of {ms} ms, past the year 9999") from None


def ms_from_datetime(moment: datetime) -> int:
    """The inverse of :func:`datetime_from_ms`, exact (timedelta keeps microseconds)."""
    return (moment - UNIX_EPOCH) // timedelta(milliseconds=1)


@dataclass(frozen=True, repr=False)
class Gpu:
    """One GPU of a machine and its load when the machine last reported."""

    index: int
    name: str
    uuid: str
    memory_total_bytes: int
    memory_used_bytes: int
    utilization_percent: int

    def __repr__(self) -> str:
        return (f"Gpu({self.index}, {self.name!r}, {self.utilization_percent}% busy, "
                f"{format_bytes(self.memory_used_bytes)} of {format_bytes(self.memory_total_bytes)} used)")

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "uuid": self.uuid,
                "memory_total_bytes": self.memory_total_bytes,
                "memory_used_bytes": self.memory_used_bytes,
                "utilization_percent": self.utilization_percent}


@dataclass(frozen=True, repr=False)
class Limits:
    """What a machine lends: a share of its CPU time, bytes of memory, a share of each GPU."""

    cpu_percent: int
    ram_bytes: int
    gpu_percent: int

    def describe(self) -> str:
        """``CPU 50% RAM 4.0 GiB GPU 50%``."""
        return f"CPU {self.cpu_percent}% RAM {format_bytes(self.ram_bytes)} GPU {self.gpu_percent}%"

    def __repr__(self) -> str:
        return f"Limits({self.describe()})"

    def to_json(self) -> dict[str, Any]:
        return {"cpu_percent": self.cpu_percent, "ram_bytes": self.ram_bytes,
                "gpu_percent": self.gpu_percent}


@dataclass(frozen=True)
class Runtime:
    """A Python runtime a machine offers to jobs: its name (what a job asks for), its Python
    version, and the torch and CUDA versions of its torch (None without torch, or for a CPU
    build of torch). Jobs that run together need the same name and versions."""

    name: str
    python: str
    torch: str | None = None
    cuda: str | None = None

    def describe(self) -> str:
        """``torch (Python 3.12.3, torch 2.5.1+cu121, CUDA 12.1)``."""
        parts = [f"Python {self.python}"]
        if self.torch is not None:
            parts.append(f"torch {self.torch}")
        if self.cuda is not None:
            parts.append(f"CUDA {self.cuda}")
        return f"{self.name} ({', '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "python": self.python, "torch": self.torch, "cuda": self.cuda}

    @classmethod
    def from_dbus(cls, fields: tuple[str, str, str, str]) -> Runtime:
        """One ``(ssss)``: an empty torch or CUDA version means none."""
        name, python, torch, cuda = fields
        return cls(name=name, python=python, torch=torch or None, cuda=cuda or None)


@dataclass(frozen=True, repr=False)
class Peer:
    """One machine of the room: this one (``local``) or a verified member, online or not.

    ``address`` is None when unknown; ``updated`` is None when the machine never sent its
    state. Live values (``cpu_usage_percent``, memory, load, GPUs, ``jobs_running``) are as
    of ``updated``. ``jobs_running`` counts the jobs running or paused on it for anyone;
    ``runtimes`` lists the Python runtimes it offers to jobs, the default first (0 and none
    from a service older than job execution).
    """

    name: str
    node_id: str
    fingerprint: str
    local: bool
    verified: bool
    online: bool
    address: str | None
    last_seen: datetime
    updated: datetime | None
    version: str
    state: str
    limits: Limits
    cpu_model: str
    cpu_cores: int
    cpu_usage_percent: float
    memory_total_bytes: int
    memory_available_bytes: int
    load_average: tuple[float, float, float]
    gpus: tuple[Gpu, ...]
    gpu_status: str
    jobs_running: int = 0
    runtimes: tuple[Runtime, ...] = ()

    def __repr__(self) -> str:
        presence = "local" if self.local else "online" if self.online else "offline"
        if not self.verified:
            presence += ", unverified"
        return (f"Peer({self.name!r}, {self.state}, {presence}, {plural(self.cpu_cores, 'CPU')} "
                f"{self.cpu_usage_percent:.0f}% busy, {plural(len(self.gpus), 'GPU')}, "
                f"lends {self.limits.describe()})")

    __str__ = __repr__

    def to_json(self) -> dict[str, Any]:
        """The member as ``python -m partagpu peers --json`` (and ``partagpuctl peers
        --json``) print it: times in ms since the epoch, null for an unknown address."""
        return {
            "node_id": self.node_id, "fingerprint": self.fingerprint, "name": self.name,
            "local": self.local, "verified": self.verified, "online": self.online,
            "address": self.address, "last_seen_ms": ms_from_datetime(self.last_seen),
            "updated_ms": None if self.updated is None else ms_from_datetime(self.updated),
            "version": self.version, "state": self.state, "limits": self.limits.to_json(),
            "cpu": {"model": self.cpu_model, "cores": self.cpu_cores,
                    "usage_percent": self.cpu_usage_percent},
            "memory": {"total_bytes": self.memory_total_bytes,
                       "available_bytes": self.memory_available_bytes},
            "load_average": list(self.load_average),
            "gpus": [gpu.to_json() for gpu in self.gpus],
            "gpu_status": self.gpu_status,
            "jobs_running": self.jobs_running,
            "runtimes": [runtime.to_json() for runtime in self.runtimes],
        }

    @classmethod
    def from_dbus(cls, entry: dict[str, tuple[str, Any]]) -> Peer:
        """One ``a{sv}`` of ``Members`` as jeepney decodes it: key → (signature, value)."""
        member = _MemberFields(entry)
        address = member.get("address", "s", "")
        updated_ms = member.get("updated", "t", 0)
        load = member.get("load_average", "(ddd)", (0.0, 0.0, 0.0))
        return cls(
            name=member.get("name", "s", ""),
            node_id=member.get("node_id", "s", ""),
            fingerprint=member.get("fingerprint", "s", ""),
            local=member.get("local", "b", False),
            verified=member.get("verified", "b", False),
            online=member.get("online", "b", False),
            address=address or None,
            last_seen=datetime_from_ms(member.get("last_seen", "t", 0)),
            # 0 is what a service reports for a member whose state never arrived.
            updated=datetime_from_ms(updated_ms) if updated_ms else None,
            version=member.get("version", "s", ""),
            state=member.get("state", "s", "unknown"),
            limits=Limits(cpu_percent=member.get("cpu_limit", "u", 0),
                          ram_bytes=member.get("ram_limit", "t", 0),
                          gpu_percent=member.get("gpu_limit", "u", 0)),
            cpu_model=member.get("cpu_model", "s", ""),
            cpu_cores=member.get("cpu_cores", "u", 0),
            cpu_usage_percent=_finite(member.get("cpu_usage", "d", 0.0)),
            memory_total_bytes=member.get("memory_total", "t", 0),
            memory_available_bytes=member.get("memory_available", "t", 0),
            load_average=(_finite(load[0]), _finite(load[1]), _finite(load[2])),
            gpus=tuple(Gpu(*fields) for fields in member.get("gpus", "a(ussttu)", [])),
            gpu_status=member.get("gpu_status", "s", "unavailable: not reported"),
            jobs_running=member.get("jobs_running", "u", 0),
            runtimes=tuple(Runtime.from_dbus(fields)
                           for fields in member.get("runtimes", "a(ssss)", [])),
        )


class _MemberFields:
    """Typed access to one member dictionary; remembers which node it is for messages."""

    def __init__(self, entry: dict[str, tuple[str, Any]]) -> None:
        self._entry = entry
        node_id = entry.get("node_id")
        self._who = f"member {node_id[1]}" if node_id and node_id[0] == "s" else "a member"

    def get(self, key: str, signature: str, default: Any) -> Any:
        if key not in self._entry:
            return default
        actual, value = self._entry[key]
        if actual != signature:
            raise ServiceError(f"partagpud sent {key!r} of {self._who} as D-Bus type "
                               f"{actual!r}, expected {signature!r}")
        return value


def _finite(value: float) -> float:
    # JSON has no NaN or infinity, and a load that is not a number means "not measured".
    return value if math.isfinite(value) else 0.0
