# SPDX-License-Identifier: GPL-3.0-or-later
"""A one-shot mDNS browse for PGR/1 rooms (PGR/1 §10), with the standard library only.

:func:`browse` sends one PTR query for ``_partagpu._tcp.local.`` to 224.0.0.251:5353 from
an ephemeral port, so responders answer it by unicast (RFC 6762 §6.7, as mdns-sd in
partagpud does); it also listens on the group when port 5353 can be shared, for responders
that answer by multicast. After ~1.5 s it returns the rooms announced, as
:class:`Announcement` objects.

Everything heard is an untrusted hint (§10): malformed packets are dropped whole
(:mod:`partagpu.pgr.dns_message`), at most 256 instances and 4 addresses each are kept, a
TXT that is not a PGR/1 room (``pv=1``, ``rid`` of 32 hex digits, decimal ``ep``, a label of
at most 63 bytes without control characters) is ignored, and only IPv4 unicast addresses
outside loopback and link-local are used. The PAKE decides who is a member, not mDNS.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import secrets
import select
import socket
import struct
import time
import unicodedata
from typing import Any

from partagpu.pgr.dns_message import (
    CLASS_IN, MAX_PACKET_BYTES, TYPE_A, TYPE_PTR, TYPE_SRV, TYPE_TXT, MalformedPacket, Name,
    Record, Service, parse_response,
)

SERVICE_TYPE = "_partagpu._tcp.local."
SERVICE: Name = ("_partagpu", "_tcp", "local")
MDNS_GROUP = "224.0.0.251"
MDNS_PORT = 5353
BROWSE_SECONDS = 1.5
MAX_INSTANCES = 256
MAX_ADDRESSES = 4
MAX_HOSTS = 512
MAX_LABEL_BYTES = 63
_QU_BIT = 0x8000  # "unicast response requested" (RFC 6762 §5.4)
_ROOM_ID = re.compile(r"[0-9a-fA-F]{32}")
_EPOCH = re.compile(r"[0-9]{1,10}")
# Interfaces partagpud skips too (§10, ``discovery/scope.rs``): they are not the LAN.
_VIRTUAL_INTERFACES = ("lo", "docker", "br-", "virbr", "veth", "vnet", "vboxnet", "vmnet",
                       "lxcbr", "lxdbr", "podman", "cni", "flannel", "cali", "kube", "tun", "tap",
                       "wg", "tailscale", "zt", "ppp", "nordlynx", "proton")
_SIOCGIFADDR = 0x8915


@dataclasses.dataclass(frozen=True)
class Announcement:
    """One machine announcing a room: its mDNS instance name, IPv4 addresses and PGR/1
    port, and the room's public facts (id as 32 lowercase hex, epoch, label or "")."""

    instance: str
    addresses: tuple[str, ...]
    port: int
    room_id: str
    epoch: int
    label: str


def build_query(query_id: int) -> bytes:
    """One PTR question for :data:`SERVICE_TYPE`, asking for a unicast response."""
    name = b"".join(bytes([len(label)]) + label.encode("ascii") for label in SERVICE) + b"\0"
    return struct.pack("!6H", query_id & 0xFFFF, 0, 1, 0, 0, 0) + name + struct.pack(
        "!HH", TYPE_PTR, CLASS_IN | _QU_BIT)


def usable_address(text: str) -> bool:
    """An IPv4 unicast address a member may be dialled at (not loopback, link-local,
    multicast, unspecified or reserved)."""
    address = ipaddress.IPv4Address(text)
    return not (address.is_loopback or address.is_link_local or address.is_multicast
                or address.is_unspecified or address.is_reserved)


def room_of_txt(strings: tuple[bytes, ...]) -> tuple[str, int, str] | None:
    """``(room_id, epoch, label)`` of a PGR/1 TXT, or None if it is not one (§10). The first
    of repeated keys counts (RFC 6763 §6.4); a missing ``ep`` is 0, as partagpud reads it."""
    values: dict[bytes, bytes] = {}
    for entry in strings:
        key, equals, value = entry.partition(b"=")
        if equals and key:
            values.setdefault(key.lower(), value)
    try:
        room_id = values.get(b"rid", b"").decode("ascii")
        epoch = values.get(b"ep", b"0").decode("ascii")
        label = values.get(b"label", b"").decode("utf-8")
    except UnicodeDecodeError:
        return None
    if (values.get(b"pv") != b"1" or not _ROOM_ID.fullmatch(room_id)
            or not _EPOCH.fullmatch(epoch) or int(epoch) > 0xFFFFFFFF
            or len(label.encode("utf-8")) > MAX_LABEL_BYTES
            or any(unicodedata.category(c) == "Cc" for c in label)):
        return None
    return room_id.lower(), int(epoch), label


class AnnouncementTable:
    """What a browse heard, bounded; records of one instance may come in any packet."""

    def __init__(self) -> None:
        self._instances: dict[Name, None] = {}  # insertion-ordered set
        self._services: dict[Name, Service] = {}
        self._texts: dict[Name, tuple[bytes, ...]] = {}
        self._hosts: dict[Name, list[str]] = {}

    def add_packet(self, packet: bytes) -> bool:
        """Takes the records of one packet; False (and nothing taken) if it is malformed."""
        try:
            records = parse_response(packet)
        except MalformedPacket:
            return False
        for record in records:
            self._take(record)
        return True

    def _take(self, record: Record) -> None:
        goodbye = record.ttl == 0  # RFC 6762 §10.1: the record is withdrawn
        if record.type == TYPE_PTR and record.name == SERVICE:
            target = record.data
            if isinstance(target, tuple) and len(target) == 4 and target[1:] == SERVICE:
                _keep(self._instances, target, None, goodbye, MAX_INSTANCES)
        elif (record.type in (TYPE_SRV, TYPE_TXT) and len(record.name) == 4
              and record.name[1:] == SERVICE):
            store: dict[Name, Any] = self._services if record.type == TYPE_SRV else self._texts
            _keep(store, record.name, record.data, goodbye, MAX_INSTANCES)
        elif record.type == TYPE_A and isinstance(record.data, str):
            addresses = self._hosts.get(record.name)
            if goodbye:
                if addresses and record.data in addresses:
                    addresses.remove(record.data)
            elif usable_address(record.data):
                if addresses is None and len(self._hosts) < MAX_HOSTS:
                    addresses = self._hosts[record.name] = []
                if (addresses is not None and record.data not in addresses
                        and len(addresses) < MAX_ADDRESSES):
                    addresses.append(record.data)

    def announcements(self) -> list[Announcement]:
        """The instances with a service, a PGR/1 TXT and at least one address, in the order
        they were first heard."""
        found = []
        for name in self._instances:
            service, text = self._services.get(name), self._texts.get(name)
            room = room_of_txt(text) if text is not None else None
            addresses = tuple(self._hosts.get(service.target, ())) if service else ()
            if service is None or room is None or not addresses or service.port == 0:
                continue
            found.append(Announcement(name[0], addresses, service.port, *room))
        return found


def _keep(store: dict[Name, Any], key: Name, value: object, goodbye: bool, limit: int) -> None:
    if goodbye:
        store.pop(key, None)
    elif key in store or len(store) < limit:
        store[key] = value


def interface_addresses() -> list[str]:
    """The first IPv4 address of each LAN interface (Linux; elsewhere none, and queries go
    out of the default interface)."""
    try:
        import fcntl
    except ImportError:
        return []
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            if name.startswith(_VIRTUAL_INTERFACES):
                continue
            try:
                reply = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR,
                                    struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            address = socket.inet_ntoa(reply[20:24])
            if usable_address(address):
                found.append(address)
    return found


def _group_listener(interfaces: list[str]) -> socket.socket | None:
    """A socket on the mDNS group, if port 5353 can be shared here (else None)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "SO_REUSEPORT"):
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind(("", MDNS_PORT))
        for interface in interfaces or ["0.0.0.0"]:
            membership = socket.inet_aton(MDNS_GROUP) + socket.inet_aton(interface)
            try:
                listener.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
            except OSError:
                pass  # this interface has no multicast: the others still hear the group
    except OSError:
        listener.close()
        return None
    return listener


def _send_query(sock: socket.socket, query: bytes, interfaces: list[str]) -> bool:
    sent = False
    choices: list[str | None] = list(interfaces) or [None]  # None: the default interface
    for interface in choices:
        try:
            if interface is not None:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF,
                                socket.inet_aton(interface))
            sock.sendto(query, (MDNS_GROUP, MDNS_PORT))
            sent = True
        except OSError:
            continue
    return sent


def browse(seconds: float = BROWSE_SECONDS) -> list[Announcement]:
    """The PGR/1 rooms announced on the LAN within ``seconds`` (the query is sent twice, in
    case one is lost); an empty list when nothing answers or there is no network."""
    interfaces = interface_addresses()
    table = AnnouncementTable()
    query = build_query(secrets.randbelow(1 << 16))
    asker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sockets = [asker]
    try:
        asker.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
        asker.bind(("", 0))
        if (listener := _group_listener(interfaces)) is not None:
            sockets.append(listener)
        if not _send_query(asker, query, interfaces):
            return []
        now = time.monotonic()
        deadline, again = now + seconds, now + seconds / 3  # the query goes twice
        asked_again = False
        while (left := deadline - time.monotonic()) > 0:
            if not asked_again and time.monotonic() >= again:
                _send_query(asker, query, interfaces)
                asked_again = True
            readable, _, _ = select.select(sockets, [], [], min(left, 0.1))
            for sock in readable:
                try:
                    packet, _ = sock.recvfrom(MAX_PACKET_BYTES + 1)  # one more: oversize shows
                except OSError:
                    continue
                table.add_packet(packet)
    finally:
        for sock in sockets:
            sock.close()
    return table.announcements()
