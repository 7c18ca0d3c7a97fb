# SPDX-License-Identifier: GPL-3.0-or-later
"""Client and server over ``socket.socketpair`` (§7, §8.1, §9), and records on the wire."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from partagpu.pgr import session as session_module
from partagpu.pgr.codes import RoomCode
from partagpu.pgr.control_hello import control_server_hello
from partagpu.pgr.errors import (
    ConnectionClosedError, DeadlineError, MalformedError, NodeAuthError, RecordError,
    WrongCodeError, WrongRoomError,
)
from partagpu.pgr.handshake import ClientHandshake, ServerHandshake
from partagpu.pgr.node_auth import NodeIdentity, VerifiedNode
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.records import RecordType
from partagpu.pgr.session import Session, client_session, serve_one

ROOM = bytes(range(16))
CODE = "zoo zebra wrist abandon"
PW = RoomPassword.derive(RoomCode.parse(CODE), ROOM)
CLIENT_ID, SERVER_ID = NodeIdentity.generate(), NodeIdentity.generate()


class ServerThread(threading.Thread):
    """serve_one in a thread; keeps its result or exception."""

    def __init__(self, sock, code=PW, epoch=4, label="lab"):
        super().__init__(daemon=True)
        self.args = (sock, code, ROOM, epoch, SERVER_ID, control_server_hello(label, epoch))
        self.result = self.error = None
        self.sessions = []
        self.start()

    def run(self):
        try:
            self.result = serve_one(*self.args, on_session=self.sessions.append)
        except Exception as error:  # noqa: BLE001 — the test inspects it
            self.error = error

    def finish(self):
        self.join(10)
        assert not self.is_alive()
        return self


def test_right_code_control_session():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    session = client_session(client_sock, CODE, ROOM, 4, CLIENT_ID)
    assert session.peer_node_id == SERVER_ID.node_id.hex()
    assert session.peer_hello == {"purpose": "control", "versions": [1], "caps": [],
                                  "room": {"label": "lab", "epoch": 4}}
    assert len(session.peer_fingerprint.split(" ")) == 6
    assert session.ping() >= 0
    session.key_update()
    session.ping()
    session.key_update()
    session.ping()
    assert (session.keys.sealer.key_updates, session.keys.opener.key_updates) == (2, 0)
    session.close("done")
    server.finish()
    assert server.error is None
    assert server.result.ended_by == "close" and server.result.close_reason == "done"
    assert server.result.peer.public_key == CLIENT_ID.public_key
    assert server.sessions[0].transcript_hash == session.transcript_hash
    with pytest.raises(RecordError) as caught:
        session.send(RecordType.PING)  # nothing after CLOSE (§7.3)
    assert caught.value.kind == "out-of-state"


def test_wrong_code_fails_on_the_client_and_counts_on_the_server():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    with pytest.raises(WrongCodeError):
        client_session(client_sock, "zoo zebra wrist ability", ROOM, 4, CLIENT_ID)
    server.finish()
    assert isinstance(server.error, WrongCodeError) and server.error.reason == "no-finished"


def test_old_epoch_is_a_wrong_code():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock, epoch=5)
    with pytest.raises(WrongCodeError):
        client_session(client_sock, PW, ROOM, 4, CLIENT_ID)
    assert isinstance(server.finish().error, WrongCodeError)


def test_a_forged_client_finished_is_a_wrong_code():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    handshake = ClientHandshake(RoomPassword(os.urandom(32)), ROOM, 4)
    client_sock.sendall(handshake.client_hello)
    assert len(client_sock.recv(73, socket.MSG_WAITALL)) == 73
    client_sock.sendall(os.urandom(32))
    server.finish()
    assert isinstance(server.error, WrongCodeError) and server.error.reason == "mismatch"
    assert client_sock.recv(1) == b""  # closed, nothing sent back


def test_unknown_room_closes_before_server_hello():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    with pytest.raises(ConnectionClosedError) as caught:
        client_session(client_sock, PW, bytes(16), 4, CLIENT_ID)
    assert caught.value.stage == "server flight"
    assert isinstance(server.finish().error, WrongRoomError)


@pytest.mark.parametrize("offset,value", [(4, 2), (5, 2), (6, 1), (7, 1), (24, ord("B"))])
def test_a_downgraded_client_hello_gets_no_answer(offset, value):
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    hello = bytearray(ClientHandshake(PW, ROOM, 4).client_hello)
    hello[offset] = value
    client_sock.sendall(bytes(hello))
    assert client_sock.recv(100) == b""
    assert isinstance(server.finish().error, MalformedError)


def test_server_deadlines(monkeypatch):
    monkeypatch.setattr(session_module, "CLIENT_HELLO_DEADLINE", 0.2)
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    client_sock.sendall(b"PGR1")  # part of a ClientHello, then silence
    error = server.finish().error
    assert isinstance(error, DeadlineError) and error.stage == "ClientHello"

    monkeypatch.setattr(session_module, "HANDSHAKE_DEADLINE", 0.3)
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    client_sock.sendall(ClientHandshake(PW, ROOM, 4).client_hello)  # then never a CF
    error = server.finish().error
    assert isinstance(error, WrongCodeError) and error.reason == "no-finished"


def test_client_deadline_without_server_hello():
    client_sock, _silent = socket.socketpair()
    with pytest.raises(DeadlineError) as caught:
        client_session(client_sock, PW, ROOM, 4, CLIENT_ID, timeout=0.2)
    assert caught.value.stage == "server flight"


@pytest.mark.parametrize("hello", [{"purpose": "upload", "versions": [1], "caps": []},
                                   {"purpose": "control", "versions": [2], "caps": []}])
def test_a_refused_client_hello_is_answered_with_close_and_a_reason(hello):
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    with pytest.raises(ConnectionClosedError) as caught:
        client_session(client_sock, PW, ROOM, 4, CLIENT_ID, hello=hello)
    assert caught.value.stage == "HELLO" and "version or purpose" in caught.value.reason
    error = server.finish().error
    assert isinstance(error, RecordError) and error.kind == "bad-body"


def test_unknown_keys_in_hello_are_ignored():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    session = client_session(client_sock, PW, ROOM, 4, CLIENT_ID,
                             hello={"purpose": "control", "versions": [3, 1], "caps": [], "later": True})
    session.close()
    assert server.finish().error is None and server.result.peer_hello["later"] is True


def test_a_refused_server_hello_is_answered_with_close():
    client_sock, server_sock = socket.socketpair()
    outcome = {}

    def bad_server():
        outcome["served"] = serve_one(server_sock, PW, ROOM, 4, SERVER_ID,
                                      {"purpose": "control", "versions": [2], "caps": []})
    server = threading.Thread(target=bad_server, daemon=True)
    server.start()
    with pytest.raises(RecordError) as caught:
        client_session(client_sock, PW, ROOM, 4, CLIENT_ID)
    assert caught.value.kind == "bad-body"
    server.join(10)
    assert outcome["served"].ended_by == "close"
    assert "version or purpose" in outcome["served"].close_reason


def test_a_client_that_skips_node_auth_is_refused():
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    handshake = ClientHandshake(PW, ROOM, 4)
    client_sock.sendall(handshake.client_hello)
    keys, cf = handshake.on_server_flight(client_sock.recv(73, socket.MSG_WAITALL))
    client_sock.sendall(cf + keys.sealer.seal(RecordType.HELLO, b"{}"))
    error = server.finish().error
    assert isinstance(error, NodeAuthError) and error.reason == "not-node-auth"
    assert client_sock.recv(1) == b""  # no NODE_AUTH from the server: nothing before the client's


def established_pair():
    """A client Session on a socketpair whose other end the test drives by hand."""
    handshake = ClientHandshake(PW, ROOM, 4)
    server, flight = ServerHandshake.on_client_hello(handshake.client_hello, lambda rid: (4, PW))
    client_keys, cf = handshake.on_server_flight(flight)
    server_keys = server.on_client_finished(cf)
    client_sock, raw = socket.socketpair()
    session = Session(client_sock, client_keys, VerifiedNode(SERVER_ID.public_key), {}, timeout=2.0)
    return session, server_keys, raw


def assert_closed_without_data(raw):
    """The other end closed and sent no byte (a reset, when it left data unread, is fine)."""
    try:
        assert raw.recv(1) == b""
    except ConnectionResetError:
        pass


def expect_record_error(session, raw, wire, kind):
    raw.sendall(wire)
    with pytest.raises(RecordError) as caught:
        session.recv()
    assert caught.value.kind == kind
    assert session.sock.fileno() == -1  # §6.5: closed, nothing sent
    assert_closed_without_data(raw)


def test_tampered_record_on_the_wire():
    session, server_keys, raw = established_pair()
    wire = bytearray(server_keys.sealer.seal(RecordType.PONG))
    wire[-1] ^= 0x80
    expect_record_error(session, raw, bytes(wire), "decrypt")
    assert session.keys.opener.seq == 0


def test_replayed_record_on_the_wire():
    session, server_keys, raw = established_pair()
    wire = server_keys.sealer.seal(RecordType.PONG)
    raw.sendall(wire)
    assert session.recv() == (RecordType.PONG, b"")
    expect_record_error(session, raw, wire, "decrypt")


def test_reordered_records_on_the_wire():
    session, server_keys, raw = established_pair()
    first, second = server_keys.sealer.seal(RecordType.PONG), server_keys.sealer.seal(RecordType.PING)
    expect_record_error(session, raw, second + first, "decrypt")


def test_reflected_record_on_the_wire():
    session, _, raw = established_pair()
    own = session.keys.sealer.seal(RecordType.PING)
    expect_record_error(session, raw, own, "decrypt")


def test_short_length_is_refused_before_reading_on():
    session, _, raw = established_pair()
    expect_record_error(session, raw, b"\x00\x10", "too-short")


def test_truncated_record_is_a_closed_connection():
    session, server_keys, raw = established_pair()
    wire = server_keys.sealer.seal(RecordType.DATA, b"x" * 100)
    raw.sendall(wire[:-1])
    raw.shutdown(socket.SHUT_WR)
    with pytest.raises(ConnectionClosedError):
        session.recv()
    assert session.keys.opener.seq == 0


def test_second_node_auth_is_out_of_state():
    session, server_keys, raw = established_pair()
    expect_record_error(session, raw, server_keys.seal_node_auth(SERVER_ID), "out-of-state")


def test_key_update_from_the_peer_is_followed_and_close_is_read():
    session, server_keys, raw = established_pair()
    raw.sendall(server_keys.sealer.seal_key_update() + server_keys.sealer.seal(RecordType.PONG)
                + server_keys.sealer.seal(RecordType.CLOSE, "bye".encode()))
    assert session.recv() == (RecordType.KEY_UPDATE, b"")
    assert session.recv() == (RecordType.PONG, b"")
    assert session.keys.opener.key_updates == 1
    assert session.recv() == (RecordType.CLOSE, b"bye")
    with pytest.raises(ConnectionClosedError):
        session.recv()


def test_close_reason_is_cut_to_256_bytes_on_a_character_boundary():
    session, server_keys, raw = established_pair()
    session.close("é" * 200)
    data = raw.recv(1000)
    record_type, body = server_keys.opener.open(data)
    assert record_type is RecordType.CLOSE and body.decode() == "é" * 128
    assert raw.recv(1) == b""


def control_pair():
    """A client Session with a real serve_one thread behind it."""
    client_sock, server_sock = socket.socketpair()
    server = ServerThread(server_sock)
    return client_session(client_sock, PW, ROOM, 4, CLIENT_ID), server


def test_a_request_gets_the_unknown_request_response():
    session, server = control_pair()
    session.send(RecordType.REQUEST, b'{"op":"status"}')
    assert session.recv() == (RecordType.RESPONSE, b'{"error":"unknown-request"}')
    session.close("done")
    assert server.finish().result.ended_by == "close"


@pytest.mark.parametrize("record_type", [RecordType.DATA, RecordType.RESPONSE, RecordType.LOG])
def test_other_records_are_out_of_state_on_a_control_connection(record_type):
    session, server = control_pair()
    session.send(record_type, b"x")
    with pytest.raises(ConnectionClosedError):
        session.recv()
    error = server.finish().error
    assert isinstance(error, RecordError) and error.kind == "out-of-state"


def test_the_server_pings_after_silence_and_closes_a_silent_peer(monkeypatch):
    monkeypatch.setattr(session_module, "PING_AFTER_SILENCE", 0.2)
    monkeypatch.setattr(session_module, "IDLE_TIMEOUT", 0.6)
    session, server = control_pair()
    assert session.recv() == (RecordType.PING, b"")
    session.send(RecordType.PONG)  # alive: the server waits again
    assert session.recv() == (RecordType.PING, b"")  # silent from now on
    assert server.finish().result.ended_by == "timeout"
    with pytest.raises(ConnectionClosedError):
        session.recv()
