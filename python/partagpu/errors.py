# SPDX-License-Identifier: GPL-3.0-or-later
"""The exceptions of the ``partagpu`` package outside PGR/1 (which has its own, in
:mod:`partagpu.pgr.errors`; :mod:`partagpu.remote` turns those into the ones below).

Every message is one sentence meant for a person: the command line prints it as it is.
"""

from __future__ import annotations


class PartaGPUError(Exception):
    """Base of the errors raised by :func:`partagpu.discover` and the command line."""


class ServiceUnavailableError(PartaGPUError):
    """The local service cannot be asked: no system bus, or partagpud is not running on it,
    or it did not answer in time. Trying again later (or starting partagpud) may help."""


class ServiceError(PartaGPUError):
    """partagpud answered, but not what this package understands: it refused the request,
    lacks the interface (an older version), or sent a value of another D-Bus type."""


# --- Jobs -------------------------------------------------------------------------------

DAEMON_ERROR_PREFIX = "org.partagpu.PartaGPU.Daemon.Error."


class RequestRefusedError(ServiceError):
    """partagpud refused a call with one of its own errors
    (``org.partagpu.PartaGPU.Daemon.Error.<Name>``): ``dbus_name`` is that name and the
    message is the service's sentence, unchanged."""

    def __init__(self, message: str, dbus_name: str = "") -> None:
        super().__init__(message)
        self.dbus_name = dbus_name


class InvalidArgumentError(RequestRefusedError, ValueError):
    """The service's validation refused the request (a bad spec, workspace or name)."""


class NotAuthorizedError(RequestRefusedError, PermissionError):
    """polkit refused the caller, or the job belongs to another user."""


class JobNotFoundError(RequestRefusedError, LookupError):
    """No such job (or no such artifact of it) on this machine."""


class JobRefusedError(RequestRefusedError):
    """The machine(s) would not take the job now: sharing off, paused, busy, too few GPUs."""


class PeerFailedError(RequestRefusedError):
    """A member of the room could not be reached or failed the exchange."""


class StorageFailedError(RequestRefusedError):
    """The service could not write the job to its journal."""


class NoPeersError(JobRefusedError):
    """No machine of the room is eligible for the job (none shares, all are paused, too few
    asked-for machines can take part, …); the message says why for each machine."""


class RuntimeMismatchError(NoPeersError):
    """The job's runtime (or its torch version) is missing or different on the machines."""


class NotInRoomError(RequestRefusedError):
    """The operation needs a room and this machine is in none (``partagpuctl room join``)."""


WrongRoomError = NotInRoomError


class WorkspaceError(PartaGPUError, ValueError):
    """The workspace cannot be sent: a symbolic link, a special file, a bad name, or the
    script is not inside it."""


class WorkspaceTooLargeError(WorkspaceError):
    """The workspace exceeds 16 MiB or 4096 entries; the message names the largest files."""


class ArtifactError(PartaGPUError):
    """An artifact could not be brought back safely: a name outside the output directory,
    or a size or SHA-256 that is not what the job announced."""


class JobFailedError(PartaGPUError):
    """The job ended in a state other than ``succeeded``; ``record`` is its last record,
    ``state`` and ``reason`` come from it."""

    def __init__(self, message: str, record: dict[str, object]) -> None:
        super().__init__(message)
        self.record = record
        self.state = str(record.get("state", ""))
        reason = record.get("reason")
        self.reason = reason if isinstance(reason, str) else None


_NO_PEERS_HINTS = ("no machine", "can take part", "eligible")


def from_bus_error(name: str, message: str) -> RequestRefusedError:
    """The exception for a partagpud error reply: mapped by its D-Bus name; ``JobRefused``
    and ``PeerFailed`` become :class:`RuntimeMismatchError` when the message is about the
    runtime, :class:`NoPeersError` when it says no machine can take the job."""
    short = name.removeprefix(DAEMON_ERROR_PREFIX) if name.startswith(DAEMON_ERROR_PREFIX) else ""
    lowered = message.lower()
    kind: type[RequestRefusedError]
    if short in ("JobRefused", "PeerFailed") and "runtime" in lowered:
        kind = RuntimeMismatchError
    elif short in ("JobRefused", "PeerFailed") and any(h in lowered for h in _NO_PEERS_HINTS):
        kind = NoPeersError
    else:
        kind = {"InvalidArgument": InvalidArgumentError, "NotAuthorized": NotAuthorizedError,
                "JobNotFound": JobNotFoundError, "JobRefused": JobRefusedError,
                "PeerFailed": PeerFailedError, "StorageFailed": StorageFailedError,
                "NotInRoom": NotInRoomError}.get(short, RequestRefusedError)
    text = message if kind is not RequestRefusedError or not name else f"{message} ({name})"
    return kind(text or f"partagpud refused the request ({name})", dbus_name=name)


# --- A room reached without the local service (partagpu.remote) -------------------------


class RoomCodeError(PartaGPUError, ValueError):
    """No room code was given (``code=`` or ``PARTAGPU_CODE``), or what was given is not a
    room code (PGR/1 §2.4). The message names a word's position, never a word."""


class WrongCodeError(RoomCodeError):
    """The member refused the code: it is not the room's current code (four valid words,
    but not these, or the code was changed since). The member counts each such try as a
    failed guess and stops answering this address for a while after a few (§9)."""


class RoomNotFoundError(PartaGPUError, LookupError):
    """Which room to use is unclear: none is announced on the network, several are (give
    ``room=``), or none has the label or id given, or the peer given announces none."""


# Sentences of the spec's validation and of the upload checks (docs/jobs.md, PGR/1 §7.6).
_INVALID_HINTS = ("the job spec", "submitter", "arrived damaged", "already submitted",
                  "are accepted", "can be asked for", "is not allowed", "is set by the service")


def from_member_refusal(message: str) -> RequestRefusedError:
    """The exception for a member's ``{"ok": false, "error": …}`` on a job connection
    (PGR/1 §7.6). The wire carries only the sentence, so the kind is read from it with the
    hints of :func:`from_bus_error`; ``dbus_name`` stays empty."""
    lowered = message.lower()
    kind: type[RequestRefusedError] = JobRefusedError
    if any(hint in lowered for hint in _INVALID_HINTS):
        kind = InvalidArgumentError
    elif "runtime" in lowered:
        kind = RuntimeMismatchError
    elif any(hint in lowered for hint in _NO_PEERS_HINTS):
        kind = NoPeersError
    elif lowered.startswith(("no job", "the job has no artifact")):
        kind = JobNotFoundError
    elif "(node " in lowered or "could not be reached" in lowered:
        kind = PeerFailedError
    elif "in no room" in lowered:
        kind = NotInRoomError
    return kind(message or "the member refused the request")
