# SPDX-License-Identifier: GPL-3.0-or-later
"""The exceptions of PGR/1, grouped by the reaction §7.4 prescribes.

Every message is safe to log: none carries a code word, a password or a key. Each class has
a stable ``kind`` string (the §7.4 kind, or the error names of the vectors, §12.5) so that
callers and tests compare kinds, not messages.
"""

from __future__ import annotations


class PgrError(Exception):
    """Base of every PGR/1 error."""

    kind = "error"


class HandshakeError(PgrError):
    """The handshake failed (§3, §4); before authentication nothing is sent back (§7.4)."""


class MalformedError(HandshakeError):
    """Not PGR/1 suite 1, or broken bytes: close silently, count nothing (§7.4).

    ``reason`` names the first check of §3.1 that failed: ``wrong-length``, ``bad-magic``,
    ``bad-version``, ``bad-suite``, ``bad-flags``, ``bad-side`` or ``bad-point``.
    """

    kind = "malformed"

    def __init__(self, reason: str, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or f"malformed handshake message ({reason})")


class WrongRoomError(HandshakeError):
    """The server is not in the room the ClientHello names: close silently (§7.4)."""

    kind = "wrong-room"

    def __init__(self) -> None:
        super().__init__("this machine is not in the room the peer asked for")


class WrongCodeError(HandshakeError):
    """The Finished MAC did not verify: the peer used another code or epoch (§4.3, §7.4).

    This is a failed guess, counted against the source address (§9). ``reason`` is
    ``mismatch`` for a wrong SF or CF, ``no-finished`` when a server sent SF and the client
    went away or missed the deadline without a CF (it could still test its guess against SF).
    """

    kind = "wrong-code"

    def __init__(self, reason: str = "mismatch") -> None:
        self.reason = reason
        if reason == "mismatch":
            text = "the peer does not know this room's current code"
        else:
            text = "the peer left after the server's key confirmation without confirming"
        super().__init__(text)


class RecordError(PgrError):
    """A record was refused (§6.5): close without sending anything.

    ``kind`` is one of the vectors' names (§12.5) — ``too-short``, ``length-mismatch``,
    ``decrypt``, ``unknown-type``, ``bad-key-update`` — or, as in the Rust implementation,
    ``body-too-long`` and ``key-update-required`` (the 2^32 rule of §6.6), or one of the
    session layer's ``out-of-state`` (§7.3) and ``bad-body`` (§6.4: a body its user refuses).
    """

    _MESSAGES = {
        "too-short": "the peer sent a record shorter than the smallest possible one",
        "length-mismatch": "the record's length field does not match its size",
        "body-too-long": "a record body is too long: at most 65518 bytes fit in one record",
        "decrypt": "a record failed authentication: the connection was tampered with",
        "unknown-type": "the peer sent a record of unknown type",
        "bad-key-update": "a key update record must have an empty body",
        "key-update-required": "the key is used up: the next record must be a key update",
        "out-of-state": "the peer sent a record that is not allowed at this point",
        "bad-body": "the peer sent a record whose body is not valid",
    }

    def __init__(self, kind: str, detail: str | None = None) -> None:
        if kind not in self._MESSAGES:
            raise ValueError(f"unknown record error kind {kind!r}")
        self.kind = kind
        message = self._MESSAGES[kind]
        super().__init__(f"{message} ({detail})" if detail else message)


class NodeAuthError(PgrError):
    """The peer's NODE_AUTH was refused (§5.3): close and journal (§7.4, kind ``identity``).

    ``reason`` is ``not-node-auth``, ``wrong-length``, ``bad-public-key`` or
    ``bad-signature``.
    """

    kind = "identity"

    _MESSAGES = {
        "not-node-auth": "the peer did not identify itself first",
        "wrong-length": "the peer's identity record has the wrong size",
        "bad-public-key": "the peer's machine key is not a valid key",
        "bad-signature": "the peer's identity signature is not valid for this connection",
    }

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(self._MESSAGES[reason])


class ConnectionClosedError(PgrError):
    """The peer closed (or reset) the connection; ``stage`` says what was being read, and
    ``reason`` is the peer's CLOSE reason when it refused with one (§7.3)."""

    kind = "closed"

    def __init__(self, stage: str, reason: str | None = None) -> None:
        self.stage = stage
        self.reason = reason
        text = f"the connection was closed by the peer (while reading the {stage})"
        super().__init__(f"{text}: {reason}" if reason is not None else text)


class DeadlineError(PgrError):
    """A deadline of §9 (or the caller's timeout) passed; ``stage`` says what was awaited."""

    kind = "deadline"

    def __init__(self, stage: str) -> None:
        self.stage = stage
        super().__init__(f"the peer was too slow (no {stage} in time)")
