#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Forged PartaGPU mDNS announcements, for flood tests in the virtual lab.

Sends unsolicited mDNS responses (QR=1, AA=1) to 224.0.0.251:5353 announcing made-up
instances of `_partagpu._tcp.local.` (PTR, SRV, TXT `pv=1 rid ep [label]`, A), several per
packet, to see how partagpud and mdns-sd cope with many rooms and machines that do not exist.
It is bounded on purpose: at most MAX_COUNT instances, MAX_SECONDS seconds and MAX_RATE
packets per second, and every address (source and announced) must lie in the virtual lab's
subnet 10.98.0.0/24: a lab tool, never to be pointed at a real network. Standard library
only; `build_announcement` is a pure function (see test_mdns_forge_unit.py).
"""

import argparse
import ipaddress
import json
import random
import socket
import struct
import sys
import time
from dataclasses import dataclass

SERVICE_TYPE = "_partagpu._tcp.local."
MDNS_GROUP = ("224.0.0.251", 5353)
LAB_SUBNET = ipaddress.IPv4Network("10.98.0.0/24")
MAX_COUNT = 100_000
MAX_SECONDS = 120.0
MAX_RATE = 5_000.0
MAX_PACKET_BYTES = 1400
MAX_LABEL_BYTES = 200  # one TXT string holds 255 bytes, "label=" included

TYPE_A, TYPE_PTR, TYPE_TXT, TYPE_SRV = 1, 12, 16, 33
CLASS_IN, CACHE_FLUSH = 1, 0x8000
FLAGS_AUTHORITATIVE_RESPONSE = 0x8400  # QR=1, AA=1
TTL_HOST_RECORDS = 120  # SRV, TXT, A (RFC 6762 §10)
TTL_SHARED_RECORDS = 4500  # PTR, like real responders


class BoundsError(ValueError):
    """A request outside what this lab tool is willing to send."""


@dataclass(frozen=True)
class ForgedInstance:
    """One made-up machine announcing a room."""

    fullname: str  # <16 hex>._partagpu._tcp.local.
    hostname: str  # <16 hex>.local.
    port: int
    address: str  # dotted IPv4
    txt: tuple[str, ...]


class AnnouncementWriter:
    """Builds one unsolicited response, all records in the answers, names compressed with
    pointers (RFC 1035 §4.1.4); an instance that would overflow the packet can be taken back."""

    def __init__(self) -> None:
        self.data = bytearray(12)  # room for the header
        self.suffix_offsets: dict[str, int] = {}
        self.instances = 0

    def name(self, name: str) -> None:
        labels = [label for label in name.rstrip(".").split(".") if label]
        for index in range(len(labels)):
            suffix = ".".join(labels[index:]).lower()
            if suffix in self.suffix_offsets:
                self.data += struct.pack("!H", 0xC000 | self.suffix_offsets[suffix])
                return
            if len(self.data) < 0x3FFF:
                self.suffix_offsets[suffix] = len(self.data)
            encoded = labels[index].encode()
            if not 0 < len(encoded) <= 63:
                raise ValueError(f"bad DNS label {labels[index]!r}")
            self.data += bytes([len(encoded)]) + encoded
        self.data += b"\x00"

    def record(self, name: str, rtype: int, ttl: int, cache_flush: bool,
               *rdata: bytes | str) -> None:
        """Writes one record; its RDATA parts are bytes as they are, or names to compress."""
        self.name(name)
        self.data += struct.pack("!HHIH", rtype, CLASS_IN | (CACHE_FLUSH * cache_flush), ttl, 0)
        length_at = len(self.data) - 2
        for part in rdata:
            self.name(part) if isinstance(part, str) else self.data.extend(part)
        struct.pack_into("!H", self.data, length_at, len(self.data) - length_at - 2)

    def add(self, forged: ForgedInstance) -> None:
        srv_fixed = struct.pack("!3H", 0, 0, forged.port)  # priority, weight, port
        txt = b"".join(bytes([len(text.encode())]) + text.encode() for text in forged.txt)
        self.record(SERVICE_TYPE, TYPE_PTR, TTL_SHARED_RECORDS, False, forged.fullname)
        self.record(forged.fullname, TYPE_SRV, TTL_HOST_RECORDS, True, srv_fixed, forged.hostname)
        self.record(forged.fullname, TYPE_TXT, TTL_HOST_RECORDS, True, txt)
        address = socket.inet_aton(forged.address)
        self.record(forged.hostname, TYPE_A, TTL_HOST_RECORDS, True, address)
        self.instances += 1

    def add_if_it_fits(self, forged: ForgedInstance, limit: int) -> bool:
        size, offsets = len(self.data), dict(self.suffix_offsets)
        self.add(forged)
        if len(self.data) <= limit:
            return True
        del self.data[size:]
        self.suffix_offsets, self.instances = offsets, self.instances - 1
        return False

    def packet(self, transaction_id: int = 0) -> bytes:
        answers = 4 * self.instances  # PTR, SRV, TXT, A each; no questions, no additionals
        header = struct.pack("!6H", transaction_id, FLAGS_AUTHORITATIVE_RESPONSE, 0, answers, 0, 0)
        return header + bytes(self.data[12:])


def build_announcement(instances: list[ForgedInstance], transaction_id: int = 0) -> bytes:
    """Returns one unsolicited mDNS response announcing `instances` (no size check)."""
    writer = AnnouncementWriter()
    for forged in instances:
        writer.add(forged)
    return writer.packet(transaction_id)


def pack_into_packets(instances: list[ForgedInstance],
                      limit: int = MAX_PACKET_BYTES) -> list[tuple[bytes, int]]:
    """Splits `instances`, in order, into announcements of at most `limit` bytes each;
    returns (packet, how many instances it announces) pairs."""
    packets, writer = [], AnnouncementWriter()
    for forged in instances:
        if writer.add_if_it_fits(forged, limit):
            continue
        if writer.instances:
            packets.append((writer.packet(), writer.instances))
            writer = AnnouncementWriter()
        if not writer.add_if_it_fits(forged, limit):
            raise BoundsError(f"one instance alone does not fit in {limit} bytes")
    if writer.instances:
        packets.append((writer.packet(), writer.instances))
    return packets


def lab_address(text: str, what: str) -> ipaddress.IPv4Address:
    try:
        address = ipaddress.IPv4Address(text)
    except ValueError:
        raise BoundsError(f"{what}: {text!r} is not an IPv4 address") from None
    if address not in LAB_SUBNET:
        raise BoundsError(f"{what}: {address} is outside the virtual lab's {LAB_SUBNET}; "
                          "this tool is for the lab only")
    return address


def lab_address_range(text: str) -> list[str]:
    first, sep, last = text.partition("-")
    if not sep:
        raise BoundsError(f"--address-range: {text!r} is not FIRST-LAST")
    low, high = (lab_address(end.strip(), "--address-range") for end in (first, last))
    if high < low:
        raise BoundsError(f"--address-range: {low} comes after {high}")
    return [str(ipaddress.IPv4Address(n)) for n in range(int(low), int(high) + 1)]


def check_bounds(args: argparse.Namespace) -> None:
    if not 1 <= args.count <= MAX_COUNT:
        raise BoundsError(f"--count must be 1..{MAX_COUNT}, not {args.count}")
    if not 0 < args.seconds <= MAX_SECONDS:
        raise BoundsError(f"--seconds must be in (0, {MAX_SECONDS:g}], not {args.seconds:g}")
    if args.rate is not None and not 0 < args.rate <= MAX_RATE:
        raise BoundsError(f"--rate must be in (0, {MAX_RATE:g}] packets/s, not {args.rate:g}")
    if args.label is not None and len(args.label.encode()) > MAX_LABEL_BYTES:
        raise BoundsError(f"--label is over {MAX_LABEL_BYTES} bytes")
    if args.room_id is not None and not (len(args.room_id) == 32
                                         and set(args.room_id) <= set("0123456789abcdef")):
        raise BoundsError("--room-id must be 32 lowercase hex digits")
    if not 0 < args.port < 65536 or not 0 <= args.epoch < 2**32:
        raise BoundsError("--port must be 1..65535 and --epoch 0..2^32-1")


def room_txt(room_id: str, epoch: int, label: str | None) -> tuple[str, ...]:
    return ("pv=1", f"rid={room_id}", f"ep={epoch}") + ((f"label={label}",) if label else ())


def forge_instances(count: int, addresses: list[str], port: int, room_id: str | None,
                    epoch: int, label: str | None, rng: random.Random) -> list[ForgedInstance]:
    """`count` instances, each with its own names, the next address of the range in turn, and
    `room_id` or a random room id."""
    return [ForgedInstance(fullname=f"{rng.getrandbits(64):016x}.{SERVICE_TYPE}",
                           hostname=f"{rng.getrandbits(64):016x}.local.", port=port,
                           address=addresses[index % len(addresses)],
                           txt=room_txt(room_id or f"{rng.getrandbits(128):032x}", epoch, label))
            for index in range(count)]


def open_sender(source: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # partagpud holds 5353 too
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(source))
    try:  # responses come from port 5353 (RFC 6762 §6); an ephemeral port still works
        sock.bind((source, MDNS_GROUP[1]))
    except OSError as error:
        print(f"mdns_forge: cannot bind {source}:5353 ({error}), using any port", file=sys.stderr)
        sock.bind((source, 0))
    return sock


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="this machine's lab address")
    parser.add_argument("--count", type=int, required=True, help="instances to announce")
    parser.add_argument("--seconds", type=float, required=True, help="spread them over this")
    parser.add_argument("--room-id", help="32 hex digits (default: random per instance)")
    parser.add_argument("--epoch", type=int, default=1)
    parser.add_argument("--label")
    parser.add_argument("--address-range", default="10.98.0.100-10.98.0.200")
    parser.add_argument("--port", type=int, default=7655)
    parser.add_argument("--rate", type=float, help="packets per second (default: count/seconds)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_bounds(args)
        source = str(lab_address(args.source, "--source"))  # also where IP_MULTICAST_IF points
        addresses = lab_address_range(args.address_range)
        instances = forge_instances(args.count, addresses, args.port, args.room_id,
                                    args.epoch, args.label, random.Random())
        packets = pack_into_packets(instances)
    except BoundsError as error:
        print(f"mdns_forge: {error}", file=sys.stderr)
        return 2
    interval = 1.0 / args.rate if args.rate else args.seconds / len(packets)
    sent_instances = sent_packets = 0
    with open_sender(source) as sock:
        start = time.monotonic()
        for packet, instances_in_packet in packets:
            due = start + sent_packets * interval
            if due - start >= args.seconds:
                break  # the time bound wins over the count
            time.sleep(max(0.0, due - time.monotonic()))
            sock.sendto(packet, MDNS_GROUP)
            sent_packets, sent_instances = sent_packets + 1, sent_instances + instances_in_packet
        elapsed = round(time.monotonic() - start, 3)
    summary = {"sent_instances": sent_instances, "packets": sent_packets, "seconds": elapsed}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
