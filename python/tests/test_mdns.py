# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-shot mDNS browse (PGR/1 §10) on hand-built packets: names with compression,
PTR/SRV/TXT/A linked into announcements, and every bound (malformed packets dropped whole,
256 instances, 4 addresses, TXT rules, goodbyes, unusable addresses)."""

from __future__ import annotations

import socket
import struct

import pytest

from partagpu.pgr import mdns
from partagpu.pgr.dns_message import MalformedPacket, parse_response, read_name

RID = "0123456789abcdef0123456789abcdef"
SERVICE = (b"_partagpu", b"_tcp", b"local")


def name(*labels: bytes) -> bytes:
    return b"".join(bytes([len(label)]) + label for label in labels) + b"\0"


def rr(owner: bytes, kind: int, rdata: bytes, ttl: int = 120, klass: int = 0x8001) -> bytes:
    return owner + struct.pack("!HHIH", kind, klass, ttl, len(rdata)) + rdata


def txt(*strings: bytes) -> bytes:
    return b"".join(bytes([len(s)]) + s for s in strings)


def response(*records: bytes, flags: int = 0x8400, count: int | None = None) -> bytes:
    header = struct.pack("!6H", 0, flags, 0, len(records) if count is None else count, 0, 0)
    return header + b"".join(records)


def announcement(instance: bytes = b"a1b2c3d4e5f60718", addresses=("192.168.1.20",), port=7655,
                 strings=(b"pv=1", b"rid=" + RID.encode(), b"ep=2", b"label=Salle B12"),
                 ttl: int = 120) -> bytes:
    full = name(instance, *SERVICE)
    host = name(instance, b"local")
    records = [rr(name(*SERVICE), 12, full, ttl),
               rr(full, 33, struct.pack("!HHH", 0, 0, port) + host, ttl),
               rr(full, 16, txt(*strings), ttl)]
    records += [rr(host, 1, socket.inet_aton(a), ttl) for a in addresses]
    return response(*records)


def heard(*packets: bytes) -> list[mdns.Announcement]:
    table = mdns.AnnouncementTable()
    for packet in packets:
        table.add_packet(packet)
    return table.announcements()


def test_one_announcement_is_read():
    assert heard(announcement()) == [mdns.Announcement(
        "a1b2c3d4e5f60718", ("192.168.1.20",), 7655, RID, 2, "Salle B12")]


def test_compressed_names_are_followed():
    # The PTR target points back into the question-less answer's owner name (offset 12).
    owner = name(*SERVICE)
    target = bytes([4]) + b"inst" + b"\xc0\x0c"
    ptr = rr(owner, 12, target)
    target_at = 12 + len(owner) + 10  # the PTR's rdata
    local_at = 12 + 15  # "local" in the owner name
    srv = rr(struct.pack("!H", 0xC000 | target_at), 33,
             struct.pack("!HHH", 0, 0, 7700) + bytes([4]) + b"host" + bytes([0xC0, local_at]))
    text = rr(struct.pack("!H", 0xC000 | target_at), 16,
              txt(b"pv=1", b"rid=" + RID.upper().encode()))
    address = rr(name(b"host", b"local"), 1, socket.inet_aton("10.1.2.3"))
    packet = response(ptr, srv, text, address)
    assert read_name(packet, target_at) == (("inst", "_partagpu", "_tcp", "local"), target_at + 7)
    assert heard(packet) == [mdns.Announcement("inst", ("10.1.2.3",), 7700, RID, 0, "")]


@pytest.mark.parametrize("packet", [
    response(rr(b"\xc0\x0c", 1, b"\0\0\0\0")),  # a pointer to itself
    response(rr(b"\xc0\x20", 1, b"\0\0\0\0") + b"\0" * 40),  # a pointer forwards
    response(rr(b"\x40abc\0", 1, b"\0\0\0\0")),  # an unknown label type
    response(rr(name(*[b"x" * 63] * 5), 1, b"\0\0\0\0")),  # a name over 255 bytes
    response(rr(name(b"h", b"local"), 1, b"\0\0\0\0\0")),  # an A of 5 bytes
    response(rr(name(*SERVICE), 12, name(b"i", *SERVICE) + b"junk")),  # PTR with trailing bytes
    response(name(b"h", b"local") + struct.pack("!HHIH", 1, 1, 120, 40) + b"\0\0\0\0"),  # cut
    response(rr(name(b"h"), 16, b"\x09short")),  # a TXT string cut
    response(count=600),  # more records than a packet may hold
    b"\0" * 11,  # shorter than a header
    announcement() + b"\0" * 9000,  # larger than an mDNS message
])
def test_a_malformed_packet_is_dropped_whole(packet):
    with pytest.raises(MalformedPacket):
        parse_response(packet)
    table = mdns.AnnouncementTable()
    assert table.add_packet(packet) is False and table.add_packet(announcement()) is True
    assert len(table.announcements()) == 1


def test_queries_and_error_responses_give_nothing():
    records = announcement()[12:]
    assert heard(struct.pack("!6H", 0, 0x0000, 0, 4, 0, 0) + records) == []  # a query
    assert heard(struct.pack("!6H", 0, 0x8403, 0, 4, 0, 0) + records) == []  # rcode 3


@pytest.mark.parametrize("strings", [
    (b"pv=2", b"rid=" + RID.encode()),
    (b"rid=" + RID.encode(),),
    (b"pv=1", b"rid=0123"),
    (b"pv=1", b"rid=" + RID.encode(), b"ep=-1"),
    (b"pv=1", b"rid=" + RID.encode(), b"ep=4294967296"),
    (b"pv=1", b"rid=" + RID.encode(), b"label=" + b"x" * 64),
    (b"pv=1", b"rid=" + RID.encode(), b"label=bad\x07bell"),
    (b"pv=1", b"rid=" + RID.encode(), b"label=\xff\xfe"),
])
def test_a_txt_that_is_not_a_pgr1_room_is_ignored(strings):
    assert heard(announcement(strings=strings)) == []


def test_the_first_of_repeated_txt_keys_counts():
    strings = (b"PV=1", b"rid=" + RID.encode(), b"ep=5", b"ep=9", b"flag")
    (found,) = heard(announcement(strings=strings))
    assert found.epoch == 5


def test_bounds_on_instances_and_addresses():
    many = [announcement(f"{i:016x}".encode(), (f"10.0.{i // 250}.{i % 250 + 1}",))
            for i in range(300)]
    assert len(heard(*many)) == mdns.MAX_INSTANCES
    addresses = [f"192.168.1.{i}" for i in range(1, 8)]
    (found,) = heard(announcement(addresses=addresses))
    assert found.addresses == tuple(addresses[:mdns.MAX_ADDRESSES])


def test_unusable_addresses_are_ignored():
    (found,) = heard(announcement(addresses=("127.0.0.1", "169.254.3.4", "224.0.0.9", "0.0.0.0",
                                             "255.255.255.255", "192.168.7.7")))
    assert found.addresses == ("192.168.7.7",)
    assert heard(announcement(addresses=("127.0.0.1",))) == []  # nowhere to dial: not listed


def test_a_goodbye_withdraws_the_instance():
    assert heard(announcement(), announcement(ttl=0)) == []


def test_the_query_asks_for_the_service_with_a_unicast_response():
    query = mdns.build_query(0x1234)
    assert struct.unpack_from("!6H", query) == (0x1234, 0, 1, 0, 0, 0)
    assert read_name(query, 12) == (("_partagpu", "_tcp", "local"), len(query) - 4)
    assert struct.unpack_from("!HH", query, len(query) - 4) == (12, 0x8001)


def test_browse_is_bounded_in_time():
    import time

    started = time.monotonic()
    found = mdns.browse(0.3)
    assert time.monotonic() - started < 2 and isinstance(found, list)
