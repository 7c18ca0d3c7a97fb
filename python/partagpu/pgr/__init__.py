# SPDX-License-Identifier: GPL-3.0-or-later
"""PGR/1, the PartaGPU peer protocol (normative spec: ``docs/protocol.md``).

An implementation independent of the Rust ``partagpu_core`` and checked against the same
known-answer vectors (§12). The pieces, in the order a connection uses them:

* :mod:`~partagpu.pgr.codes`: room codes, normalisation, word lists, room ids (§2);
* :mod:`~partagpu.pgr.password`: the Argon2id SPAKE2 password (§2.6);
* :mod:`~partagpu.pgr.handshake_messages` and :mod:`~partagpu.pgr.handshake`: the fixed-size
  hellos and the SPAKE2 handshake as sans-I/O state machines (§3, §4, §7);
* :mod:`~partagpu.pgr.key_schedule`: TH, Finished, traffic secrets, exporter (§4);
* :mod:`~partagpu.pgr.records`: the AES-256-GCM record layer and KEY_UPDATE (§6);
* :mod:`~partagpu.pgr.node_auth`: Ed25519 node identity, NODE_AUTH, fingerprints (§5);
* :mod:`~partagpu.pgr.session`: all of it over a blocking socket (``connect``,
  ``client_session``; ``serve_one`` and ``accept_session`` on the server side);
  ``python -m partagpu.pgr`` is a command line for live interop tests;
* :mod:`~partagpu.pgr.mdns` (with :mod:`~partagpu.pgr.dns_message`): a one-shot, bounded
  mDNS browse for the rooms announced on the LAN (§10).

No error message, ``repr`` or log line carries a code word, a password or a key.
"""

from partagpu.pgr.codes import (
    CodeError, RoomCode, generate_code, generate_room_id, normalise, parse_code, parse_room_id,
    room_id_hex,
)
from partagpu.pgr.errors import (
    ConnectionClosedError, DeadlineError, HandshakeError, MalformedError, NodeAuthError,
    PgrError, RecordError, WrongCodeError, WrongRoomError,
)
from partagpu.pgr.handshake import ClientHandshake, ServerHandshake, SessionKeys
from partagpu.pgr.node_auth import NodeIdentity, VerifiedNode, fingerprint, node_id
from partagpu.pgr.password import RoomPassword, derive_password
from partagpu.pgr.records import Opener, RecordType, Sealer
from partagpu.pgr.roles import Direction, Role
from partagpu.pgr.session import Session, accept_session, client_session, connect, serve_one

__all__ = [
    "ClientHandshake", "CodeError", "ConnectionClosedError", "DeadlineError", "Direction",
    "HandshakeError", "MalformedError", "NodeAuthError", "NodeIdentity", "Opener", "PgrError",
    "RecordError", "RecordType", "Role", "RoomCode", "RoomPassword", "Sealer", "ServerHandshake",
    "Session", "SessionKeys", "VerifiedNode", "WrongCodeError", "WrongRoomError",
    "accept_session", "client_session", "connect", "derive_password", "fingerprint",
    "generate_code", "generate_room_id", "node_id", "normalise", "parse_code", "parse_room_id",
    "room_id_hex", "serve_one",
]
