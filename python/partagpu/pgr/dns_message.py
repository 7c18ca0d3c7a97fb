# SPDX-License-Identifier: GPL-3.0-or-later
"""A strict, bounded reader of the DNS messages mDNS carries (RFC 1035 §4, RFC 6762), for
the one-shot browse of :mod:`partagpu.pgr.mdns` (PGR/1 §10).

Only what a browse needs is decoded: PTR, SRV, TXT and A records; every other type is kept
as raw bytes and ignored by the caller. Every packet is untrusted input (§10): each length is
checked against the packet, a compression pointer must point strictly backwards (so a name
cannot loop), and a name is at most 255 bytes. A packet that breaks a rule raises
:class:`MalformedPacket` as a whole; the caller drops it and keeps listening.
"""

from __future__ import annotations

import dataclasses
import struct

MAX_PACKET_BYTES = 9000  # RFC 6762 §17: larger mDNS messages are not expected
MAX_NAME_BYTES = 255
MAX_RECORDS = 512  # far above what one honest response holds (a few per instance)

TYPE_A = 1
TYPE_PTR = 12
TYPE_TXT = 16
TYPE_SRV = 33
CLASS_IN = 1
_CACHE_FLUSH = 0x8000  # the top bit of a record's class in mDNS (RFC 6762 §10.2)
_FLAG_RESPONSE = 0x8000
_OPCODE_RCODE = 0x780F

Name = tuple[str, ...]  # labels, lowercased: DNS names compare without case


class MalformedPacket(ValueError):
    """The packet breaks a rule of DNS or of these bounds; drop it whole."""


@dataclasses.dataclass(frozen=True)
class Service:
    """SRV data: where an instance listens."""

    target: Name
    port: int


@dataclasses.dataclass(frozen=True)
class Record:
    """One resource record. ``data`` is a :class:`Name` (PTR), a :class:`Service` (SRV),
    a tuple of byte strings (TXT), a dotted IPv4 address (A) or the raw bytes (others)."""

    name: Name
    type: int
    ttl: int
    data: object


def read_name(packet: bytes, offset: int) -> tuple[Name, int]:
    """The name at ``offset`` and the offset just after it (after the first pointer, when
    the name is compressed)."""
    labels: list[str] = []
    total = 1  # the root label's length byte
    position, end = offset, None
    while True:
        if position >= len(packet):
            raise MalformedPacket("a name runs past the end of the packet")
        size = packet[position]
        if size & 0xC0 == 0xC0:
            if position + 1 >= len(packet):
                raise MalformedPacket("a compression pointer is cut")
            target = ((size & 0x3F) << 8) | packet[position + 1]
            if target >= position:  # strictly backwards: every jump makes progress
                raise MalformedPacket("a compression pointer does not point backwards")
            if end is None:
                end = position + 2
            position = target
            continue
        if size & 0xC0:
            raise MalformedPacket("an unknown label type")
        if size == 0:
            return tuple(labels), position + 1 if end is None else end
        raw = packet[position + 1:position + 1 + size]
        total += size + 1
        if len(raw) != size or total > MAX_NAME_BYTES:
            raise MalformedPacket("a label is cut or the name is too long")
        try:
            labels.append(raw.decode("utf-8").lower())
        except UnicodeDecodeError:
            raise MalformedPacket("a label is not UTF-8") from None
        position += 1 + size


def _txt_strings(rdata: bytes) -> tuple[bytes, ...]:
    strings, position = [], 0
    while position < len(rdata):
        size = rdata[position]
        chunk = rdata[position + 1:position + 1 + size]
        if len(chunk) != size:
            raise MalformedPacket("a TXT string is cut")
        strings.append(chunk)
        position += 1 + size
    return tuple(strings)


def _record_data(packet: bytes, kind: int, start: int, end: int) -> object:
    if kind == TYPE_A:
        if end - start != 4:
            raise MalformedPacket("an A record is not 4 bytes")
        return ".".join(str(b) for b in packet[start:end])
    if kind == TYPE_PTR:
        target, after = read_name(packet, start)
        if after != end:
            raise MalformedPacket("a PTR name does not fill its record")
        return target
    if kind == TYPE_SRV:
        if end - start < 7:
            raise MalformedPacket("an SRV record is too short")
        (port,) = struct.unpack_from("!H", packet, start + 4)
        target, after = read_name(packet, start + 6)
        if after != end:
            raise MalformedPacket("an SRV target does not fill its record")
        return Service(target, port)
    if kind == TYPE_TXT:
        return _txt_strings(packet[start:end])
    return bytes(packet[start:end])


def parse_response(packet: bytes) -> list[Record]:
    """The records (answers, authorities, additionals) of an mDNS response of class IN.

    Queries (QR bit clear), other opcodes and error codes give no records (RFC 6762 §18).
    """
    if len(packet) > MAX_PACKET_BYTES:
        raise MalformedPacket("the packet is larger than an mDNS message may be")
    if len(packet) < 12:
        raise MalformedPacket("the packet is shorter than a DNS header")
    _, flags, questions, answers, authorities, additionals = struct.unpack_from("!6H", packet)
    if not flags & _FLAG_RESPONSE or flags & _OPCODE_RCODE:
        return []
    count = answers + authorities + additionals
    if count > MAX_RECORDS:
        raise MalformedPacket("the packet announces too many records")
    position = 12
    for _ in range(questions):
        _, position = read_name(packet, position)
        position += 4
    records = []
    for _ in range(count):
        name, position = read_name(packet, position)
        if position + 10 > len(packet):
            raise MalformedPacket("a record header is cut")
        kind, klass, ttl, length = struct.unpack_from("!HHIH", packet, position)
        start, end = position + 10, position + 10 + length
        if end > len(packet):
            raise MalformedPacket("a record's data runs past the end of the packet")
        data = _record_data(packet, kind, start, end)
        if klass & ~_CACHE_FLUSH == CLASS_IN:
            records.append(Record(name, kind, ttl, data))
        position = end
    if position > len(packet):
        raise MalformedPacket("the questions run past the end of the packet")
    return records
