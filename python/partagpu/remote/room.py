# SPDX-License-Identifier: GPL-3.0-or-later
"""A room reached from a machine without the service: :class:`Room` proves the room code
and this notebook's node key to a member over PGR/1 and opens job connections (§7.6).

The code comes from ``code=`` or ``$PARTAGPU_CODE`` and is validated at once (§2.4: a typo
costs no guess). It is never printed: not in ``repr``, messages or logs. Python cannot wipe
strings from memory; only the parsed code and its Argon2id password are kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from partagpu.errors import (PeerFailedError, RoomCodeError, ServiceError, WrongCodeError,
                             from_member_refusal)
from partagpu.jobs import Job
from partagpu.pgr import mdns
from partagpu.pgr.codes import CodeError, RoomCode
from partagpu.pgr.control_hello import JOB_HELLO
from partagpu.pgr.errors import PgrError
from partagpu.pgr.errors import WrongCodeError as PgrWrongCodeError
from partagpu.pgr.node_auth import NodeIdentity
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.session import Session, client_session
from partagpu.remote.choose import DEFAULT_PORT, Member, RoomTarget, choose_room, is_room_id
from partagpu.remote.failures import member_errors, why_not
from partagpu.remote.node_key import load_identity
from partagpu.remote.transport import MemberTransport
from partagpu.remote.wire import CHUNK, receive_reply, send_chunks, send_request, send_stream
from partagpu.resume import ResumeFrom

CODE_ENV, PEER_ENV, ROOM_ENV = "PARTAGPU_CODE", "PARTAGPU_PEER", "PARTAGPU_ROOM"
HANDSHAKE_TIMEOUT_S = 10.0
DISTRIBUTE_TIMEOUT_S = 300.0  # the member submits every part before it answers
MAX_LABEL_CHARS = 63
Browse = Callable[[float], list[mdns.Announcement]]


def parse_peer(text: str) -> tuple[str, int | None]:
    """``host`` or ``host:port`` (IPv4 address or name) → (host, port or None)."""
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        host, port = text.strip(), ""
    if not host or (colon and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(f"{text!r} is not a member's address: give HOST or HOST:PORT")
    return host, int(port) if port else None


def _ipv4_of(host: str) -> list[str]:
    with contextlib.suppress(ValueError):
        return [str(ipaddress.IPv4Address(host))]
    try:
        found = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return []
    return list(dict.fromkeys(str(entry[4][0]) for entry in found))


class Room:
    """The room of ``code`` (default ``$PARTAGPU_CODE``), reached through ``peer``
    ("host[:port]", default port 7655) or else a member found on mDNS; ``room`` (label or
    id) picks one when several are announced, ``epoch`` is needed only when the room cannot
    be heard on mDNS. The node key is ``key_file`` (default
    ``~/.config/partagpu/node-key``, made on first use)."""

    def __init__(self, code: str | RoomCode | None = None, *, peer: str | None = None,
                 room: str | None = None, epoch: int | None = None,
                 key_file: str | os.PathLike[str] | None = None, browse: Browse | None = None,
                 timeout: float = HANDSHAKE_TIMEOUT_S) -> None:
        typed = code if code is not None else os.environ.get(CODE_ENV, "")
        self._code_origin = f" ({CODE_ENV})" if code is None else ""
        if isinstance(typed, str) and not typed.strip():
            raise RoomCodeError(f"no room code: set {CODE_ENV} to the room's four words "
                                "(or pass code=)")
        try:
            self._code = typed if isinstance(typed, RoomCode) else RoomCode.parse(typed)
        except CodeError as error:  # names a position, never a word
            raise RoomCodeError(f"the room code is not valid: {error}") from None
        if epoch is not None and not 0 <= epoch <= 0xFFFFFFFF:
            raise ValueError("an epoch is a number from 0 to 4294967295")
        self._peer = parse_peer(peer) if peer else None
        self._wanted, self._epoch, self._key_file = room or None, epoch, key_file
        self._browse: Browse = browse or mdns.browse
        self._timeout = timeout
        self._lock = threading.Lock()
        self._target: RoomTarget | None = None
        self._password: RoomPassword | None = None
        self._identity: NodeIdentity | None = None
        self.member: Member | None = None  # the last member reached

    @classmethod
    def from_environment(cls) -> Room | None:
        """The room of ``$PARTAGPU_CODE`` (with ``$PARTAGPU_PEER`` and ``$PARTAGPU_ROOM``
        when set), or None when no code is set."""
        if not os.environ.get(CODE_ENV, "").strip():
            return None
        return cls(peer=os.environ.get(PEER_ENV) or None, room=os.environ.get(ROOM_ENV) or None)

    @property
    def identity(self) -> NodeIdentity:
        with self._lock:
            if self._identity is None:
                self._identity = load_identity(self._key_file)
            return self._identity

    @property
    def node_id(self) -> str:
        """This notebook's node id (32 hex): jobs it submits are named after it."""
        return self.identity.node_id.hex()

    def resolve(self) -> RoomTarget:
        """The room, its epoch and the members to try (mDNS is browsed once, ~1.5 s)."""
        with self._lock:
            if self._target is None:
                self._target = self._find()
            return self._target

    def _find(self) -> RoomTarget:
        if self._peer and self._wanted and is_room_id(self._wanted) and self._epoch is not None:
            host, port = self._peer
            member = Member(host, port or DEFAULT_PORT)
            return RoomTarget(self._wanted.lower(), self._epoch, "", (member,))
        heard = self._browse(mdns.BROWSE_SECONDS)
        near = _ipv4_of(self._peer[0]) if self._peer else []
        return choose_room(heard, room=self._wanted, peer=self._peer, peer_addresses=near,
                           epoch=self._epoch)

    def _password_for(self, target: RoomTarget) -> RoomPassword:
        with self._lock:
            if self._password is None:  # Argon2id, ~19 MiB: once per Room (§2.6)
                self._password = RoomPassword.derive(self._code, bytes.fromhex(target.room_id))
            return self._password

    def dial(self, member: Member | None = None) -> tuple[Session, Member]:
        """A job connection to ``member`` (which must still be the same machine), or to the
        first member of the room that answers."""
        target = self.resolve()
        password, identity = self._password_for(target), self.identity
        failures = []
        for candidate in (member,) if member is not None else target.members:
            try:
                sock = socket.create_connection((candidate.host, candidate.port),
                                                timeout=self._timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                session = client_session(sock, password, bytes.fromhex(target.room_id),
                                         target.epoch, identity, self._timeout, hello=JOB_HELLO)
            except PgrWrongCodeError:
                raise WrongCodeError(
                    f"{target} does not accept this room code{self._code_origin}: check its "
                    "four words, or ask a member for the new code if it was changed") from None
            except (PgrError, OSError) as error:
                failures.append(f"{candidate.host}:{candidate.port} ({why_not(error)})")
                continue
            if candidate.node_id is not None and session.peer_node_id != candidate.node_id:
                session.close("another machine was expected")
                failures.append(f"{candidate.host}:{candidate.port} (another machine answers "
                                "there now)")
                continue
            self._learn_label(session.peer_hello)
            self.member = Member(candidate.host, candidate.port, session.peer_node_id)
            return session, self.member
        raise PeerFailedError(f"no member of {target} could be reached: {'; '.join(failures)}")

    def _learn_label(self, hello: dict[str, Any]) -> None:
        """A room joined by id learns its label from the member's HELLO (§7.3), for messages."""
        room = hello.get("room")
        label = room.get("label") if isinstance(room, dict) else None
        with self._lock:
            if (self._target is not None and not self._target.label and isinstance(label, str)
                    and label.isprintable()):
                self._target = dataclasses.replace(self._target, label=label[:MAX_LABEL_CHARS])

    def distribute(self, spec: dict[str, Any], workspace: bytes, nodes: str,
                   resume: ResumeFrom | None = None) -> Job:
        """Sends a training (a JobSpec template and its packed workspace) to a member, which
        coordinates it (§7.6, ``distribute``), then the checkpoint ``resume`` that the spec's
        ``resume_checkpoint`` describes; returns the :class:`Job` of its group record, already
        being followed."""
        spec = dict(spec, submitter=self.node_id)  # the member checks it is ours
        session, member = self.dial()
        try:
            with member_errors(member):
                send_request(session, {"op": "distribute", "spec": spec, "nodes": nodes})
                send_stream(session, workspace)
                if resume is not None:
                    send_chunks(session, resume.chunks(CHUNK))
                reply = receive_reply(session, DISTRIBUTE_TIMEOUT_S)
            if not reply.ok or reply.record is None:
                raise from_member_refusal(reply.error)
            handle = f"{self.node_id[:12]}-{spec['id']}-{spec['attempt']}"
            if reply.record.get("job") != handle:
                raise ServiceError(f"{member} answered with another job than the one sent")
        except BaseException:
            session.close()
            raise
        transport = MemberTransport(self, member, handle, reply.record, session)
        return Job(handle, reply.record, transport=transport)

    def describe(self) -> str:
        """``room 'Salle B12' via the member at 10.0.0.2:7655`` (after a connection)."""
        where = f" via {self.member}" if self.member else ""
        return f"{self._target or 'the room'}{where}"

    def __repr__(self) -> str:
        peer = f", peer={self._peer[0]!r}" if self._peer else ""
        room = f", room={self._wanted!r}" if self._wanted else ""
        return f"Room(code=<hidden>{peer}{room})"
