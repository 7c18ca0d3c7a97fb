# SPDX-License-Identifier: GPL-3.0-or-later
"""The handshake state machines (§3, §4, §7.1, §7.2) and the whole-connection vector."""

from __future__ import annotations

import os

import pytest

from partagpu.pgr.codes import RoomCode
from partagpu.pgr.errors import MalformedError, NodeAuthError, WrongCodeError, WrongRoomError
from partagpu.pgr.handshake import ClientHandshake, ServerHandshake
from partagpu.pgr.handshake_messages import parse_client_hello, parse_server_hello
from partagpu.pgr.node_auth import NodeIdentity
from partagpu.pgr.password import RoomPassword
from partagpu.pgr.records import RecordType
from partagpu.pgr.roles import Role
from conftest import fixed_entropy, load_cases

ROOM = bytes([0x5C]) * 16
PW = RoomPassword(bytes([1]) * 32)
OTHER_PW = RoomPassword(bytes([2]) * 32)


def room_lookup(epoch=3, password=PW, calls=None):
    def lookup(room_id):
        if calls is not None:
            calls.append(room_id)
        return (epoch, password) if room_id == ROOM else None
    return lookup


def run(client_pw=PW, client_epoch=3):
    client = ClientHandshake(client_pw, ROOM, client_epoch)
    server, flight = ServerHandshake.on_client_hello(client.client_hello, room_lookup())
    return client, server, flight


@pytest.mark.parametrize("case", load_cases("transcript.json"))
def test_whole_connection_vector(case):
    room_id, epoch = bytes.fromhex(case["room_id"]), case["epoch"]
    password = RoomPassword.derive(RoomCode.parse(case["code_typed"]), room_id)
    assert password.expose_secret().hex() == case["password"]
    client = ClientHandshake(password, room_id, epoch, entropy=fixed_entropy(case["client_rng_byte"]))
    assert client.client_hello.hex() == case["client_hello"]
    server, flight = ServerHandshake.on_client_hello(
        client.client_hello, lambda rid: (epoch, password) if rid == room_id else None,
        entropy=fixed_entropy(case["server_rng_byte"]))
    assert flight.hex() == case["server_flight"]
    client_keys, client_finished = client.on_server_flight(flight)
    assert client_finished.hex() == case["client_finished"]
    server_keys = server.on_client_finished(client_finished)
    for keys in (client_keys, server_keys):
        assert keys.transcript_hash.hex() == case["th"]
        assert keys.expose_exporter().hex() == case["exporter"]
    identities = {"client": NodeIdentity.from_seed(bytes.fromhex(case["client_node_seed"])),
                  "server": NodeIdentity.from_seed(bytes.fromhex(case["server_node_seed"]))}
    ends = {"client": (client_keys, server_keys), "server": (server_keys, client_keys)}
    for index, record in enumerate(case["records"]):
        sender, receiver = ends[record["from"]]
        body = bytes.fromhex(record["body"])
        if index < 2:  # both NODE_AUTHs come first (§7.3)
            assert record["record_type"] == RecordType.NODE_AUTH
            assert body == identities[record["from"]].sign(sender.role, sender.transcript_hash)
            wire = sender.seal_node_auth(identities[record["from"]])
        else:
            wire = sender.sealer.seal(record["record_type"], body)
        assert wire.hex() == record["wire"], index
        opened = receiver.opener.open(wire)
        assert opened == (record["record_type"], body)
        if index < 2:
            assert receiver.verify_node_auth(*opened).public_key == identities[record["from"]].public_key
    types = [r["record_type"] for r in case["records"]]
    assert types.count(RecordType.KEY_UPDATE) == 2 and types[-1] == RecordType.CLOSE
    assert client_keys.sealer.key_updates == server_keys.opener.key_updates == 1


def test_right_code_gives_matching_keys():
    client, server, flight = run()
    client_keys, cf = client.on_server_flight(flight)
    server_keys = server.on_client_finished(cf)
    assert client_keys.transcript_hash == server_keys.transcript_hash
    assert client_keys.expose_exporter() == server_keys.expose_exporter()
    assert (client_keys.role, server_keys.role, server_keys.epoch) == (Role.CLIENT, Role.SERVER, 3)
    c2s = client_keys.sealer.seal(RecordType.PING, b"c")
    assert server_keys.opener.open(c2s) == (RecordType.PING, b"c")
    # A NODE_AUTH reflected back to its sender does not verify (role byte, §5.2).
    alice = NodeIdentity.generate()
    own = alice.sign(Role.CLIENT, client_keys.transcript_hash)
    with pytest.raises(NodeAuthError):
        client_keys.verify_node_auth(RecordType.NODE_AUTH, own)
    with pytest.raises(NodeAuthError) as caught:
        client_keys.verify_node_auth(RecordType.HELLO, own)
    assert caught.value.reason == "not-node-auth"


def test_wrong_code_and_old_epoch_fail_as_wrong_code_on_both_sides():
    client, server, flight = run(client_pw=OTHER_PW)
    with pytest.raises(WrongCodeError):
        client.on_server_flight(flight)
    # A client that ignored SF and sent a CF anyway fails on the server the same way.
    with pytest.raises(WrongCodeError) as caught:
        server.on_client_finished(os.urandom(32))
    assert caught.value.kind == "wrong-code"
    client, _, flight = run(client_epoch=2)
    with pytest.raises(WrongCodeError):
        client.on_server_flight(flight)


def test_unknown_room_fails_before_spake2():
    client = ClientHandshake(PW, bytes(16), 3)
    calls = []
    with pytest.raises(WrongRoomError):
        ServerHandshake.on_client_hello(client.client_hello, room_lookup(calls=calls))
    assert calls == [bytes(16)]


# (offset, new byte, reason) — one change each; §3.1 order decides when several apply.
HELLO_MUTATIONS = [(0, ord("X"), "bad-magic"), (4, 0x02, "bad-version"), (5, 0x02, "bad-suite"),
                   (6, 0x80, "bad-flags"), (7, 0x01, "bad-flags")]


@pytest.mark.parametrize("offset,value,reason", HELLO_MUTATIONS)
def test_downgraded_client_hello_is_malformed_without_lookup(offset, value, reason):
    hello = bytearray(ClientHandshake(PW, ROOM, 3).client_hello)
    hello[offset] = value
    calls = []
    with pytest.raises(MalformedError) as caught:
        ServerHandshake.on_client_hello(bytes(hello), room_lookup(calls=calls))
    assert caught.value.reason == reason and caught.value.kind == "malformed"
    assert calls == []  # nothing looked up, no SPAKE2 work (§8.1)


@pytest.mark.parametrize("offset,value,reason", HELLO_MUTATIONS)
def test_downgraded_server_hello_is_malformed(offset, value, reason):
    client, _, flight = run()
    flight = bytearray(flight)
    flight[offset] = value
    with pytest.raises(MalformedError) as caught:
        client.on_server_flight(bytes(flight))
    assert caught.value.reason == reason


def test_check_order_and_sizes():
    hello = bytearray(ClientHandshake(PW, ROOM, 3).client_hello)
    for size in (56, 58, 0):
        with pytest.raises(MalformedError) as caught:
            parse_client_hello(bytes(hello + b"\x00")[:size])
        assert caught.value.reason == "wrong-length"
    bad = bytearray(hello)
    bad[4] = bad[5] = 9
    bad[24] = ord("B")
    with pytest.raises(MalformedError) as caught:
        parse_client_hello(bytes(bad))
    assert caught.value.reason == "bad-version"  # version is checked before suite and side
    hello[24] = ord("B")
    with pytest.raises(MalformedError) as caught:
        parse_client_hello(bytes(hello))
    assert caught.value.reason == "bad-side"
    client, server, flight = run()
    with pytest.raises(MalformedError) as caught:
        parse_server_hello(flight[:41][:8] + b"A" + flight[9:41])
    assert caught.value.reason == "bad-side"
    with pytest.raises(MalformedError):
        client.on_server_flight(flight[:72])
    with pytest.raises(MalformedError):
        server.on_client_finished(bytes(31))


def test_a_hello_byte_changed_in_transit_changes_th_so_finished_fails():
    # A man in the middle who rewrites a byte the server still accepts (here the room id,
    # with a server that accepts any room) gets different TH and keys at the two ends.
    client = ClientHandshake(PW, ROOM, 3)
    changed = bytearray(client.client_hello)
    changed[8] ^= 1
    _, flight = ServerHandshake.on_client_hello(bytes(changed), lambda rid: (3, PW))
    with pytest.raises(WrongCodeError):
        client.on_server_flight(flight)


def test_a_corrupt_point_is_malformed():
    hello = bytearray(ClientHandshake(PW, ROOM, 0).client_hello)
    hello[25:] = bytes([2]) + bytes(31)  # y = 2 is not on the curve
    with pytest.raises(MalformedError) as caught:
        ServerHandshake.on_client_hello(bytes(hello), lambda rid: (0, PW))
    assert caught.value.reason == "bad-point"


def test_states_are_used_once_and_fixed_randomness_repeats():
    client, server, flight = run()
    _, cf = client.on_server_flight(flight)
    server.on_client_finished(cf)
    with pytest.raises(RuntimeError):
        client.on_server_flight(flight)
    with pytest.raises(RuntimeError):
        server.on_client_finished(cf)

    def once():
        c = ClientHandshake(PW, ROOM, 9, entropy=fixed_entropy(0x11))
        _, f = ServerHandshake.on_client_hello(c.client_hello, lambda rid: (9, PW), entropy=fixed_entropy(0x22))
        return c.client_hello, f
    assert once() == once()
    assert run()[2] != run()[2]  # real randomness differs
