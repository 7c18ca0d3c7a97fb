# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the forged-announcement generator (tests/lab/mdns_forge.py): what it encodes
reads back through a small independent DNS parser, packets stay under the size bound, and the
lab-only bounds are refused. No root, no network: nothing here sends a packet.
"""

import random
import socket
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mdns_forge  # noqa: E402

ROOM_ID = "00112233445566778899aabbccddeeff"
TYPE_NAMES = {1: "A", 12: "PTR", 16: "TXT", 33: "SRV"}


def read_name(packet: bytes, offset: int) -> tuple[str, int]:
    """Reads a possibly compressed name; returns it and the offset just after it."""
    labels, end, jumps = [], None, 0
    while True:
        length = packet[offset]
        if length & 0xC0 == 0xC0:
            jumps += 1
            assert jumps < 64, "compression loop"
            if end is None:
                end = offset + 2
            offset = struct.unpack_from("!H", packet, offset)[0] & 0x3FFF
            continue
        offset += 1
        if length == 0:
            return ".".join(labels) + ".", end if end is not None else offset
        labels.append(packet[offset:offset + length].decode())
        offset += length


def parse_packet(packet: bytes) -> tuple[dict, list[dict]]:
    """The header and every record of an mDNS message without questions (a response)."""
    ident, flags, questions, answers, authorities, additionals = struct.unpack_from("!6H", packet)
    header = {"id": ident, "flags": flags, "questions": questions, "answers": answers,
              "authorities": authorities, "additionals": additionals}
    assert questions == 0
    records, offset = [], 12
    for _ in range(answers + authorities + additionals):
        name, offset = read_name(packet, offset)
        rtype, rclass, ttl, length = struct.unpack_from("!HHIH", packet, offset)
        offset += 10
        start, end = offset, offset + length
        record = {"name": name, "type": TYPE_NAMES.get(rtype, rtype), "class": rclass & 0x7FFF,
                  "cache_flush": bool(rclass & 0x8000), "ttl": ttl}
        if rtype == 12:
            record["target"], after = read_name(packet, start)
            assert after == end
        elif rtype == 33:
            record["priority"], record["weight"], record["port"] = struct.unpack_from(
                "!3H", packet, start)
            record["target"], after = read_name(packet, start + 6)
            assert after == end
        elif rtype == 16:
            strings, at = [], start
            while at < end:
                strings.append(packet[at + 1:at + 1 + packet[at]].decode())
                at += 1 + packet[at]
            assert at == end
            record["strings"] = strings
        elif rtype == 1:
            assert length == 4
            record["address"] = socket.inet_ntoa(packet[start:end])
        records.append(record)
        offset = end
    assert offset == len(packet), "trailing bytes"
    return header, records


def forged(count, label="Forged", room_id=ROOM_ID, seed=7, addresses=("10.98.0.100",)):
    return mdns_forge.forge_instances(count, list(addresses), 7655, room_id, 3, label,
                                      random.Random(seed))


def test_announcement_round_trips_through_the_parser():
    instances = forged(3, addresses=("10.98.0.100", "10.98.0.101"))
    header, records = parse_packet(mdns_forge.build_announcement(instances, transaction_id=0))
    assert header == {"id": 0, "flags": 0x8400, "questions": 0, "answers": 12,
                      "authorities": 0, "additionals": 0}
    for index, instance in enumerate(instances):
        ptr, srv, txt, a = records[4 * index:4 * index + 4]
        assert instance.fullname.endswith("._partagpu._tcp.local.")
        assert len(instance.fullname.split(".")[0]) == 16
        assert ptr == {"name": "_partagpu._tcp.local.", "type": "PTR", "class": 1,
                       "cache_flush": False, "ttl": 4500, "target": instance.fullname}
        assert srv == {"name": instance.fullname, "type": "SRV", "class": 1,
                       "cache_flush": True, "ttl": 120, "priority": 0, "weight": 0,
                       "port": 7655, "target": instance.hostname}
        assert txt == {"name": instance.fullname, "type": "TXT", "class": 1,
                       "cache_flush": True, "ttl": 120,
                       "strings": ["pv=1", f"rid={ROOM_ID}", "ep=3", "label=Forged"]}
        assert a == {"name": instance.hostname, "type": "A", "class": 1, "cache_flush": True,
                     "ttl": 120, "address": ("10.98.0.100", "10.98.0.101")[index % 2]}


def test_names_are_compressed_and_the_label_is_optional():
    packet = mdns_forge.build_announcement(forged(4, label=None))
    assert packet.count(b"\x09_partagpu\x04_tcp\x05local\x00") == 1
    _, records = parse_packet(packet)
    assert [r["strings"] for r in records if r["type"] == "TXT"] == [
        ["pv=1", f"rid={ROOM_ID}", "ep=3"]] * 4


def test_random_room_ids_differ_per_instance():
    rids = {instance.txt[1] for instance in forged(50, room_id=None)}
    assert len(rids) == 50 and all(len(rid) == len("rid=") + 32 for rid in rids)


@pytest.mark.parametrize("label", [None, "Forged", "x" * mdns_forge.MAX_LABEL_BYTES])
def test_packets_stay_under_the_bound_and_keep_every_instance_in_order(label):
    instances = forged(500, label=label, room_id=None)
    packets = mdns_forge.pack_into_packets(instances)
    assert all(len(packet) <= mdns_forge.MAX_PACKET_BYTES for packet, _ in packets)
    assert sum(count for _, count in packets) == 500
    assert len(packets) < 500, "several instances per packet"
    names = [record["target"] for packet, _ in packets
             for record in parse_packet(packet)[1] if record["type"] == "PTR"]
    assert names == [instance.fullname for instance in instances]


def test_a_smaller_limit_makes_more_packets():
    instances = forged(40)
    small = mdns_forge.pack_into_packets(instances, limit=600)
    assert len(small) > len(mdns_forge.pack_into_packets(instances))
    assert all(len(packet) <= 600 for packet, _ in small)
    with pytest.raises(mdns_forge.BoundsError):
        mdns_forge.pack_into_packets(instances, limit=100)


def test_address_range_expands_inside_the_lab():
    assert mdns_forge.lab_address_range("10.98.0.100-10.98.0.102") == [
        "10.98.0.100", "10.98.0.101", "10.98.0.102"]


BASE = ["--source", "10.98.0.4", "--count", "10", "--seconds", "1"]


def with_option(option, value):
    args = list(BASE)
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    return args


@pytest.mark.parametrize("option,value,message", [
    ("--count", "100001", "--count"),
    ("--count", "0", "--count"),
    ("--seconds", "120.5", "--seconds"),
    ("--seconds", "0", "--seconds"),
    ("--rate", "100000", "--rate"),
    ("--source", "192.168.1.4", "outside the virtual lab"),
    ("--source", "10.98.1.4", "outside the virtual lab"),
    ("--source", "lab", "not an IPv4 address"),
    ("--address-range", "10.98.0.250-10.98.1.5", "outside the virtual lab"),
    ("--address-range", "8.8.8.8-8.8.8.9", "outside the virtual lab"),
    ("--address-range", "10.98.0.20-10.98.0.10", "comes after"),
    ("--address-range", "10.98.0.20", "FIRST-LAST"),
    ("--room-id", "0011", "--room-id"),
    ("--label", "x" * (mdns_forge.MAX_LABEL_BYTES + 1), "--label"),
    ("--port", "0", "--port"),
])
def test_out_of_bounds_requests_are_refused_before_sending(option, value, message, capsys,
                                                          monkeypatch):
    def no_socket(*_args, **_kwargs):
        raise AssertionError("a refused request must not open a socket")

    monkeypatch.setattr(mdns_forge, "open_sender", no_socket)
    assert mdns_forge.main(with_option(option, value)) == 2
    assert message in capsys.readouterr().err


def test_the_largest_allowed_request_passes_the_bounds():
    largest = ["--source", "10.98.0.254", "--count", "100000", "--seconds", "120",
               "--rate", "5000", "--address-range", "10.98.0.0-10.98.0.255"]
    mdns_forge.check_bounds(mdns_forge.parse_args(largest))
    assert len(mdns_forge.lab_address_range("10.98.0.0-10.98.0.255")) == 256
