# SPDX-License-Identifier: GPL-3.0-or-later
"""PGR/1 over a blocking socket: the client's :func:`connect`, the server's
:func:`serve_one` (:func:`accept_session` for a purpose other than control), and the
established :class:`Session` (PGR/1 §7, §8.1, §9).

Before authentication every read has an exact size (57, 73, 32 bytes) and a deadline, and
every failure closes the socket without sending anything (§7.4, §8.1). After the handshake
each end proves its node key (NODE_AUTH, §5), then the client sends its HELLO and the server
answers with its own (§7.3, :mod:`partagpu.pgr.control_hello`).
"""

from __future__ import annotations

import dataclasses
import os
import select
import socket
import time
from collections.abc import Callable

from partagpu.pgr.codes import RoomCode
from partagpu.pgr.control_hello import (
    CONTROL_HELLO, UNKNOWN_REQUEST_RESPONSE, check_client_hello_body, check_server_hello_body,
    encode_hello,
)
from partagpu.pgr.errors import ConnectionClosedError, DeadlineError, RecordError, WrongCodeError
from partagpu.pgr.handshake import ClientHandshake, Entropy, ServerHandshake, SessionKeys
from partagpu.pgr.handshake_messages import CLIENT_HELLO_LEN, FINISHED_LEN, SERVER_FLIGHT_LEN
from partagpu.pgr.node_auth import NodeIdentity, VerifiedNode
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.records import MAX_CLOSE_REASON_LEN, RecordType
from partagpu.pgr.wire import Deadline, close_quietly, recv_exact, recv_record, send_all

CLIENT_HELLO_DEADLINE = 2.0  # §9: the ClientHello within 2 s of the accept
HANDSHAKE_DEADLINE = 5.0  # §9: the whole handshake (through the client's NODE_AUTH) in 5 s
PING_AFTER_SILENCE = 15.0  # §6.7, §7.3: a side pings after 15 s of silence…
IDLE_TIMEOUT = 45.0  # …and closes after 45 s without a record
WRITE_TIMEOUT = 30.0  # how long one write may block on a peer that stopped reading


def password_for(code: str | RoomCode | RoomPassword, room_id: bytes) -> RoomPassword:
    """The SPAKE2 password from a typed code (validated first, §2.4), a :class:`RoomCode`,
    or a stored :class:`RoomPassword` (§11)."""
    if isinstance(code, RoomPassword):
        return code
    if isinstance(code, str):
        code = RoomCode.parse(code)
    if isinstance(code, RoomCode):
        return RoomPassword.derive(code, room_id)
    raise TypeError("a code is a str, a RoomCode or a RoomPassword")


class Session:
    """An authenticated connection: send and receive records, PING, KEY_UPDATE, CLOSE.

    Any receive error (a refused record, EOF, a missed deadline) closes the socket without
    sending anything (§6.5); after :meth:`close` nothing more is sent (§7.3).
    """

    def __init__(self, sock: socket.socket, keys: SessionKeys, peer: VerifiedNode,
                 peer_hello: dict, timeout: float) -> None:
        self.sock = sock
        self.keys = keys
        self.peer = peer
        self.peer_hello = peer_hello
        self.timeout = timeout
        self._sending_closed = False
        self._receiving_closed = False

    @property
    def peer_node_id(self) -> str:
        return self.peer.node_id_hex

    @property
    def peer_fingerprint(self) -> str:
        return self.peer.fingerprint

    @property
    def transcript_hash(self) -> bytes:
        return self.keys.transcript_hash

    def _abort(self) -> None:
        self._sending_closed = self._receiving_closed = True
        close_quietly(self.sock)

    def wait_for_record(self, timeout: float) -> bool:
        """Whether the peer sent something (a record, or EOF) within ``timeout`` seconds;
        unlike a :meth:`recv` that times out, waiting leaves the session usable."""
        if self._receiving_closed:
            return True
        readable, _, _ = select.select([self.sock], [], [], timeout)
        return bool(readable)

    def send(self, record_type: RecordType, body: bytes = b"") -> None:
        """Seals and sends one record of this end's direction."""
        if self._sending_closed:
            raise RecordError("out-of-state", "this end already closed the session")
        wire = self.keys.sealer.seal(record_type, body)
        try:
            send_all(self.sock, wire, Deadline(WRITE_TIMEOUT), "record")
        except (ConnectionClosedError, DeadlineError):
            self._abort()
            raise

    def recv(self, timeout: float | None = None) -> tuple[RecordType, bytes]:
        """The peer's next record, KEY_UPDATEs included (the key has already switched)."""
        if self._receiving_closed:
            raise ConnectionClosedError("record")
        try:
            wire = recv_record(self.sock, Deadline(timeout or self.timeout), "record")
            record_type, body = self.keys.opener.open(wire)
            if record_type in (RecordType.NODE_AUTH, RecordType.HELLO):
                raise RecordError("out-of-state", f"a second {record_type.name}")  # §7.3
            if record_type is RecordType.CLOSE:
                body.decode("utf-8")
                if len(body) > MAX_CLOSE_REASON_LEN:
                    raise RecordError("bad-body", "CLOSE reason over 256 bytes")
                self._receiving_closed = True
        except UnicodeDecodeError:
            self._abort()
            raise RecordError("bad-body", "CLOSE reason is not UTF-8") from None
        except Exception:
            self._abort()
            raise
        return record_type, body

    def ping(self, timeout: float | None = None) -> float:
        """Sends PING and waits for PONG (§6.7); returns the round trip in seconds.

        A PING from the peer meanwhile is answered, and so is a REQUEST (a member's state,
        §7.5: this implementation keeps no fleet, so it answers ``unknown-request``); any
        other record is out of state here.
        """
        started = time.monotonic()
        self.send(RecordType.PING)
        while True:
            record_type, _ = self.recv(timeout)
            if record_type is RecordType.PONG:
                return time.monotonic() - started
            if record_type is RecordType.PING:
                self.send(RecordType.PONG)
            elif record_type is RecordType.REQUEST:
                self.send(RecordType.RESPONSE, encode_hello(UNKNOWN_REQUEST_RESPONSE))
            elif record_type is RecordType.CLOSE:
                raise ConnectionClosedError("PONG")
            elif record_type is not RecordType.KEY_UPDATE:
                self._abort()
                raise RecordError("out-of-state", f"{record_type.name} while waiting for PONG")

    def key_update(self) -> None:
        """Sends KEY_UPDATE; this end's next records use the next key (§6.6)."""
        self.send(RecordType.KEY_UPDATE)

    def close(self, reason: str = "") -> None:
        """Sends CLOSE with ``reason`` (cut to 256 UTF-8 bytes), best effort, and closes."""
        if not self._sending_closed:
            reason_bytes = reason.encode("utf-8")[:MAX_CLOSE_REASON_LEN].decode("utf-8", "ignore")
            try:
                self.send(RecordType.CLOSE, reason_bytes.encode("utf-8"))
                self.sock.shutdown(socket.SHUT_WR)
            except (OSError, ConnectionClosedError, DeadlineError, RecordError):
                pass
        self._abort()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session(peer_node_id={self.peer_node_id}, {self.keys!r})"


def client_session(sock: socket.socket, code: str | RoomCode | RoomPassword, room_id: bytes,
                   epoch: int, identity: NodeIdentity | None = None, timeout: float = 5.0, *,
                   hello: dict = CONTROL_HELLO, entropy: Entropy = os.urandom) -> Session:
    """The client's side on a connected socket (§7.1): handshake, NODE_AUTH both ways, then
    HELLO. ``timeout`` bounds the whole handshake and, later, each :meth:`Session.recv`.

    Raises :class:`~partagpu.pgr.codes.CodeError` before any byte is sent for a typed code
    that is invalid, :class:`WrongCodeError` when SF does not verify, and
    :class:`ConnectionClosedError` / :class:`DeadlineError` with ``stage == "server flight"``
    when the server went away or stayed silent before its ServerHello (an unknown room, a
    ban, a malformed hello: the server never says which, §7.4).
    """
    try:
        password = password_for(code, room_id)
        identity = identity or NodeIdentity.generate()
        deadline = Deadline(timeout)
        handshake = ClientHandshake(password, room_id, epoch, entropy=entropy)
        send_all(sock, handshake.client_hello, deadline, "client hello")
        flight = recv_exact(sock, SERVER_FLIGHT_LEN, deadline, "server flight")
        keys, client_finished = handshake.on_server_flight(flight)
        # §3.4: CF and the NODE_AUTH record go in one write.
        send_all(sock, client_finished + keys.seal_node_auth(identity), deadline, "client finished")
        peer = keys.verify_node_auth(*keys.opener.open(recv_record(sock, deadline, "NODE_AUTH")))
        send_all(sock, keys.sealer.seal(RecordType.HELLO, encode_hello(hello)), deadline, "HELLO")
        record_type, body = keys.opener.open(recv_record(sock, deadline, "HELLO"))
        if record_type is RecordType.CLOSE:  # the server refused our HELLO (§7.3)
            raise ConnectionClosedError("HELLO", body.decode("utf-8", "replace"))
        if record_type is not RecordType.HELLO:
            raise RecordError("out-of-state", f"{record_type.name} instead of HELLO")
        peer_hello = _checked_hello(sock, keys, deadline, check_server_hello_body, body, hello["purpose"])
    except BaseException:
        close_quietly(sock)
        raise
    return Session(sock, keys, peer, peer_hello, timeout)


def _checked_hello(sock: socket.socket, keys: SessionKeys, deadline: Deadline,
                   check: Callable[..., dict], *args: object) -> dict:
    """Runs a HELLO check; a HELLO refused is answered with CLOSE and the reason (§7.3)
    before the connection is closed and the :class:`RecordError` raised."""
    try:
        return check(*args)
    except RecordError as error:
        try:
            send_all(sock, keys.sealer.seal(RecordType.CLOSE, str(error).encode("utf-8")), deadline, "CLOSE")
        except (ConnectionClosedError, DeadlineError):
            pass
        raise


def connect(host: str, port: int, code: str | RoomCode | RoomPassword, room_id: bytes, epoch: int,
            identity: NodeIdentity | None = None, timeout: float = 5.0) -> Session:
    """Opens a TCP connection and runs :func:`client_session` on it.

    The code is validated and ``pw`` derived before connecting, so a typo costs no online
    guess (§2.4, §2.7).
    """
    password = password_for(code, room_id)
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client_session(sock, password, room_id, epoch, identity, timeout)


@dataclasses.dataclass
class ServedConnection:
    """How a connection served by :func:`serve_one` ended after its session was set up."""

    peer: VerifiedNode
    peer_hello: dict
    ended_by: str  # "close" (the peer sent CLOSE), "eof" or "timeout" (§6.7)
    close_reason: str = ""


def serve_one(sock: socket.socket, code_or_pw: str | RoomCode | RoomPassword, room_id: bytes,
              epoch: int, identity: NodeIdentity, hello_reply: dict | bytes, *,
              on_session: Callable[[Session], None] | None = None,
              entropy: Entropy = os.urandom) -> ServedConnection:
    """The server's side of one accepted control connection in one room (§7.2), until it
    ends: :func:`accept_session`, then ``on_session`` once the HELLOs are exchanged, then
    the control records of §7.3 until CLOSE, EOF or 45 s of silence (see
    :func:`_serve_control_records`).

    Raises what :func:`accept_session` raises, and :class:`RecordError`,
    :class:`ConnectionClosedError` or :class:`DeadlineError` from the control records.
    """
    session = accept_session(sock, code_or_pw, room_id, epoch, identity, hello_reply,
                             entropy=entropy)
    if on_session is not None:
        on_session(session)
    return _serve_control_records(session)


def accept_session(sock: socket.socket, code_or_pw: str | RoomCode | RoomPassword,
                   room_id: bytes, epoch: int, identity: NodeIdentity, hello_reply: dict | bytes,
                   *, purposes: tuple[str, ...] = ("control",),
                   entropy: Entropy = os.urandom) -> Session:
    """The server's handshake on one accepted connection in one room (§7.2), through the
    HELLOs: the returned :class:`Session` carries the records of the client's purpose, one
    of ``purposes`` (§6.9; a job connection is ``("job",)``, §7.6).

    Deadlines of §9: the ClientHello within 2 s, the handshake through the client's
    NODE_AUTH within 5 s, its HELLO within 5 s more (a HELLO refused is answered with CLOSE
    and a reason, §7.3).

    Raises :class:`MalformedError`, :class:`WrongRoomError`, :class:`WrongCodeError` (also
    with ``reason == "no-finished"`` when the client left or timed out after SF, since it
    could test its guess against SF), :class:`NodeAuthError`, :class:`RecordError`,
    :class:`ConnectionClosedError` or :class:`DeadlineError`; the socket is then closed
    without anything sent (§7.4), but for the CLOSE that answers a refused HELLO.
    """
    password = password_for(code_or_pw, room_id)
    hello_body = hello_reply if isinstance(hello_reply, bytes) else encode_hello(hello_reply)

    def lookup(asked: bytes) -> tuple[int, RoomPassword] | None:
        return (epoch, password) if asked == room_id else None  # room ids are public

    try:
        # Both deadlines run from the accept (§9).
        client_hello_deadline = Deadline(CLIENT_HELLO_DEADLINE)
        handshake_deadline = Deadline(HANDSHAKE_DEADLINE)
        client_hello = recv_exact(sock, CLIENT_HELLO_LEN, client_hello_deadline, "ClientHello")
        state, flight = ServerHandshake.on_client_hello(client_hello, lookup, entropy=entropy)
        send_all(sock, flight, handshake_deadline, "server flight")
        try:
            client_finished = recv_exact(sock, FINISHED_LEN, handshake_deadline, "client finished")
        except (ConnectionClosedError, DeadlineError):
            raise WrongCodeError("no-finished") from None
        keys = state.on_client_finished(client_finished)
        peer = keys.verify_node_auth(*keys.opener.open(recv_record(sock, handshake_deadline, "NODE_AUTH")))
        send_all(sock, keys.seal_node_auth(identity), handshake_deadline, "NODE_AUTH")
        hello_deadline = Deadline(HANDSHAKE_DEADLINE)
        record_type, body = keys.opener.open(recv_record(sock, hello_deadline, "HELLO"))
        if record_type is not RecordType.HELLO:
            raise RecordError("out-of-state", f"{record_type.name} instead of HELLO")
        peer_hello = _checked_hello(sock, keys, hello_deadline, check_client_hello_body, body,
                                    purposes)
        send_all(sock, keys.sealer.seal(RecordType.HELLO, hello_body), hello_deadline, "HELLO")
    except BaseException:
        close_quietly(sock)
        raise
    return Session(sock, keys, peer, peer_hello, IDLE_TIMEOUT)


def _serve_control_records(session: Session) -> ServedConnection:
    """The server side of a control connection after the HELLOs (§7.3).

    PING → PONG; PONG and KEY_UPDATE (already followed by the opener, §6.6) need nothing;
    REQUEST → RESPONSE ``{"error": "unknown-request"}`` (no request exists in this phase);
    CLOSE ends it. Any other type is out of state: :class:`RecordError`, closed silently.
    After 15 s of silence this end pings; after 45 s without a record it closes (§6.7).
    """
    ended_by, reason = "eof", ""
    try:
        while True:
            if not session.wait_for_record(PING_AFTER_SILENCE):
                session.send(RecordType.PING)
                if not session.wait_for_record(IDLE_TIMEOUT - PING_AFTER_SILENCE):
                    ended_by = "timeout"
                    break
            try:
                record_type, body = session.recv(IDLE_TIMEOUT)
            except ConnectionClosedError:
                break
            except DeadlineError:
                ended_by = "timeout"
                break
            if record_type is RecordType.PING:
                session.send(RecordType.PONG)
            elif record_type is RecordType.REQUEST:
                session.send(RecordType.RESPONSE, encode_hello(UNKNOWN_REQUEST_RESPONSE))
            elif record_type is RecordType.CLOSE:
                ended_by, reason = "close", body.decode("utf-8")
                break
            elif record_type not in (RecordType.PONG, RecordType.KEY_UPDATE):
                raise RecordError("out-of-state", f"{record_type.name} on a control connection")
    finally:
        session._abort()
    return ServedConnection(session.peer, session.peer_hello, ended_by, reason)
