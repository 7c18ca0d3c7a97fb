# SPDX-License-Identifier: GPL-3.0-or-later
"""The handshake as two sans-I/O state machines (PGR/1 §3, §4, §7.1, §7.2).

::

    client                                        server
    ClientHandshake(...).client_hello   ── 57 B ──▶  ServerHandshake.on_client_hello
    ClientHandshake.on_server_flight   ◀── 41+32 B ──
                                        ── 32 B ──▶  ServerHandshake.on_client_finished
    SessionKeys (+ NODE_AUTH first record each way)   SessionKeys

The caller owns the socket and the clock: it reads the exact sizes (57, 73, 32 bytes)
under deadlines (§8.1, §9). Each state is used once, like the Rust states that are consumed.
Randomness comes from ``os.urandom`` unless a test injects ``entropy`` (§12.3).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from spake2 import SPAKE2_A, SPAKE2_B
from spake2.ed25519_basic import NotOnCurve
from spake2.spake2 import SPAKEError

from partagpu.pgr.errors import MalformedError, NodeAuthError, WrongCodeError, WrongRoomError
from partagpu.pgr.handshake_messages import (
    FINISHED_LEN, SERVER_FLIGHT_LEN, SERVER_HELLO_LEN, ClientHello, ServerHello,
    parse_client_hello, parse_server_hello, spake2_identities,
)
from partagpu.pgr.key_schedule import KeySchedule, transcript_hash
from partagpu.pgr.node_auth import NodeIdentity, VerifiedNode, verify_node_auth
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.records import Opener, RecordType, Sealer
from partagpu.pgr.roles import Role

Entropy = Callable[[int], bytes]
RoomLookup = Callable[[bytes], "tuple[int, RoomPassword] | None"]


def _spake2_key(spake: SPAKE2_A | SPAKE2_B, peer_msg: bytes) -> bytes:
    """SPAKE2 finish; a point that does not decode (or that the library refuses: identity,
    wrong subgroup, our own message reflected) is a malformed message (§3.3, §7.4)."""
    try:
        return spake.finish(peer_msg)
    except (ValueError, NotOnCurve, SPAKEError):
        raise MalformedError("bad-point", "the peer's key exchange message is corrupt") from None


class SessionKeys:
    """An established connection without I/O: both directions' record state, TH, exporter.

    The first record each way must be NODE_AUTH (§7.3): :meth:`seal_node_auth` and
    :meth:`verify_node_auth`.
    """

    def __init__(self, role: Role, schedule: KeySchedule, room_id: bytes, epoch: int) -> None:
        self.role = role
        self.room_id = room_id
        self.epoch = epoch
        self.transcript_hash = schedule.transcript_hash
        self._exporter = schedule.exporter()
        self.sealer = Sealer(role.sending, schedule.traffic_secret(role.sending))
        self.opener = Opener(role.receiving, schedule.traffic_secret(role.receiving))

    def expose_exporter(self) -> bytes:
        """The exporter secret (§4.6), for keys derived later (per-job keys)."""
        return self._exporter

    def seal_node_auth(self, identity: NodeIdentity) -> bytes:
        """This end's NODE_AUTH record: its key and signature over TH with its role (§5)."""
        return self.sealer.seal(RecordType.NODE_AUTH, identity.sign(self.role, self.transcript_hash))

    def verify_node_auth(self, record_type: RecordType, body: bytes) -> VerifiedNode:
        """Checks the peer's first record (already opened) against TH and the peer's role."""
        if record_type is not RecordType.NODE_AUTH:
            raise NodeAuthError("not-node-auth")
        return verify_node_auth(body, self.role.peer, self.transcript_hash)

    def __repr__(self) -> str:
        return (f"SessionKeys(role={self.role.name}, room_id={self.room_id.hex()}, "
                f"epoch={self.epoch}, {self.sealer!r}, {self.opener!r})")


class ClientHandshake:
    """The client (SPAKE2 side A) after making its ClientHello (§7.1)."""

    def __init__(self, password: RoomPassword, room_id: bytes, epoch: int, *,
                 entropy: Entropy = os.urandom) -> None:
        id_a, id_b = spake2_identities(room_id, epoch)
        self._spake = SPAKE2_A(password.expose_secret(), idA=id_a, idB=id_b, entropy_f=entropy)
        self.room_id = bytes(room_id)
        self.epoch = epoch
        self.client_hello = ClientHello(self.room_id, self._spake.start()).encode()
        self._used = False

    def on_server_flight(self, flight: bytes) -> tuple[SessionKeys, bytes]:
        """Takes the 73-byte ServerHello ‖ SF, checks SF, returns the keys and CF to send.

        Raises :class:`MalformedError` (size, §3.1 checks, bad point) or
        :class:`WrongCodeError` when SF does not verify: count a failed guess (§7.4).
        """
        if self._used:
            raise RuntimeError("a handshake state is used once")
        self._used = True
        if len(flight) != SERVER_FLIGHT_LEN:
            raise MalformedError("wrong-length")
        server_hello = parse_server_hello(flight[:SERVER_HELLO_LEN])
        server_finished = bytes(flight[SERVER_HELLO_LEN:])
        k = _spake2_key(self._spake, server_hello.spake2_msg)
        schedule = KeySchedule(k, transcript_hash(self.client_hello, server_hello.encode()))
        # §4.3: SF is checked before anything else is sent.
        if not schedule.verify_server_finished(server_finished):
            raise WrongCodeError("mismatch")
        keys = SessionKeys(Role.CLIENT, schedule, self.room_id, self.epoch)
        return keys, schedule.client_finished(server_finished)


class ServerHandshake:
    """The server (SPAKE2 side B) after sending its flight (§7.2)."""

    def __init__(self, schedule: KeySchedule, server_finished: bytes, room_id: bytes,
                 epoch: int) -> None:
        self._schedule = schedule
        self._server_finished = server_finished
        self.room_id = room_id
        self.epoch = epoch
        self._used = False

    @classmethod
    def on_client_hello(cls, client_hello: bytes, lookup: RoomLookup, *,
                        entropy: Entropy = os.urandom) -> tuple[ServerHandshake, bytes]:
        """Parses the 57-byte ClientHello, looks up its room, runs SPAKE2 side B and returns
        the state and the 73-byte flight to send.

        ``lookup(room_id)`` gives the room's *current* ``(epoch, password)`` or ``None``.
        Malformed hellos and unknown rooms fail before any SPAKE2 work (§3.1, §8.1):
        :class:`MalformedError`, :class:`WrongRoomError`.
        """
        parsed = parse_client_hello(client_hello)
        room = lookup(parsed.room_id)
        if room is None:
            raise WrongRoomError()
        epoch, password = room
        id_a, id_b = spake2_identities(parsed.room_id, epoch)
        spake = SPAKE2_B(password.expose_secret(), idA=id_a, idB=id_b, entropy_f=entropy)
        server_hello = ServerHello(spake.start()).encode()
        k = _spake2_key(spake, parsed.spake2_msg)
        schedule = KeySchedule(k, transcript_hash(parsed.encode(), server_hello))
        server_finished = schedule.server_finished()
        state = cls(schedule, server_finished, parsed.room_id, epoch)
        return state, server_hello + server_finished

    def on_client_finished(self, client_finished: bytes) -> SessionKeys:
        """Checks the 32-byte CF and returns the keys; nothing is sent before (§4.3).

        Raises :class:`WrongCodeError` when CF does not verify (a failed guess from that
        source, §7.4), :class:`MalformedError` for another size.
        """
        if self._used:
            raise RuntimeError("a handshake state is used once")
        self._used = True
        if len(client_finished) != FINISHED_LEN:
            raise MalformedError("wrong-length")
        if not self._schedule.verify_client_finished(self._server_finished, bytes(client_finished)):
            raise WrongCodeError("mismatch")
        return SessionKeys(Role.SERVER, self._schedule, self.room_id, self.epoch)
