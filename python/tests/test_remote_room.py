# SPDX-License-Identifier: GPL-3.0-or-later
"""Choosing the room and member (PGR/1 §2.7, §10), the notebook's node key, the code kept
out of sight, the output buffer of a followed job, and the ways in: ``distribute`` without
a local service, and ``python -m partagpu run --peer``."""

from __future__ import annotations

import os
import stat

import pytest

import partagpu
from fake_job_server import CODE, EPOCH, ROOM_ID, FakeMember
from partagpu.__main__ import main
from partagpu.pgr.mdns import Announcement
from partagpu.remote import Room
from partagpu.remote.choose import Member, choose_room
from partagpu.remote.log_buffer import LogBuffer
from partagpu.remote.node_key import NodeKeyError, default_key_path, load_identity
from partagpu.remote.room import parse_peer

A, B = "aa" * 16, "bb" * 16


def seen(room_id: str, epoch: int, label: str, *addresses: str, port: int = 7655) -> Announcement:
    return Announcement(f"i{len(addresses)}{addresses[0]}", addresses, port, room_id, epoch, label)


# -- which room ---------------------------------------------------------------------------
def test_the_one_room_visible_is_chosen_with_its_newest_epoch():
    target = choose_room([seen(A, 1, "B12", "10.0.0.1"), seen(A, 2, "B12", "10.0.0.2", port=7700)])
    assert (target.room_id, target.epoch, target.label) == (A, 2, "B12")
    assert target.members == (Member("10.0.0.2", 7700),)  # an old epoch's member would fail


def test_several_rooms_need_room_and_no_code_is_tried():
    rooms = [seen(A, 0, "B12", "10.0.0.1"), seen(B, 0, "", "10.0.0.2")]
    with pytest.raises(partagpu.RoomNotFoundError, match="2 rooms are announced here") as raised:
        choose_room(rooms)
    assert "'B12' (aaaaaaaa…)" in str(raised.value) and f"{B} (no label)" in str(raised.value)
    assert choose_room(rooms, room="b12").room_id == A
    assert choose_room(rooms, room=B.upper()).room_id == B
    with pytest.raises(partagpu.RoomNotFoundError, match="no room labelled 'C3'"):
        choose_room(rooms, room="C3")
    with pytest.raises(partagpu.RoomNotFoundError, match="2 rooms are labelled 'B12'"):
        choose_room([*rooms, seen(B, 0, "B12", "10.0.0.3")], room="B12")
    with pytest.raises(partagpu.RoomNotFoundError, match="no PartaGPU room is announced"):
        choose_room([])


def test_a_peer_is_the_only_member_dialled():
    rooms = [seen(A, 0, "B12", "10.0.0.1", port=7700), seen(B, 0, "", "10.0.0.2")]
    target = choose_room(rooms, peer=("pc-1", None), peer_addresses=["10.0.0.1"])
    assert target.room_id == A and target.members == (Member("pc-1", 7700),)
    with pytest.raises(partagpu.RoomNotFoundError, match="10.0.0.9 announces no PartaGPU room"):
        choose_room(rooms, peer=("10.0.0.9", None), peer_addresses=["10.0.0.9"])


def test_several_rooms_and_no_choice_dial_nobody(tmp_path):
    fake = FakeMember([])
    try:
        rooms = [seen(ROOM_ID.hex(), EPOCH, "", "127.0.0.1"), seen(B, 0, "", "127.0.0.2")]
        room = Room(CODE, browse=lambda _: rooms, key_file=tmp_path / "k")
        with pytest.raises(partagpu.RoomNotFoundError):
            room.dial()
        assert fake.handshake_failures == [] and fake.requests == []
    finally:
        fake.stop()


@pytest.mark.parametrize("text, expected", [("10.0.0.2", ("10.0.0.2", None)),
                                            ("pc-1:7700", ("pc-1", 7700))])
def test_peer_addresses(text, expected):
    assert parse_peer(text) == expected


@pytest.mark.parametrize("text", ["", ":7655", "pc-1:0", "pc-1:x", "pc-1:70000"])
def test_bad_peer_addresses(text):
    with pytest.raises(ValueError):
        parse_peer(text)


# -- the code -----------------------------------------------------------------------------
def test_the_code_is_checked_at_once_and_never_shown(monkeypatch):
    monkeypatch.delenv("PARTAGPU_CODE", raising=False)
    with pytest.raises(partagpu.RoomCodeError, match="no room code: set PARTAGPU_CODE"):
        Room()
    with pytest.raises(partagpu.RoomCodeError, match="word 2 is not in the word list") as raised:
        Room("zoo zbra wrist abandon")
    assert "zbra" not in str(raised.value)
    monkeypatch.setenv("PARTAGPU_CODE", CODE)
    room = Room(peer="10.0.0.2", room="B12")
    assert repr(room) == "Room(code=<hidden>, peer='10.0.0.2', room='B12')"
    assert not any(word in repr(vars(room)) for word in CODE.split())


# -- the node key -------------------------------------------------------------------------
def test_the_node_key_is_made_once_0600_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = default_key_path()
    assert path == tmp_path / "config" / "partagpu" / "node-key"
    first = Room(CODE).node_id
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert Room(CODE).node_id == first == load_identity(path).node_id.hex()
    assert len(path.read_text().strip()) == 64


def test_a_node_key_others_may_read_or_damaged_is_refused(tmp_path):
    path = tmp_path / "node-key"
    load_identity(path)
    os.chmod(path, 0o640)
    with pytest.raises(NodeKeyError, match="may be read by other users .*chmod 600"):
        load_identity(path)
    os.chmod(path, 0o600)
    path.write_text("not hex\n")
    with pytest.raises(NodeKeyError, match="is damaged"):
        load_identity(path)
    link = tmp_path / "link"
    link.symlink_to(path)
    with pytest.raises(NodeKeyError, match="cannot be read"):
        load_identity(link)


# -- the output buffer --------------------------------------------------------------------
def test_the_log_buffer_skips_what_it_has_and_marks_gaps():
    log = LogBuffer()
    log.add(0, b"hello ")
    log.add(3, b"lo world\n")  # resent after a reconnection: "lo " is skipped
    log.add(20, b"late\n")  # bytes 12 to 19 never came
    data, following = log.read(0, 1 << 20)
    assert data == b"hello world\n\n[partagpu: 8 bytes of output lost in transit]\nlate\n"
    assert (log.held, following) == (25, log.end)
    assert log.read(following, 10) == (b"", following)


def test_unread_output_is_capped_with_a_marker():
    log = LogBuffer(max_unread=10)
    log.add(0, b"0123456789abcdef")
    data, following = log.read(0, 100)
    assert data == b"[partagpu: 6 bytes of output dropped, not read in time]\n6789abcdef"
    assert following == 16 == log.end


# -- the ways in --------------------------------------------------------------------------
@pytest.fixture
def fake_and_workspace(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text("print('hi')\n")
    fake = FakeMember([("state", "running"), ("log", b"hi\n"), ("state", "succeeded")],
                      {"model.pt": b"weights"})
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PARTAGPU_CODE", CODE)
    # No local service: the system bus is a socket that does not exist.
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", f"unix:path={tmp_path}/no-bus")
    yield fake, workspace
    fake.stop()


def test_without_a_local_service_the_code_in_the_environment_is_used(fake_and_workspace, monkeypatch, capsys):
    fake, workspace = fake_and_workspace
    monkeypatch.setenv("PARTAGPU_PEER", fake.peer)
    # mDNS tells the room id and epoch of the peer (here injected: loopback is not announced).
    heard = [seen(ROOM_ID.hex(), EPOCH, "Salle B12", "127.0.0.1")]
    monkeypatch.setattr("partagpu.pgr.mdns.browse", lambda _seconds: heard)
    job = partagpu.distribute("train.py", workspace=workspace)
    assert job.status == "succeeded" and (workspace / "model.pt").read_bytes() == b"weights"
    assert capsys.readouterr().out == "hi\n" and fake.errors == []


def test_the_command_line_takes_peer_room_and_epoch(fake_and_workspace, capsys):
    fake, workspace = fake_and_workspace
    status = main(["run", "--peer", fake.peer, "--room", ROOM_ID.hex(), "--epoch", str(EPOCH),
                   "--artifact", "model.pt", str(workspace / "train.py")])
    out, err = capsys.readouterr()
    assert status == 0 and out == "hi\n" and "succeeded on lab-1, lab-2" in err
    assert fake.errors == [] and CODE.split()[0] not in err


def test_the_command_line_needs_the_code_in_the_environment(fake_and_workspace, monkeypatch, capsys):
    fake, workspace = fake_and_workspace
    monkeypatch.delenv("PARTAGPU_CODE")
    status = main(["run", "--peer", fake.peer, str(workspace / "train.py")])
    assert status == 1
    assert "no room code: set PARTAGPU_CODE to the room's four words" in capsys.readouterr().err
