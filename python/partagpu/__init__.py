# SPDX-License-Identifier: GPL-3.0-or-later
"""PartaGPU, the Python side: pooling lab machines for PyTorch training.

* :func:`discover` lists the machines of the room as the local service (partagpud) sees
  them, as :class:`Peer` objects (with their :class:`Gpu` list, :class:`Limits` and
  :class:`Runtime` list), over
  the system D-Bus. ``python -m partagpu peers`` prints the same as a table or JSON.
* :func:`distribute` runs a PyTorch DDP training across the room's machines, :func:`run`
  one command on one machine; both return a :class:`Job` (output, state, artifacts, cancel),
  and :func:`list_jobs` lists the jobs. ``python -m partagpu run`` and ``jobs`` do the same.
  :mod:`partagpu.workspace` packs the files sent with a job.
* ``distribute(..., nodes="auto")`` probes first and lets :mod:`partagpu.planner` choose the
  machines and the gradient strategy, which :mod:`partagpu.ddp` applies inside the training
  (``docs/performance.md``); the planner and :mod:`partagpu.strategy` need no torch.
* Without a local service, :class:`Room` (:mod:`partagpu.remote`) reaches a member of the
  room over PGR/1 with the room code (``$PARTAGPU_CODE``): ``distribute(..., room=Room())``,
  or automatically when ``$PARTAGPU_CODE`` is set and no partagpud runs here.
* :mod:`partagpu.pgr` implements PGR/1, the encrypted peer protocol specified in
  ``docs/protocol.md``, independent of the Rust one in ``src/core`` and checked against the
  same known-answer vectors.

``import partagpu`` stays cheap: the D-Bus client (and jeepney) is imported the first time
one of the names below is used, and no bus is contacted before :func:`discover` is called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name → module that defines it, imported on first use (PEP 562).
_LAZY_EXPORTS = {
    "discover": "partagpu.fleet",
    "read_fleet": "partagpu.fleet",
    "Fleet": "partagpu.fleet",
    "Peer": "partagpu.peers",
    "Gpu": "partagpu.peers",
    "Limits": "partagpu.peers",
    "Runtime": "partagpu.peers",
    "distribute": "partagpu.distribute",
    "run": "partagpu.distribute",
    "Job": "partagpu.jobs",
    "list_jobs": "partagpu.jobs",
    "PartaGPUError": "partagpu.errors",
    "ServiceUnavailableError": "partagpu.errors",
    "ServiceError": "partagpu.errors",
    "RequestRefusedError": "partagpu.errors",
    "InvalidArgumentError": "partagpu.errors",
    "NotAuthorizedError": "partagpu.errors",
    "JobNotFoundError": "partagpu.errors",
    "JobRefusedError": "partagpu.errors",
    "PeerFailedError": "partagpu.errors",
    "NoPeersError": "partagpu.errors",
    "RuntimeMismatchError": "partagpu.errors",
    "NotInRoomError": "partagpu.errors",
    "WrongRoomError": "partagpu.errors",
    "WorkspaceError": "partagpu.errors",
    "WorkspaceTooLargeError": "partagpu.errors",
    "ArtifactError": "partagpu.errors",
    "JobFailedError": "partagpu.errors",
    "RoomCodeError": "partagpu.errors",
    "WrongCodeError": "partagpu.errors",
    "RoomNotFoundError": "partagpu.errors",
    "Room": "partagpu.remote",
}

__all__ = ["__version__", *_LAZY_EXPORTS]

if TYPE_CHECKING:
    from partagpu.distribute import distribute, run
    from partagpu.errors import (ArtifactError, InvalidArgumentError, JobFailedError,
                                 JobNotFoundError, JobRefusedError, NoPeersError,
                                 NotAuthorizedError, NotInRoomError, PartaGPUError,
                                 PeerFailedError, RequestRefusedError, RuntimeMismatchError,
                                 RoomCodeError, RoomNotFoundError, ServiceError,
                                 ServiceUnavailableError, WorkspaceError, WorkspaceTooLargeError,
                                 WrongCodeError, WrongRoomError)
    from partagpu.jobs import Job, list_jobs
    from partagpu.remote import Room
    from partagpu.fleet import Fleet, discover, read_fleet
    from partagpu.peers import Gpu, Limits, Peer, Runtime


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'partagpu' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
